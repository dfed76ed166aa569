/**
 * Schedules on SQLite (see ../schedules.ts); times are the store's UTC text.
 * A tick claim runs under BEGIN IMMEDIATE, SQLite's write lock, like every
 * write here: the compare-and-set and the insert see one state. Every
 * statement waits for another process's lock through the store's turns.
 */
import type { Schedule, ScheduleDefinition } from '../../core/schedule.js';
import * as rules from '../rules/schedules.js';
import type { ClaimTicksParams, ClaimTicksResult, ScheduleStore } from '../schedules.js';
import { statement } from './connection.js';
import { fromSqliteTime, toSqliteTime } from './encode.js';
import { insertTasks } from './insert.js';
import type { SqliteStore } from './store.js';

const enabledParam = (enabled: boolean | null): number | null => (enabled === null ? null : Number(enabled));

export class SqliteScheduleStore implements ScheduleStore {
  constructor(private readonly store: SqliteStore) {}

  async saveSchedule({ schedule }: { schedule: ScheduleDefinition }): Promise<Schedule> {
    const now = this.store.nowText();
    const enabled = enabledParam(schedule.enabled);
    // The enable rule reads the parameter twice (cursor, then state): it is bound twice.
    await this.store.writeOne(() =>
      statement(
        this.store.db,
        `INSERT INTO ${rules.SCHEDULE_TABLE} (${rules.SCHEDULE_INSERT_COLUMNS})
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, 1), 1, ?, ?, ?)
         ON CONFLICT (schedule_key) DO UPDATE SET ${rules.upsertAssignments((column) => `excluded.${column}`, 'COALESCE(?, enabled)', '?')}`,
      ).run(...rules.definitionValues(schedule), enabled, now, now, now, enabled, now, enabled, now),
    );
    return (await this.getSchedule({ key: schedule.key }))!;
  }

  async getSchedule({ key }: { key: string }): Promise<Schedule | null> {
    return (await this.select('WHERE schedule_key = ?', [key]))[0] ?? null;
  }

  async listSchedules(): Promise<Schedule[]> {
    return this.select('ORDER BY schedule_key', []);
  }

  async setScheduleEnabled({ key, enabled }: { key: string; enabled: boolean }): Promise<Schedule | null> {
    const now = this.store.nowText();
    await this.store.writeOne(() =>
      statement(this.store.db, `UPDATE ${rules.SCHEDULE_TABLE} SET ${rules.enableAssignments('?', '?')} WHERE schedule_key = ?`).run(
        Number(enabled),
        now,
        Number(enabled),
        now,
        key,
      ),
    );
    return this.getSchedule({ key });
  }

  async deleteSchedule({ key }: { key: string }): Promise<boolean> {
    const deleted = await this.store.writeOne(() => statement(this.store.db, `DELETE FROM ${rules.SCHEDULE_TABLE} WHERE schedule_key = ?`).run(key));
    return deleted.changes === 1;
  }

  async claimTicks(params: ClaimTicksParams): Promise<ClaimTicksResult> {
    const db = this.store.db;
    return this.store.write((): ClaimTicksResult => {
      const now = this.store.nowText();
      const moved = statement(
        db,
        rules.claimTickSql(rules.SCHEDULE_TABLE, () => '?', '?'),
      ).run(toSqliteTime(params.cursor.getTime()), params.tasks.at(-1)?.id ?? null, now, params.key, params.revision);
      if (moved.changes !== 1) return { claimed: false, tasks: [] };
      return { claimed: true, tasks: insertTasks(db, params.tasks, fromSqliteTime(now).getTime()) };
    });
  }

  private async select(rest: string, values: unknown[]): Promise<Schedule[]> {
    const rows = await this.store.read(() => statement(this.store.db, `SELECT ${rules.SCHEDULE_COLUMNS} FROM ${rules.SCHEDULE_TABLE} ${rest}`).all(...values));
    return rows.map((row) => rules.scheduleFromRow(row as Record<string, unknown>, fromSqliteTime));
  }
}
