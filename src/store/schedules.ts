/**
 * Schedules (periodic tasks, src/core/schedule.ts) in the store. Each dialect
 * implements ScheduleStore in its own schedules.ts over the table
 * system_async_task_schedule (rules/schedules.ts holds its shared rules);
 * scheduleStoreOf() picks the one for a store, loading only that dialect.
 */
import type { Schedule, ScheduleDefinition } from '../core/schedule.js';
import type { NewTask } from '../core/task.js';
import { sideStoreOf } from './side-store.js';
import type { InsertTaskResult, Store } from './types.js';

export interface ClaimTicksParams {
  key: string;
  /** The revision the caller read: the compare-and-set token. */
  revision: number;
  /** The new cursor (the newest due tick). */
  cursor: Date;
  /** One task per tick to run (idempotency key: tickKey()). */
  tasks: readonly NewTask[];
}

export interface ClaimTicksResult {
  /** false: another scheduler moved the schedule first (or it was changed, disabled, deleted); nothing was written. */
  claimed: boolean;
  tasks: InsertTaskResult[];
}

export interface ScheduleStore {
  /**
   * Upserts by key. New: enabled unless `enabled` is false, cursor = now. Existing: the definition
   * is replaced, `enabled` null keeps the state; enabling a disabled one moves the cursor to now.
   */
  saveSchedule(params: { schedule: ScheduleDefinition }): Promise<Schedule>;
  getSchedule(params: { key: string }): Promise<Schedule | null>;
  /** By key. */
  listSchedules(): Promise<Schedule[]>;
  /** null when the key is unknown. */
  setScheduleEnabled(params: { key: string; enabled: boolean }): Promise<Schedule | null>;
  deleteSchedule(params: { key: string }): Promise<boolean>;
  /**
   * In one transaction: moves the cursor if the row still has `revision` and is enabled, and
   * only then inserts the tasks. Of concurrent claims from one revision exactly one applies.
   */
  claimTicks(params: ClaimTicksParams): Promise<ClaimTicksResult>;
}

/** The ScheduleStore working on the same database (and connections) as `store`. */
export function scheduleStoreOf(store: Store): Promise<ScheduleStore> {
  return sideStoreOf<ScheduleStore>(store, {
    sqlite: async (sqlite) => new (await import('./sqlite/schedules.js')).SqliteScheduleStore(sqlite),
    postgres: async (postgres) => new (await import('./postgres/schedules.js')).PostgresScheduleStore(postgres),
    mysql: async (mysql) => new (await import('./mysql/schedules.js')).MysqlScheduleStore(mysql),
  });
}
