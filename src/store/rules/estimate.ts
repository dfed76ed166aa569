/**
 * A waiting task's place in claim order, once for every dialect (client/
 * estimate.ts turns it into a start estimate): how many claimable tasks of a
 * scope (its type, its owner, or all) come before it — priority desc,
 * available_at, create_time, id, as the claim takes them (claim-order.ts) —
 * among those due by the time it is due itself. The task's own row is read
 * in the same statement (`me`), so ties compare at the database's precision.
 * The count stops at `cap`: a deep backlog costs a bounded walk of the
 * claim index, and the answer says "at least".
 */
import type { SideSql } from '../side-sql.js';
import { CLAIMABLE_SQL, LEASED_SQL } from './sql.js';
import { holdsKeySql, SEQUENCE_TABLE, sequenceLiveSql, waitsSql } from './sequences.js';

export type AheadScope = 'type' | 'owner' | 'global' | 'rateKey';

const SCOPE_FILTER: Record<AheadScope, string> = {
  type: ' AND t.task_type = me.task_type',
  owner: ' AND t.owner = me.owner',
  global: '',
  rateKey: ' AND t.rate_key = me.rate_key',
};

/** Params: the task's id, the moment it is due by (max(now, its available_at)). */
export function aheadSql(sql: SideSql, scope: AheadScope, cap: number): string {
  const tasks = sql.table('system_async_task');
  // MySQL's claim index leads with the generated `claimable` column; the others index the status set (partial).
  const claimable = sql.dialect === 'mysql' ? 't.claimable = 1' : `t.status IN ${CLAIMABLE_SQL}`;
  return `SELECT COUNT(*) AS n FROM (
    SELECT t.id FROM ${tasks} t JOIN ${tasks} me ON me.id = ?
    WHERE ${claimable}${SCOPE_FILTER[scope]} AND t.available_at <= ?
      AND (t.priority > me.priority OR (t.priority = me.priority AND (t.available_at < me.available_at
        OR (t.available_at = me.available_at AND (t.create_time < me.create_time OR (t.create_time = me.create_time AND t.id < me.id))))))
    LIMIT ${Math.trunc(cap)}) ahead`;
}

/** Leased rows (RUNNING, CANCEL_REQUESTED) of an owner: what an owner limit counts. */
export function leasedOfOwnerSql(sql: SideSql): string {
  return `SELECT COUNT(*) AS n FROM ${sql.table('system_async_task')} WHERE status IN ${LEASED_SQL} AND owner = ?`;
}

/**
 * Finished attempts started since `?` (of a type, an owner, or all): how many, and the first and last finish
 * among them — the pace between those two is the throughput, free of a drain's ramp-up and of idle time around it.
 */
export function finishedSinceSql(sql: SideSql, filter: string): string {
  return `SELECT COUNT(*) AS n, MIN(a.finished_at) AS first_finish, MAX(a.finished_at) AS last_finish
    FROM ${sql.table('system_async_task_attempt')} a JOIN ${sql.table('system_async_task')} t ON t.id = a.task_id
    WHERE a.started_at >= ? AND a.finished_at IS NOT NULL${filter ? ` AND ${filter}` : ''}`;
}

/**
 * Tasks of the task's sequence key before it that hold the key or wait for it (rules/sequences.ts): the key runs
 * them one at a time before this one. Param: the task's id.
 */
export function sequenceAheadSql(sql: SideSql): string {
  const tasks = sql.table('system_async_task');
  return `SELECT COUNT(*) AS n FROM ${tasks} t JOIN ${tasks} me ON me.id = ? JOIN ${sql.table(SEQUENCE_TABLE)} k ON k.sequence_key = me.sequence_key
    WHERE t.sequence_key = me.sequence_key AND t.sequence_seq < me.sequence_seq AND ${sequenceLiveSql('t')}
      AND (${holdsKeySql('t', 'k')} OR ${waitsSql('t')})`;
}

/** Start and finish of the last finished attempts of a type started since `?` (at most 200): their mean run time. */
export function recentRunsSql(sql: SideSql): string {
  return `SELECT a.started_at, a.finished_at FROM ${sql.table('system_async_task_attempt')} a JOIN ${sql.table('system_async_task')} t ON t.id = a.task_id
    WHERE a.started_at >= ? AND a.finished_at IS NOT NULL AND t.task_type = ? ORDER BY a.started_at DESC LIMIT 200`;
}
