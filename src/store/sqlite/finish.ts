/**
 * Outcome writes and the recovery sweep for SQLite. Each function runs inside
 * the caller's transaction. Every worker write is fenced by lease owner,
 * attempt and a leased status; a zero row count means the lease is gone.
 */
import type Database from 'better-sqlite3';
import { uuidv7 } from '../../core/ids.js';
import type { FailureRecord, TaskProgress } from '../../core/task.js';
import { progressValues, type Row } from '../rows.js';
import type { AttemptOutcome, AttemptOutcomeName, RecoveryResult } from '../types.js';
import { statement } from './statements.js';
import { toSqliteTime } from './time.js';

const FENCE = `id = @id AND lease_owner = @worker AND attempt_count = @attempt AND status IN ('RUNNING','CANCEL_REQUESTED')`;
const PROGRESS_SET = `progress_total = COALESCE(@p0, progress_total), progress_processed = COALESCE(@p1, progress_processed),
  progress_succeeded = COALESCE(@p2, progress_succeeded), progress_failed = COALESCE(@p3, progress_failed),
  progress_skipped = COALESCE(@p4, progress_skipped), progress_message = CASE WHEN @p0 IS NULL THEN progress_message ELSE @p5 END`;

const STATEMENTS = {
  SUCCESS: `UPDATE system_async_task SET status = @status, artifact_id = @artifact, result_json = @result, finish_time = @now,
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status`,
  // CANCEL_REQUESTED may only end CANCELLED (or in success): a failure or hand-back on it cancels it, the failure
  // still recorded. (SET expressions all read the row as it was, so `status` below is the old status.)
  RETRY: `UPDATE system_async_task SET status = CASE status WHEN 'CANCEL_REQUESTED' THEN 'CANCELLED' ELSE 'RETRY_WAIT' END,
    available_at = CASE status WHEN 'CANCEL_REQUESTED' THEN available_at ELSE @availableAt END,
    finish_time = CASE status WHEN 'CANCEL_REQUESTED' THEN @now ELSE finish_time END, last_error_code = @code,
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status`,
  FAILED: `UPDATE system_async_task SET status = CASE status WHEN 'CANCEL_REQUESTED' THEN 'CANCELLED' ELSE 'FAILED' END,
    last_error_code = @code, finish_time = @now,
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status`,
  CANCELLED: `UPDATE system_async_task SET status = 'CANCELLED', finish_time = @now,
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status`,
  ABANDONED: `UPDATE system_async_task SET status = CASE status WHEN 'CANCEL_REQUESTED' THEN 'CANCELLED' ELSE 'QUEUED' END,
    finish_time = CASE status WHEN 'CANCEL_REQUESTED' THEN @now ELSE finish_time END,
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status`,
} as const;

export function finishOutcome(db: Database.Database, outcome: AttemptOutcome, now: string, nowMs: number): boolean {
  const { lease } = outcome;
  const base = { id: lease.taskId, worker: lease.workerId, attempt: lease.attempt, now, ...progressParams(outcome.progress) };
  let row: { status: string } | undefined;
  switch (outcome.kind) {
    case 'SUCCESS':
    case 'PARTIAL_SUCCESS':
      row = statement(db, STATEMENTS.SUCCESS).get({
        ...base, status: outcome.kind, artifact: outcome.artifactId,
        result: outcome.result === undefined || outcome.result === null ? null : JSON.stringify(outcome.result),
      }) as typeof row;
      break;
    case 'RETRY':
      row = statement(db, STATEMENTS.RETRY).get({ ...base, code: outcome.failure.errorCode, availableAt: toSqliteTime(nowMs + outcome.retryDelayMs) }) as typeof row;
      break;
    case 'FAILED':
      row = statement(db, STATEMENTS.FAILED).get({ ...base, code: outcome.failure.errorCode }) as typeof row;
      break;
    case 'CANCELLED':
      row = statement(db, STATEMENTS.CANCELLED).get(base) as typeof row;
      break;
    case 'ABANDONED':
      row = statement(db, STATEMENTS.ABANDONED).get(base) as typeof row;
      break;
  }
  if (!row) return false;
  const failure = outcome.kind === 'RETRY' || outcome.kind === 'FAILED' ? outcome.failure : null;
  closeAttempt(db, lease.taskId, lease.attempt, attemptOutcomeName(outcome.kind), failure?.errorCode ?? null, now);
  if (failure) insertFailure(db, lease.taskId, lease.attempt, failure, now);
  if (outcome.kind === 'FAILED' && row.status === 'FAILED') insertDeadLetter(db, lease.taskId, outcome.failure, now);
  return true;
}

function attemptOutcomeName(kind: AttemptOutcome['kind']): AttemptOutcomeName {
  return kind === 'RETRY' ? 'FAILED' : kind;
}

const NO_PROGRESS = Object.freeze({ p0: null, p1: null, p2: null, p3: null, p4: null, p5: null });

