/**
 * The recovery sweep, one short transaction per kind of row. Each picks its
 * rows with FOR UPDATE SKIP LOCKED, so it never waits on (or for) a claim or
 * an outcome write in flight, and its conditions are judged by NOW(3): a live
 * lease (lease_until in the future by the database's clock) is never touched.
 */
import type { FailureRecord } from '../../core/task.js';
import type { RecoveryResult } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { closeAttempts, insertDeadLetters, insertFailures, LEASED, type FailureInsert } from './sql.js';

const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped renewing it (crashed, stalled or partitioned)';

export async function recoverExpired(db: MysqlDatabase, batchSize: number): Promise<RecoveryResult> {
  const result: RecoveryResult = { requeued: 0, failed: 0, cancelled: 0, retriesDue: 0, deadlineExpired: 0 };
  Object.assign(result, await db.transaction((conn) => expiredLeases(db, conn, batchSize)));
  result.deadlineExpired = await db.transaction((conn) => pastDeadline(db, conn, batchSize));
  result.retriesDue = await db.transaction((conn) => retriesDue(db, conn, batchSize));
  return result;
}

async function expiredLeases(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<Partial<RecoveryResult>> {
  const rows = await db.rows(
    conn,
    `SELECT id, status, attempt_count, attempt_base, max_attempts, NOW(3) AS db_now FROM system_async_task FORCE INDEX (ix_system_async_task_leased)
     WHERE status IN ${LEASED} AND lease_until < NOW(3) ORDER BY lease_until LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  );
  if (rows.length === 0) return { requeued: 0, failed: 0, cancelled: 0 };
  const now = String(rows[0]!.db_now);
  const cancelled = rows.filter((row) => row.status === 'CANCEL_REQUESTED');
  const running = rows.filter((row) => row.status !== 'CANCEL_REQUESTED');
  const isSpent = (row: (typeof rows)[number]) => Number(row.attempt_count) - Number(row.attempt_base) >= Number(row.max_attempts);
  const spent = running.filter(isSpent);
  const requeue = running.filter((row) => !isSpent(row));
  const idsOf = (list: typeof rows) => list.map((row) => String(row.id));

  if (cancelled.length > 0) {
    await db.exec(
      conn,
      `UPDATE system_async_task SET status = 'CANCELLED', finish_time = ?, lease_owner = NULL, lease_until = NULL, update_time = ? WHERE id IN (?)`,
      [now, now, idsOf(cancelled)],
    );
  }
  if (requeue.length > 0) {
    await db.exec(
      conn,
      `UPDATE system_async_task SET status = 'QUEUED', last_error_code = 'LEASE_EXPIRED', lease_owner = NULL, lease_until = NULL,
         finish_time = NULL, update_time = ? WHERE id IN (?)`,
      [now, idsOf(requeue)],
    );
  }
  if (spent.length > 0) {
    await db.exec(
      conn,
      `UPDATE system_async_task SET status = 'FAILED', last_error_code = 'LEASE_EXPIRED', lease_owner = NULL, lease_until = NULL,
         finish_time = ?, update_time = ? WHERE id IN (?)`,
      [now, now, idsOf(spent)],
    );
  }
  await closeAttempts(
    db,
    conn,
    rows.map((row) => {
      const wasCancelled = row.status === 'CANCEL_REQUESTED';
      return {
        taskId: String(row.id),
        attempt: Number(row.attempt_count),
        outcome: wasCancelled ? ('CANCELLED' as const) : ('LEASE_EXPIRED' as const),
        errorCode: wasCancelled ? null : 'LEASE_EXPIRED',
      };
    }),
    now,
  );
  const failureOf = (row: (typeof rows)[number], retryable: boolean): FailureInsert => ({
    taskId: String(row.id),
    attempt: Number(row.attempt_count),
    failure: { errorCode: 'LEASE_EXPIRED', message: LEASE_EXPIRED_MESSAGE, traceId: null, retryable },
  });
  const spentFailures = spent.map((row) => failureOf(row, false));
  await insertFailures(db, conn, [...requeue.map((row) => failureOf(row, true)), ...spentFailures], now);
  await insertDeadLetters(db, conn, spentFailures, now);
  return { requeued: requeue.length, failed: spent.length, cancelled: cancelled.length };
}

async function pastDeadline(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<number> {
  const rows = await db.rows(
    conn,
    `SELECT id, attempt_count, NOW(3) AS db_now FROM system_async_task FORCE INDEX (ix_system_async_task_deadline)
     WHERE claimable = 1 AND deadline_at IS NOT NULL AND deadline_at <= NOW(3) ORDER BY deadline_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  );
  if (rows.length === 0) return 0;
  const now = String(rows[0]!.db_now);
  const failure: FailureRecord = { errorCode: 'DEADLINE_EXCEEDED', message: 'deadline passed before the task could run', traceId: null, retryable: false };
  const ids = rows.map((row) => String(row.id));
  await db.exec(
    conn,
    `UPDATE system_async_task SET status = 'FAILED', last_error_code = 'DEADLINE_EXCEEDED', finish_time = ?, update_time = ? WHERE id IN (?)`,
    [now, now, ids],
  );
  const failures = rows.map((row) => ({ taskId: String(row.id), attempt: Number(row.attempt_count), failure }));
  await insertFailures(db, conn, failures, now);
  await insertDeadLetters(db, conn, failures, now);
  return rows.length;
}

async function retriesDue(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<number> {
  const rows = await db.rows(
    conn,
    `SELECT id FROM system_async_task FORCE INDEX (ix_system_async_task_status_available)
     WHERE status = 'RETRY_WAIT' AND available_at <= NOW(3) ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  );
  if (rows.length === 0) return 0;
  await db.exec(conn, `UPDATE system_async_task SET status = 'QUEUED', update_time = NOW(3) WHERE id IN (?)`, [rows.map((row) => String(row.id))]);
  return rows.length;
}
