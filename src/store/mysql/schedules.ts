/** Schedules on MySQL/MariaDB (see ../schedules.ts); DATETIME(3) in UTC like every table here. */
import type { Schedule, ScheduleDefinition } from '../../core/schedule.js';
import * as rules from '../rules/schedules.js';
import type { ClaimTicksParams, ClaimTicksResult, ScheduleStore } from '../schedules.js';
import type { Conn } from './connection.js';
import { decode, sqlTime } from './encode.js';
import type { MysqlStore, MysqlTransaction } from './store.js';

const NOW = 'NOW(3)';
const enabledParam = (enabled: boolean | null): number | null => (enabled === null ? null : Number(enabled));

export class MysqlScheduleStore implements ScheduleStore {
  constructor(private readonly store: MysqlStore) {}

  async saveSchedule({ schedule }: { schedule: ScheduleDefinition }): Promise<Schedule> {
    const db = this.store.db;
    const enabled = enabledParam(schedule.enabled);
    return db.transaction(async (conn) => {
      // The enable rule reads the parameter twice (cursor, then state): it is bound twice.
      await db.exec(
        conn,
        `INSERT INTO ${rules.SCHEDULE_TABLE} (${rules.SCHEDULE_INSERT_COLUMNS})
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE(?, 1), 1, ${NOW}, ${NOW}, ${NOW})
         ON DUPLICATE KEY UPDATE ${rules.upsertAssignments((column) => `VALUES(${column})`, 'COALESCE(?, enabled)', NOW)}`,
        [...rules.definitionValues(schedule), enabled, enabled, enabled],
      );
      return (await this.select(conn, 'WHERE schedule_key = ?', [schedule.key]))[0]!;
    });
  }

  async getSchedule({ key }: { key: string }): Promise<Schedule | null> {
    return (await this.store.db.run((conn) => this.select(conn, 'WHERE schedule_key = ?', [key])))[0] ?? null;
  }

  listSchedules(): Promise<Schedule[]> {
    return this.store.db.run((conn) => this.select(conn, 'ORDER BY schedule_key', []));
  }

  async setScheduleEnabled({ key, enabled }: { key: string; enabled: boolean }): Promise<Schedule | null> {
    const db = this.store.db;
    return db.transaction(async (conn) => {
      await db.exec(conn, `UPDATE ${rules.SCHEDULE_TABLE} SET ${rules.enableAssignments('?', NOW)} WHERE schedule_key = ?`, [
        Number(enabled),
        Number(enabled),
        key,
      ]);
      return (await this.select(conn, 'WHERE schedule_key = ?', [key]))[0] ?? null;
    });
  }

  async deleteSchedule({ key }: { key: string }): Promise<boolean> {
    const db = this.store.db;
    const result = await db.run((conn) => db.exec(conn, `DELETE FROM ${rules.SCHEDULE_TABLE} WHERE schedule_key = ?`, [key]));
    return result.affectedRows === 1;
  }

  /** One transaction: the insert joins it through the store's caller-transaction path (which wakes this process's workers). */
  claimTicks(params: ClaimTicksParams): Promise<ClaimTicksResult> {
    const db = this.store.db;
    return db.transaction(async (conn) => {
      const moved = await db.exec(
        conn,
        rules.claimTickSql(rules.SCHEDULE_TABLE, () => '?', NOW),
        [sqlTime(params.cursor), params.tasks.at(-1)?.id ?? null, params.key, params.revision],
      );
      if (moved.affectedRows !== 1) return { claimed: false, tasks: [] };
      const tasks = params.tasks.length > 0 ? await this.store.insertTasks({ tasks: params.tasks, transaction: conn as MysqlTransaction }) : [];
      return { claimed: true, tasks };
    });
  }

  private async select(conn: Conn, rest: string, values: unknown[]): Promise<Schedule[]> {
    const rows = await this.store.db.rows(conn, `SELECT ${rules.SCHEDULE_COLUMNS} FROM ${rules.SCHEDULE_TABLE} ${rest}`, values);
    return rows.map((row) => rules.scheduleFromRow(row, decode.time));
  }
}