function progressParams(progress: TaskProgress | null): Record<string, unknown> {
  if (progress === null) return NO_PROGRESS;
  const [p0, p1, p2, p3, p4, p5] = progressValues(progress);
  return { p0, p1, p2, p3, p4, p5 };
}

function closeAttempt(db: Database.Database, taskId: string, attempt: number, outcome: AttemptOutcomeName, errorCode: string | null, now: string): void {
  statement(db, 'UPDATE system_async_task_attempt SET finished_at = ?, outcome = ?, error_code = ? WHERE task_id = ? AND attempt = ?')
    .run(now, outcome, errorCode, taskId, attempt);
}

function insertFailure(db: Database.Database, taskId: string, attempt: number, failure: FailureRecord, now: string): void {
  statement(db, 
    `INSERT INTO system_async_task_failure (id, task_id, attempt, error_code, error_message, trace_id, retryable, failed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(uuidv7(), taskId, attempt, failure.errorCode, failure.message, failure.traceId, failure.retryable ? 1 : 0, now);
}

/** Copies a FAILED task's payload and last failure into the dead-letter table. */
function insertDeadLetter(db: Database.Database, taskId: string, failure: FailureRecord, now: string): void {
  statement(db, 
    `INSERT INTO system_async_task_dead_letter (id, original_task_id, task_type, owner, payload_json, error_code, error_message,
       trace_id, attempt_count, moved_at)
     SELECT ?, id, task_type, owner, payload_json, ?, ?, COALESCE(?, trace_id), attempt_count, ? FROM system_async_task WHERE id = ?`,
  ).run(uuidv7(), failure.errorCode, failure.message, failure.traceId, now, taskId);
}

export function recoverExpired(db: Database.Database, batchSize: number, nowMs: number): RecoveryResult {
  const now = toSqliteTime(nowMs);
  const result: RecoveryResult = { requeued: 0, failed: 0, cancelled: 0, retriesDue: 0, deadlineExpired: 0 };
  const expired = statement(db, 
      `SELECT id, status, attempt_count, attempt_base, max_attempts FROM system_async_task
       WHERE status IN ('RUNNING','CANCEL_REQUESTED') AND lease_until < ? ORDER BY lease_until LIMIT ?`,
    )
    .all(now, batchSize) as Row[];
  for (const task of expired) {
    const id = String(task.id);
    const attempt = Number(task.attempt_count);
    if (task.status === 'CANCEL_REQUESTED') {
      statement(db, `UPDATE system_async_task SET status = 'CANCELLED', finish_time = ?, lease_owner = NULL, lease_until = NULL, update_time = ? WHERE id = ?`)
        .run(now, now, id);
      closeAttempt(db, id, attempt, 'CANCELLED', null, now);
      result.cancelled += 1;
      continue;
    }
    const spent = attempt - Number(task.attempt_base) >= Number(task.max_attempts);
    const failure: FailureRecord = {
      errorCode: 'LEASE_EXPIRED', message: 'lease expired: the worker stopped renewing it (crashed, stalled or partitioned)',
      traceId: null, retryable: !spent,
    };
    statement(db, 
      `UPDATE system_async_task SET status = ?, last_error_code = 'LEASE_EXPIRED', lease_owner = NULL, lease_until = NULL,
         finish_time = ?, update_time = ? WHERE id = ?`,
    ).run(spent ? 'FAILED' : 'QUEUED', spent ? now : null, now, id);
    closeAttempt(db, id, attempt, 'LEASE_EXPIRED', 'LEASE_EXPIRED', now);
    insertFailure(db, id, attempt, failure, now);
    if (spent) {
      insertDeadLetter(db, id, failure, now);
      result.failed += 1;
    } else {
      result.requeued += 1;
    }
  }
  const overdue = statement(db, 
      `SELECT id, attempt_count FROM system_async_task WHERE status IN ('QUEUED','RETRY_WAIT') AND deadline_at IS NOT NULL AND deadline_at <= ?
       ORDER BY deadline_at LIMIT ?`,
    )
    .all(now, batchSize) as Row[];
  for (const task of overdue) {
    const id = String(task.id);
    const failure: FailureRecord = { errorCode: 'DEADLINE_EXCEEDED', message: 'deadline passed before the task could run', traceId: null, retryable: false };
    statement(db, `UPDATE system_async_task SET status = 'FAILED', last_error_code = ?, finish_time = ?, update_time = ? WHERE id = ?`)
      .run(failure.errorCode, now, now, id);
    insertFailure(db, id, Number(task.attempt_count), failure, now);
    insertDeadLetter(db, id, failure, now);
    result.deadlineExpired += 1;
  }
  result.retriesDue = statement(db, 
      `UPDATE system_async_task SET status = 'QUEUED', update_time = ?
       WHERE id IN (SELECT id FROM system_async_task WHERE status = 'RETRY_WAIT' AND available_at <= ? LIMIT ?)`,
    )
    .run(now, now, batchSize).changes;
  return result;
}
