/**
 * Outcome writes for SQLite, inside the caller's transaction. Every write is
 * fenced by lease owner, attempt, token and a leased status; no row back means the
 * lease is gone. The status each kind leads to is the shared rules' (rules/)
 * (statusAfterKindSql); SET expressions all read the row as it was, so
 * `status` in them is the old status.
 */
import { uuidv7 } from '../../core/ids.js';
import type { FailureRecord, TaskProgress } from '../../core/task.js';
import { progressValues } from '../rows.js';
import { isTerminal, TaskStatus } from '../../core/status.js';
import {
  attemptBaseAfterSql,
  attemptOutcomeName,
  delayOf,
  finishTimeAfterKindSql,
  hasFailure,
  isFailureKind,
  isSuccess,
  lastErrorCodeSql,
  fenceSql,
  literal,
  STATUS_SQL,
  statusAfterKindSql,
} from '../rules/index.js';
import type { AttemptOutcome, AttemptOutcomeName, DeadLetterRef } from '../types.js';
import { statement, type Db } from './connection.js';
import { toSqliteTime } from './encode.js';

type Kind = AttemptOutcome['kind'];

const FENCE = `id = @id AND ${fenceSql('@worker', '@attempt', '@token')}`;
const PROGRESS_SET = `progress_total = COALESCE(@p0, progress_total), progress_processed = COALESCE(@p1, progress_processed),
  progress_succeeded = COALESCE(@p2, progress_succeeded), progress_failed = COALESCE(@p3, progress_failed),
  progress_skipped = COALESCE(@p4, progress_skipped), progress_message = CASE WHEN @p0 IS NULL THEN progress_message ELSE @p5 END`;

/** One UPDATE per kind: its new status, finish_time when that status is final, and the kind's own columns. */
function finishSql(kind: Kind): string {
  const status = statusAfterKindSql(kind, 'status');
  const finished = finishTimeAfterKindSql(kind, 'status', '@now');
  const own: Record<Kind, string> = {
    SUCCESS: 'artifact_id = @artifact, result_json = @result,',
    PARTIAL_SUCCESS: 'artifact_id = @artifact, result_json = @result,',
    RETRY: `available_at = CASE WHEN (${status}) = ${STATUS_SQL.RETRY_WAIT} THEN @availableAt ELSE available_at END,`,
    FAILED: '',
    CANCELLED: '',
    RELEASED: '',
    SNOOZED: `available_at = CASE WHEN (${status}) = ${STATUS_SQL.QUEUED} THEN @availableAt ELSE available_at END,`,
  };
  const lastError = lastErrorCodeSql(literal(kind), isFailureKind(kind) ? '@code' : 'NULL');
  return `UPDATE system_async_task SET status = ${status}, finish_time = ${finished}, ${own[kind]} last_error_code = ${lastError},
    attempt_base = ${attemptBaseAfterSql(literal(kind))},
    lease_owner = NULL, lease_until = NULL, update_time = @now, ${PROGRESS_SET} WHERE ${FENCE} RETURNING status, flow_id, sequence_key`;
}

const STATEMENTS = new Map<Kind, string>();

/** Writes one outcome; false when the lease is gone. A dead letter it makes is added to `deadLetters`. */
/** `ended`: the ids of the flow tasks this outcome ended (their children settle after the batch). */
export function finishOutcome(db: Db, outcome: AttemptOutcome, now: string, nowMs: number, deadLetters: DeadLetterRef[], ended: string[]): boolean {
  const { lease } = outcome;
  let sql = STATEMENTS.get(outcome.kind);
  if (sql === undefined) STATEMENTS.set(outcome.kind, (sql = finishSql(outcome.kind)));
  const params: Record<string, unknown> = {
    id: lease.taskId,
    worker: lease.workerId,
    attempt: lease.attempt,
    token: lease.token,
    now,
    ...progressParams(outcome.progress),
  };
  if (isSuccess(outcome)) {
    params.artifact = outcome.artifactId;
    params.result = outcome.resultJson;
  }
  if (hasFailure(outcome)) params.code = outcome.failure.errorCode;
  const delay = delayOf(outcome);
  if (delay !== null) params.availableAt = toSqliteTime(nowMs + delay);
  const row = statement(db, sql).get(params) as { status: string; flow_id: string | null; sequence_key: string | null } | undefined;
  if (!row) return false;
  const failure = hasFailure(outcome) ? outcome.failure : null;
  closeAttempt(db, lease.taskId, lease.attempt, attemptOutcomeName(outcome.kind), failure?.errorCode ?? null, now);
  if (failure) insertFailure(db, lease.taskId, lease.attempt, failure, now);
  if (failure && row.status === TaskStatus.FAILED) deadLetters.push({ taskId: lease.taskId, deadLetterId: insertDeadLetter(db, lease.taskId, failure, now) });
  // Only a task in a flow has edges to settle (every task an edge names is in one: flows.ts), only a sequenced one a key.
  if ((row.flow_id !== null || row.sequence_key !== null) && isTerminal(row.status as TaskStatus)) ended.push(lease.taskId);
  return true;
}

const NO_PROGRESS = Object.freeze({ p0: null, p1: null, p2: null, p3: null, p4: null, p5: null });

function progressParams(progress: TaskProgress | null): Record<string, unknown> {
  if (progress === null) return NO_PROGRESS;
  const [p0, p1, p2, p3, p4, p5] = progressValues(progress);
  return { p0, p1, p2, p3, p4, p5 };
}

export function closeAttempt(db: Db, taskId: string, attempt: number, outcome: AttemptOutcomeName, errorCode: string | null, now: string): void {
  statement(db, 'UPDATE system_async_task_attempt SET finished_at = ?, outcome = ?, error_code = ? WHERE task_id = ? AND attempt = ?').run(
    now,
    outcome,
    errorCode,
    taskId,
    attempt,
  );
}

export function insertFailure(db: Db, taskId: string, attempt: number, failure: FailureRecord, now: string): void {
  statement(
    db,
    `INSERT INTO system_async_task_failure (id, task_id, attempt, error_code, error_message, trace_id, retryable, failed_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(uuidv7(), taskId, attempt, failure.errorCode, failure.message, failure.traceId, failure.retryable ? 1 : 0, now);
}

/** Copies a FAILED task's payload and last failure into the dead-letter table; returns the dead letter's id. */
export function insertDeadLetter(db: Db, taskId: string, failure: FailureRecord, now: string): string {
  const id = uuidv7();
  statement(
    db,
    `INSERT INTO system_async_task_dead_letter (id, original_task_id, task_type, owner, payload_json, error_code, error_message,
       trace_id, attempt_count, moved_at)
     SELECT ?, id, task_type, owner, payload_json, ?, ?, COALESCE(?, trace_id), attempt_count, ? FROM system_async_task WHERE id = ?`,
  ).run(id, failure.errorCode, failure.message, failure.traceId, now, taskId);
  return id;
}
