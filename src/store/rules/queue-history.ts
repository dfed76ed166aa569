/**
 * Queue history's rules, once for every dialect: the row's columns, the fixed histogram buckets, the additive
 * upsert (the only dialect difference: ON CONFLICT … DO UPDATE on SQLite and PostgreSQL, ON DUPLICATE KEY UPDATE on
 * MySQL/MariaDB) and the minute → hour roll-up. Rows: (grain, bucket_start, task_type, process_id) → counters.
 */
import type { SideSql } from '../side-sql.js';

export const HISTORY_TABLE = 'system_async_task_queue_stat';

/** Upper bounds (ms) of the histogram buckets, queue wait and run time alike; the last bucket is open. */
export const HISTORY_BOUNDS_MS = [10, 100, 1_000, 10_000, 60_000] as const;
export const HISTORY_BUCKETS = HISTORY_BOUNDS_MS.length + 1;

export const COUNTER_COLUMNS = ['submitted', 'started', 'succeeded', 'failed', 'dead_lettered'] as const;
const bucketColumns = (prefix: 'wait' | 'run'): string[] => [...Array.from({ length: HISTORY_BUCKETS }, (_, i) => `${prefix}_b${i}`), `${prefix}_ms_sum`];
/** Every additive column, in the order rows carry them. */
export const ADDITIVE_COLUMNS: readonly string[] = [...COUNTER_COLUMNS, ...bucketColumns('wait'), ...bucketColumns('run')];

/** The bucket a duration falls in. */
export function bucketOf(ms: number): number {
  const i = HISTORY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? HISTORY_BOUNDS_MS.length : i;
}

function addOnConflict(sql: SideSql, alias: string): string {
  if (sql.dialect === 'mysql') return `ON DUPLICATE KEY UPDATE ${ADDITIVE_COLUMNS.map((c) => `${c} = ${c} + VALUES(${c})`).join(', ')}`;
  return `ON CONFLICT (grain, bucket_start, task_type, process_id) DO UPDATE SET ${ADDITIVE_COLUMNS.map((c) => `${c} = ${alias}.${c} + excluded.${c}`).join(', ')}`;
}

function into(sql: SideSql): string {
  // SQLite and PostgreSQL name the existing row by an alias in DO UPDATE; MySQL takes none.
  return `INSERT INTO ${sql.table(HISTORY_TABLE)}${sql.dialect === 'mysql' ? '' : ' AS h'} (grain, bucket_start, task_type, process_id, ${ADDITIVE_COLUMNS.join(', ')})`;
}

/** One additive upsert of `rows` rows. Params per row: grain, bucket_start, task_type, process_id, then ADDITIVE_COLUMNS. */
export function upsertSql(sql: SideSql, rows: number): string {
  const one = `(${Array.from({ length: 4 + ADDITIVE_COLUMNS.length }, () => '?').join(', ')})`;
  return `${into(sql)} VALUES ${Array.from({ length: rows }, () => one).join(', ')} ${addOnConflict(sql, 'h')}`;
}

/** Minute rows of [from, to) summed into one hour row per type (process ''). Params: hour start, from, to. */
export function rollUpSql(sql: SideSql): string {
  return `${into(sql)} SELECT 'h', ?, task_type, '', ${ADDITIVE_COLUMNS.map((c) => `SUM(${c})`).join(', ')}
    FROM ${sql.table(HISTORY_TABLE)} WHERE grain = 'm' AND bucket_start >= ? AND bucket_start < ? GROUP BY task_type ${addOnConflict(sql, 'h')}`;
}

/** Rows of a grain older than `?`. Params: grain, before. */
export function removeSql(sql: SideSql): string {
  return `DELETE FROM ${sql.table(HISTORY_TABLE)} WHERE grain = ? AND bucket_start < ?`;
}

/** Rows of a grain in [from, to), summed over processes, per bucket (and type, or all types). Params: grain, from, to[, type]. */
export function readSql(sql: SideSql, byType: boolean): string {
  return `SELECT bucket_start, task_type, ${ADDITIVE_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(', ')}
    FROM ${sql.table(HISTORY_TABLE)} WHERE grain = ? AND bucket_start >= ? AND bucket_start < ?${byType ? ' AND task_type = ?' : ''}
    GROUP BY bucket_start, task_type ORDER BY bucket_start, task_type`;
}

/** The oldest minute row's start (null: none). */
export function oldestMinuteSql(sql: SideSql): string {
  return `SELECT MIN(bucket_start) AS oldest FROM ${sql.table(HISTORY_TABLE)} WHERE grain = 'm'`;
}
