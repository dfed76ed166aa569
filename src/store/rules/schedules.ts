/**
 * The schedule table's rules, written once for the three dialects: its
 * columns, the record a row becomes, and the assignments of each write.
 * A dialect supplies only its placeholders, its clock expression and how an
 * upsert names the incoming row (EXCLUDED.col, excluded.col, VALUES(col)).
 *
 * Invariants: every write bumps `revision` (a tick claim compares it, so a
 * claim computed from a stale read changes nothing); enabling a disabled
 * schedule moves its cursor to now, so the ticks it slept through are not
 * "missed" ticks to catch up. MySQL assigns left to right, reading the values
 * already assigned: the cursor rule is listed before `enabled`.
 */
import type { Schedule, ScheduleDefinition } from '../../core/schedule.js';

export const SCHEDULE_TABLE = 'system_async_task_schedule';

export const SCHEDULE_COLUMNS =
  'schedule_key, task_type, cron, time_zone, payload_json, priority, max_attempts, owner, catch_up, enabled, revision, last_tick_at, last_task_id, created_at, updated_at';

/** What a save may change, in the order of definitionValues() after the key. */
const DEFINITION_COLUMNS = ['task_type', 'cron', 'time_zone', 'payload_json', 'priority', 'max_attempts', 'owner', 'catch_up'] as const;

/** The insert's columns: the definition, then enabled, revision, the cursor and the times. */
export const SCHEDULE_INSERT_COLUMNS = `schedule_key, ${DEFINITION_COLUMNS.join(', ')}, enabled, revision, last_tick_at, created_at, updated_at`;

/** Key and definition, in SCHEDULE_INSERT_COLUMNS order (9 values). */
export function definitionValues(d: ScheduleDefinition): unknown[] {
  return [d.key, d.taskType, d.cron, d.timeZone, d.payloadJson, d.priority, d.maxAttempts, d.owner, d.catchUp];
}

/**
 * SET of an enable / disable: `enabled` is the new value's SQL (a parameter, or COALESCE(param, enabled)).
 * `self` qualifies the current row's columns where a bare name is ambiguous (PostgreSQL's upsert: `s.`).
 */
export function enableAssignments(enabled: string, now: string, self = ''): string {
  return `last_tick_at = CASE WHEN ${self}enabled = 0 AND ${enabled} = 1 THEN ${now} ELSE ${self}last_tick_at END, enabled = ${enabled}, ${bump(now, self)}`;
}

/** SET of an upsert's update: the incoming definition, the enable rule (null keeps the state). */
export function upsertAssignments(incoming: (column: string) => string, enabled: string, now: string, self = ''): string {
  return [...DEFINITION_COLUMNS.map((column) => `${column} = ${incoming(column)}`), enableAssignments(enabled, now, self)].join(', ');
}

/** A tick claim's UPDATE: the compare-and-set on the revision read: the compare-and-set on the revision read (params: cursor, task id; key, revision). `enabled` is 0 / 1 on every dialect. */
export function claimTickSql(table: string, param: (index: number) => string, now: string): string {
  return `UPDATE ${table} SET last_tick_at = ${param(1)}, last_task_id = ${param(2)}, ${bump(now)}
    WHERE schedule_key = ${param(3)} AND revision = ${param(4)} AND enabled = 1`;
}

function bump(now: string, self = ''): string {
  return `revision = ${self}revision + 1, updated_at = ${now}`;
}

export function scheduleFromRow(row: Record<string, unknown>, time: (value: unknown) => Date): Schedule {
  return {
    key: String(row.schedule_key),
    taskType: String(row.task_type),
    cron: String(row.cron),
    timeZone: String(row.time_zone),
    payload: JSON.parse(String(row.payload_json)) as unknown,
    priority: Number(row.priority),
    maxAttempts: Number(row.max_attempts),
    owner: row.owner === null || row.owner === undefined ? null : String(row.owner),
    catchUp: Number(row.catch_up),
    enabled: row.enabled === true || Number(row.enabled) === 1,
    revision: Number(row.revision),
    lastTickAt: time(row.last_tick_at),
    lastTaskId: row.last_task_id === null || row.last_task_id === undefined ? null : String(row.last_task_id),
    createdAt: time(row.created_at),
    updatedAt: time(row.updated_at),
  };
}
