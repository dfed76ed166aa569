/**
 * The recovery sweep on SQLite, inside the caller's BEGIN IMMEDIATE: what
 * happens to each expired lease is rules/: expiredLeaseDecision; overdue
 * waiting or paused tasks fail with DEADLINE_FAILURE; due retries go back to QUEUED.
 */
import {
  DEADLINE_FAILURE,
  expiredLeaseAssignments,
  expiredLeaseDecision,
  type ExpiredLeaseRow,
  LEASED_SQL,
  OVERDUE_SQL,
  STATUS_SQL,
  tallyExpired,
} from '../rules/index.js';
import type { Row } from '../rows.js';
import type { RecoveryResult } from '../types.js';
import { statement, type Db } from './connection.js';
import { toSqliteTime } from './encode.js';
import { closeAttempt, insertDeadLetter, insertFailure } from './finish.js';
import { settle } from './flows.js';

export function recover(db: Db, batchSize: number, nowMs: number): RecoveryResult {
  const now = toSqliteTime(nowMs);
  const result: RecoveryResult = { requeued: 0, failed: 0, cancelled: 0, retriesDue: 0, deadlineExpired: 0 };
  const ended: string[] = [];
  expiredLeases(db, batchSize, now, result, ended);
  result.deadlineExpired = pastDeadline(db, batchSize, now, ended);
  settle(db, ended, now);
  result.retriesDue = statement(
    db,
    `UPDATE system_async_task SET status = ${STATUS_SQL.QUEUED}, update_time = ?
     WHERE id IN (SELECT id FROM system_async_task WHERE status = ${STATUS_SQL.RETRY_WAIT} AND available_at <= ? LIMIT ?)`,
  ).run(now, now, batchSize).changes;
  return result;
}

function expiredLeases(db: Db, batchSize: number, now: string, result: RecoveryResult, ended: string[]): void {
  const expired = statement(
    db,
    `SELECT id, status, attempt_count, attempt_base, max_attempts, lease_expiries FROM system_async_task
     WHERE status IN ${LEASED_SQL} AND lease_until < ? ORDER BY lease_until LIMIT ?`,
  ).all(now, batchSize) as (ExpiredLeaseRow & Row)[];
  const update = statement(
    db,
    `UPDATE system_async_task SET status = ?, last_error_code = COALESCE(?, last_error_code), lease_owner = NULL, lease_until = NULL,
       ${expiredLeaseAssignments().join(', ')}, finish_time = ?, update_time = ? WHERE id = ?`,
  );
  const decisions = expired.map((task) => {
    const id = String(task.id);
    const attempt = Number(task.attempt_count);
    const decision = expiredLeaseDecision(task);
    update.run(decision.status, decision.failure?.errorCode ?? null, decision.finished ? now : null, now, id);
    closeAttempt(db, id, attempt, decision.attemptOutcome, decision.failure?.errorCode ?? null, now);
    if (decision.failure) insertFailure(db, id, attempt, decision.failure, now);
    if (decision.deadLetter) insertDeadLetter(db, id, decision.failure!, now);
    if (decision.finished) ended.push(id);
    return decision;
  });
  Object.assign(result, tallyExpired(decisions));
}

function pastDeadline(db: Db, batchSize: number, now: string, ended: string[]): number {
  const overdue = statement(
    db,
    `SELECT id, attempt_count FROM system_async_task WHERE status IN ${OVERDUE_SQL} AND deadline_at IS NOT NULL AND deadline_at <= ?
     ORDER BY deadline_at LIMIT ?`,
  ).all(now, batchSize) as Row[];
  const fail = statement(db, `UPDATE system_async_task SET status = ${STATUS_SQL.FAILED}, last_error_code = ?, finish_time = ?, update_time = ? WHERE id = ?`);
  for (const task of overdue) {
    const id = String(task.id);
    fail.run(DEADLINE_FAILURE.errorCode, now, now, id);
    insertFailure(db, id, Number(task.attempt_count), DEADLINE_FAILURE, now);
    insertDeadLetter(db, id, DEADLINE_FAILURE, now);
    ended.push(id);
  }
  return overdue.length;
}
