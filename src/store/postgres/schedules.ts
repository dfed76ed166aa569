/** Schedules on PostgreSQL (see ../schedules.ts), in the store's schema, on its pool. */
import type { Schedule, ScheduleDefinition } from '../../core/schedule.js';
import * as rules from '../rules/schedules.js';
import type { ClaimTicksParams, ClaimTicksResult, ScheduleStore } from '../schedules.js';
import { beginOn, run, withClient } from './connection.js';
import { checkNewTask, decodePostgres } from './encode.js';
import { quoteIdent } from './options.js';
import type { PostgresStore } from './store.js';

const NOW = 'clock_timestamp()';
const fromRow = (row: Record<string, unknown>): Schedule => rules.scheduleFromRow(row, decodePostgres.time);
const enabledParam = (enabled: boolean | null): number | null => (enabled === null ? null : Number(enabled));

export class PostgresScheduleStore implements ScheduleStore {
  private readonly table: string;

  constructor(private readonly store: PostgresStore) {
    this.table = `${quoteIdent(store.schema)}.${rules.SCHEDULE_TABLE}`;
  }

  async saveSchedule({ schedule }: { schedule: ScheduleDefinition }): Promise<Schedule> {
    const enabled = 'COALESCE($10::smallint, s.enabled)';
    const result = await run(
      this.store.pool,
      'saving a schedule',
      `INSERT INTO ${this.table} AS s (${rules.SCHEDULE_INSERT_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10::smallint, 1), 1, ${NOW}, ${NOW}, ${NOW})
       ON CONFLICT (schedule_key) DO UPDATE SET ${rules.upsertAssignments((column) => `EXCLUDED.${column}`, enabled, NOW, 's.')}
       RETURNING ${rules.SCHEDULE_COLUMNS}`,
      [...rules.definitionValues(schedule), enabledParam(schedule.enabled)],
    );
    return fromRow(result.rows[0]!);
  }

  async getSchedule({ key }: { key: string }): Promise<Schedule | null> {
    const result = await run(this.store.pool, 'reading a schedule', `SELECT ${rules.SCHEDULE_COLUMNS} FROM ${this.table} WHERE schedule_key = $1`, [key]);
    return result.rows[0] ? fromRow(result.rows[0]) : null;
  }

  async listSchedules(): Promise<Schedule[]> {
    const result = await run(this.store.pool, 'listing schedules', `SELECT ${rules.SCHEDULE_COLUMNS} FROM ${this.table} ORDER BY schedule_key`);
    return result.rows.map(fromRow);
  }

  async setScheduleEnabled({ key, enabled }: { key: string; enabled: boolean }): Promise<Schedule | null> {
    const result = await run(
      this.store.pool,
      'enabling or disabling a schedule',
      `UPDATE ${this.table} SET ${rules.enableAssignments('$2::smallint', NOW)} WHERE schedule_key = $1 RETURNING ${rules.SCHEDULE_COLUMNS}`,
      [key, Number(enabled)],
    );
    return result.rows[0] ? fromRow(result.rows[0]) : null;
  }

  async deleteSchedule({ key }: { key: string }): Promise<boolean> {
    const result = await run(this.store.pool, 'deleting a schedule', `DELETE FROM ${this.table} WHERE schedule_key = $1`, [key]);
    return result.rowCount === 1;
  }

  /** One transaction on one pooled client: the insert joins it (its NOTIFY is sent on commit). */
  async claimTicks(params: ClaimTicksParams): Promise<ClaimTicksResult> {
    // Checked before the tick moves: the last task's id is written with it.
    params.tasks.forEach(checkNewTask);
    return withClient(this.store.pool, 'claiming schedule ticks', async (client) => {
      try {
        await client.query(beginOn(this.store.pool));
        const moved = await run(
          client,
          'claiming schedule ticks',
          rules.claimTickSql(this.table, (i) => `$${i}`, NOW),
          [params.cursor, params.tasks.at(-1)?.id ?? null, params.key, params.revision],
        );
        if (moved.rowCount !== 1) {
          await client.query('ROLLBACK');
          return { claimed: false, tasks: [] };
        }
        const tasks = params.tasks.length > 0 ? await this.store.insertTasks({ tasks: params.tasks, transaction: client }) : [];
        await client.query('COMMIT');
        return { claimed: true, tasks };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }
}
