/**
 * Fenced lease writes: heartbeat, progress, hand-back and steps. Every WHERE carries
 * lease_owner, attempt_count, lease_token and a leased status (renewal and progress: an
 * unexpired lease too, rules/leases.ts). MariaDB's UPDATE has no
 * RETURNING, so where we must know which rows applied we write and then read
 * the same rows back inside the transaction: the UPDATE's row locks make the
 * read see exactly what the UPDATE did.
 */
import type { Lease, TaskProgress } from '../../core/task.js';
import { PROGRESS_COLUMNS, progressValues } from '../rows.js';
import { CURRENT_CYCLE, fenceSql, nextStepSeqSql, LEASED_SQL, leaseKey, liveLeaseSql, releaseAssignments, renewalAnswer } from '../rules/index.js';
import type { RenewResult } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';

function fenceValues(leases: readonly Lease[]): unknown[] {
  return [leases.map((l) => l.taskId), leases.map((l) => [l.taskId, l.workerId, l.attempt, l.token])];
}

/** `id IN (…)` gives the optimizer a primary-key range; the row constructor is the fence. */
const FENCE = `id IN (?) AND (id, lease_owner, attempt_count, lease_token) IN (?) AND status IN ${LEASED_SQL}`;
/** The fence of a renewal: the lease has not expired either (rules/leases.ts). */
const LIVE_FENCE = `${FENCE} AND ${liveLeaseSql('NOW(3)')}`;

export async function renewLeases(db: MysqlDatabase, conn: Conn, leases: readonly Lease[], leaseMs: number): Promise<RenewResult> {
  const ordered = [...leases].sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
  // One statement for every lease of the worker; the new expiry is the database's now + leaseMs.
  await db.exec(conn, `UPDATE system_async_task SET lease_until = NOW(3) + INTERVAL ? MICROSECOND, update_time = NOW(3) WHERE ${LIVE_FENCE}`, [
    Math.round(leaseMs) * 1000,
    ...fenceValues(ordered),
  ]);
  // The rows renewed are exactly the live ones now: an expired lease the UPDATE skipped is still past its end.
  const rows = await db.rows(
    conn,
    `SELECT id, status, lease_owner, attempt_count, lease_token FROM system_async_task WHERE ${LIVE_FENCE}`,
    fenceValues(ordered),
  );
  const held = rows.map(
    (row) => [leaseKey(String(row.id), String(row.lease_owner), Number(row.attempt_count), String(row.lease_token)), String(row.status)] as const,
  );
  return renewalAnswer(leases, new Map(held));
}

export async function saveProgress(db: MysqlDatabase, conn: Conn, lease: Lease, progress: TaskProgress): Promise<boolean> {
  const sets = PROGRESS_COLUMNS.map((column) => `${column} = ?`).join(', ');
  const result = await db.exec(
    conn,
    `UPDATE system_async_task SET ${sets}, update_time = NOW(3)
     WHERE id = ? AND ${fenceSql('?', '?', '?')} AND ${liveLeaseSql('NOW(3)')}`,
    [...progressValues(progress), lease.taskId, lease.workerId, lease.attempt, lease.token],
  );
  // FOUND_ROWS (on in the pools we create): affectedRows counts matched rows even when nothing changed.
  return result.affectedRows === 1;
}

/** Leased but never started: back to QUEUED uncharged, the attempt recorded as RELEASED (a pending cancel request completes as CANCELLED). */
export async function releaseTasks(db: MysqlDatabase, conn: Conn, leases: readonly Lease[]): Promise<number> {
  const held = await db.rows(conn, `SELECT id, attempt_count FROM system_async_task WHERE ${FENCE} ORDER BY id FOR UPDATE`, fenceValues(leases));
  if (held.length === 0) return 0;
  const heldIds = held.map((row) => String(row.id));
  // Assignments run left to right on MySQL and MariaDB: releaseAssignments orders them to read the old status and count.
  await db.exec(conn, `UPDATE system_async_task SET ${releaseAssignments('NOW(3)').join(', ')} WHERE id IN (?)`, [heldIds]);
  await db.exec(conn, `UPDATE system_async_task_attempt SET finished_at = NOW(3), outcome = 'RELEASED' WHERE task_id IN (?) AND (task_id, attempt) IN (?)`, [
    heldIds,
    held.map((row) => [String(row.id), Number(row.attempt_count)]),
  ]);
  return held.length;
}

/**
 * A completed step (rules/steps.ts), inside a transaction: the task row is locked while its fence is judged (a
 * locking read sees the newest version), so a sweep that takes the lease waits for this commit or finds it refused.
 */
export async function recordStep(db: MysqlDatabase, conn: Conn, lease: Lease, name: string, resultJson: string | null): Promise<boolean> {
  const held = await db.rows(conn, `SELECT id FROM system_async_task WHERE id = ? AND ${fenceSql('?', '?', '?')} AND ${liveLeaseSql('NOW(3)')} FOR UPDATE`, [
    lease.taskId,
    lease.workerId,
    lease.attempt,
    lease.token,
  ]);
  if (held.length === 0) return false;
  // A name recorded already keeps its first row (no-op update: not INSERT IGNORE, which would hide other errors too).
  await db.exec(
    conn,
    `INSERT INTO system_async_task_step (task_id, cycle, name, seq, result_json, attempt, worker_id, recorded_at)
     SELECT ?, ${CURRENT_CYCLE}, ?, ${nextStepSeqSql('system_async_task_step', '?')}, ?, ?, ?, NOW(3)
     ON DUPLICATE KEY UPDATE task_id = task_id`,
    [lease.taskId, name, lease.taskId, resultJson, lease.attempt, lease.workerId],
  );
  return true;
}
