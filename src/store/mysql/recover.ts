/**
 * The recovery sweep, one short transaction per kind of row. Each picks its
 * rows with FOR UPDATE SKIP LOCKED, so it never waits on (or for) a claim or
 * an outcome write in flight, and its conditions are judged by NOW(3): a live
 * lease (lease_until in the future by the database's clock) is never touched.
 */
import {
  DEADLINE_FAILURE,
  expiredLeaseAssignments,
  expiredLeaseDecision,
  type ExpiredLeaseDecision,
  type ExpiredLeaseRow,
  LEASED_SQL,
  OVERDUE_SQL,
  STATUS_SQL,
  tallyExpired,
} from '../rules/index.js';
import type { Row } from '../rows.js';
import type { RecoveryResult } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { settle, stepsOn } from './flows.js';
import { closeAttempts, insertDeadLetters, insertFailures, type FailureInsert } from './sql.js';

export async function recoverExpired(db: MysqlDatabase, batchSize: number): Promise<RecoveryResult> {
  const result: RecoveryResult = { requeued: 0, failed: 0, cancelled: 0, retriesDue: 0, deadlineExpired: 0 };
  Object.assign(result, await db.transaction((conn) => expiredLeases(db, conn, batchSize)));
  result.deadlineExpired = await db.transaction((conn) => pastDeadline(db, conn, batchSize));
  result.retriesDue = await db.transaction((conn) => retriesDue(db, conn, batchSize));
  return result;
}

type Decided = { row: ExpiredLeaseRow & Row; decision: ExpiredLeaseDecision };

/** What happens to each expired lease is rules/: expiredLeaseDecision; one UPDATE per resulting status. */
async function expiredLeases(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<Partial<RecoveryResult>> {
  const rows = (await db.rows(
    conn,
    `SELECT id, status, attempt_count, attempt_base, max_attempts, lease_expiries, NOW(3) AS db_now FROM system_async_task FORCE INDEX (ix_system_async_task_leased)
     WHERE status IN ${LEASED_SQL} AND lease_until < NOW(3) ORDER BY lease_until LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  )) as (ExpiredLeaseRow & Row)[];
  if (rows.length === 0) return { requeued: 0, failed: 0, cancelled: 0 };
  const now = String(rows[0]!.db_now);
  const decided: Decided[] = rows.map((row) => ({ row, decision: expiredLeaseDecision(row) }));
  for (const status of new Set(decided.map((d) => d.decision.status))) {
    const group = decided.filter((d) => d.decision.status === status);
    const { decision } = group[0]!;
    await db.exec(
      conn,
      `UPDATE system_async_task SET status = ${STATUS_SQL[status]}, last_error_code = COALESCE(?, last_error_code), lease_owner = NULL,
         lease_until = NULL, ${expiredLeaseAssignments().join(', ')}, finish_time = ?, update_time = ? WHERE id IN (?)`,
      [decision.failure?.errorCode ?? null, decision.finished ? now : null, now, group.map((d) => String(d.row.id))],
    );
  }
  await closeAttempts(
    db,
    conn,
    decided.map(({ row, decision }) => ({
      taskId: String(row.id),
      attempt: Number(row.attempt_count),
      outcome: decision.attemptOutcome,
      errorCode: decision.failure?.errorCode ?? null,
    })),
    now,
  );
  const failureOf = ({ row, decision }: Decided): FailureInsert => ({ taskId: String(row.id), attempt: Number(row.attempt_count), failure: decision.failure! });
  await insertFailures(db, conn, decided.filter((d) => d.decision.failure !== null).map(failureOf), now);
  await insertDeadLetters(db, conn, decided.filter((d) => d.decision.deadLetter).map(failureOf), now);
  await settle(
    stepsOn(db, conn),
    decided.filter((d) => d.decision.finished).map((d) => String(d.row.id)),
  );
  return tallyExpired(decided.map((d) => d.decision));
}

/**
 * Overdue rows come by two index paths: claimable ones by the deadline index (the generated `claimable`
 * column leaves PAUSED out), paused ones by the status index — few, so sorting them costs little.
 */
async function pastDeadline(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<number> {
  const claimable = await db.rows(
    conn,
    `SELECT id, attempt_count, NOW(3) AS db_now FROM system_async_task FORCE INDEX (ix_system_async_task_deadline)
     WHERE claimable = 1 AND deadline_at IS NOT NULL AND deadline_at <= NOW(3) ORDER BY deadline_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  );
  const paused = await db.rows(
    conn,
    `SELECT id, attempt_count, NOW(3) AS db_now FROM system_async_task FORCE INDEX (ix_system_async_task_status_available)
     WHERE status = ${STATUS_SQL.PAUSED} AND deadline_at IS NOT NULL AND deadline_at <= NOW(3) ORDER BY deadline_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize - claimable.length],
  );
  const rows = [...claimable, ...paused];
  if (rows.length === 0) return 0;
  const now = String(rows[0]!.db_now);
  const ids = rows.map((row) => String(row.id));
  await db.exec(
    conn,
    `UPDATE system_async_task SET status = ${STATUS_SQL.FAILED}, last_error_code = ?, finish_time = ?, update_time = ?
     WHERE id IN (?) AND status IN ${OVERDUE_SQL}`,
    [DEADLINE_FAILURE.errorCode, now, now, ids],
  );
  const failures = rows.map((row) => ({ taskId: String(row.id), attempt: Number(row.attempt_count), failure: DEADLINE_FAILURE }));
  await insertFailures(db, conn, failures, now);
  await insertDeadLetters(db, conn, failures, now);
  await settle(stepsOn(db, conn), ids);
  return rows.length;
}

async function retriesDue(db: MysqlDatabase, conn: Conn, batchSize: number): Promise<number> {
  const rows = await db.rows(
    conn,
    `SELECT id FROM system_async_task FORCE INDEX (ix_system_async_task_status_available)
     WHERE status = ${STATUS_SQL.RETRY_WAIT} AND available_at <= NOW(3) ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batchSize],
  );
  if (rows.length === 0) return 0;
  await db.exec(conn, `UPDATE system_async_task SET status = ${STATUS_SQL.QUEUED}, update_time = NOW(3) WHERE id IN (?)`, [rows.map((row) => String(row.id))]);
  return rows.length;
}
