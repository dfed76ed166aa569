/**
 * Row ↔ model mapping shared by every dialect. Column names are the seed's
 * (DESIGN.md §2) and identical across dialects; only how a dialect encodes
 * times, booleans and JSON differs, and that is passed in as `decode`.
 */
import { isTaskStatus, TaskStatus } from '../core/status.js';
import type { NewTask, Task, TaskProgress } from '../core/task.js';
import type { TaskLogLevel } from '../core/logs.js';
import { uniqueHoldOf } from './rules/unique.js';
import { initialStatus } from './rules/flows.js';
import { sequenceBlocked, type SequenceOnDeadLetter, type SequenceSummary } from './rules/sequences.js';
import type {
  AttemptOutcomeName,
  AttemptRecord,
  DeadLetter,
  DependencyLink,
  DependencyRecord,
  FailureRow,
  OnParentFailure,
  Policy,
  StepRecord,
  TaskLogRecord,
  TaskActionName,
  TaskActionRecord,
  TaskDependencies,
  WorkerRecord,
} from './types.js';

export interface Decode {
  /** A time column (never null here) to a Date. */
  time(value: unknown): Date;
  /** A JSON column: text on SQLite and MySQL, already parsed on PostgreSQL jsonb. */
  json(value: unknown): unknown;
}

export type Row = Record<string, unknown>;

export function taskFromRow(row: Row, decode: Decode): Task {
  const status = String(row.status);
  if (!isTaskStatus(status)) throw new Error(`unknown status ${status} in system_async_task row ${String(row.id)}`);
  return {
    id: String(row.id),
    taskType: String(row.task_type),
    status: status as TaskStatus,
    priority: Number(row.priority),
    payload: decode.json(row.payload_json),
    availableAt: decode.time(row.available_at),
    deadlineAt: optionalTime(row.deadline_at, decode),
    leaseOwner: optionalString(row.lease_owner),
    leaseUntil: optionalTime(row.lease_until, decode),
    leaseToken: row.lease_owner === null || row.lease_owner === undefined ? null : String(row.lease_token ?? ''),
    attemptCount: Number(row.attempt_count),
    attemptBase: Number(row.attempt_base),
    maxAttempts: Number(row.max_attempts),
    leaseExpiries: Number(row.lease_expiries ?? 0),
    artifactId: optionalString(row.artifact_id),
    owner: optionalString(row.owner),
    idempotencyKey: optionalString(row.idempotency_key),
    progress: progressFromRow(row),
    result: row.result_json === null || row.result_json === undefined ? null : decode.json(row.result_json),
    lastErrorCode: optionalString(row.last_error_code),
    traceId: optionalString(row.trace_id),
    traceParent: optionalString(row.trace_parent),
    unique: uniqueHoldOf(optionalString(row.unique_key), Number(row.unique_states ?? 0), status, Number(row.attempt_count)),
    flowId: optionalString(row.flow_id),
    pendingParents: Number(row.pending_parents ?? 0),
    sequenceKey: optionalString(row.sequence_key),
    sequenceSeq: row.sequence_seq === null || row.sequence_seq === undefined ? null : Number(row.sequence_seq),
    rateKey: optionalString(row.rate_key),
    createdAt: decode.time(row.create_time),
    updatedAt: decode.time(row.update_time),
    // start_time / finish_time, not started_at / finished_at: the seed's analyze-performance.sh joins this
    // table with the attempt table and names those two unqualified, which must stay unambiguous.
    startedAt: optionalTime(row.start_time, decode),
    finishedAt: optionalTime(row.finish_time, decode),
  };
}

function progressFromRow(row: Row): TaskProgress | null {
  if (row.progress_total === null || row.progress_total === undefined) return null;
  return {
    total: Number(row.progress_total),
    processed: Number(row.progress_processed),
    succeeded: Number(row.progress_succeeded),
    failed: Number(row.progress_failed),
    skipped: Number(row.progress_skipped),
    message: optionalString(row.progress_message),
  };
}

/** The Task a fresh insert made, without reading the row back. */
export function newTaskRow(input: NewTask, availableAt: Date, createdAt: Date, unique: { key: string; states: number } | null = null): Task {
  const status = initialStatus(input);
  return {
    id: input.id,
    taskType: input.taskType,
    status,
    priority: input.priority,
    payload: JSON.parse(input.payloadJson) as unknown,
    availableAt,
    deadlineAt: input.deadlineAt,
    leaseOwner: null,
    leaseUntil: null,
    leaseToken: null,
    attemptCount: 0,
    attemptBase: 0,
    leaseExpiries: 0,
    maxAttempts: input.maxAttempts,
    artifactId: null,
    owner: input.owner,
    idempotencyKey: input.idempotencyKey,
    progress: null,
    result: null,
    lastErrorCode: null,
    traceId: input.traceId,
    traceParent: input.traceParent ?? null,
    unique: unique && uniqueHoldOf(unique.key, unique.states, status, 0),
    flowId: input.flowId ?? null,
    pendingParents: input.pendingParents ?? 0,
    sequenceKey: input.sequenceKey ?? null,
    sequenceSeq: input.sequenceSeq ?? null,
    rateKey: input.rateKey ?? null,
    createdAt,
    updatedAt: createdAt,
    startedAt: null,
    finishedAt: null,
  };
}

/** A dependency edge row (fan_out: a boolean on PostgreSQL, 0/1 elsewhere). */
export function edgeFromRow(row: Row): DependencyRecord {
  return {
    parentId: String(row.parent_id),
    childId: String(row.child_id),
    onFailure: row.on_failure as OnParentFailure,
    fanOut: row.fan_out === true || Number(row.fan_out) === 1,
    resolution: row.resolved === null || row.resolved === undefined ? null : (String(row.resolved) as DependencyRecord['resolution']),
  };
}

/** A task's edges (both ways) split into its parents and children, each with the task at its other end (`others`, by id). */
export function dependenciesOf(taskId: string, edges: readonly DependencyRecord[], others: ReadonlyMap<string, Task>): TaskDependencies {
  const link = (edge: DependencyRecord, other: string): DependencyLink => ({ ...edge, task: others.get(other) ?? null });
  return {
    parents: edges.filter((edge) => edge.childId === taskId).map((edge) => link(edge, edge.parentId)),
    children: edges.filter((edge) => edge.parentId === taskId).map((edge) => link(edge, edge.childId)),
  };
}

/** The ids at the other end of a task's edges. */
export function otherEnds(taskId: string, edges: readonly DependencyRecord[]): string[] {
  return edges.map((edge) => (edge.childId === taskId ? edge.parentId : edge.childId));
}

export function attemptFromRow(row: Row, decode: Decode): AttemptRecord {
  return {
    taskId: String(row.task_id),
    attempt: Number(row.attempt),
    workerId: String(row.worker_id),
    startedAt: decode.time(row.started_at),
    finishedAt: optionalTime(row.finished_at, decode),
    outcome: optionalString(row.outcome) as AttemptOutcomeName | null,
    errorCode: optionalString(row.error_code),
  };
}

export function actionFromRow(row: Row, decode: Decode): TaskActionRecord {
  const status = (value: unknown): TaskStatus | null => (typeof value === 'string' && isTaskStatus(value) ? value : null);
  return {
    taskId: String(row.task_id),
    action: String(row.action) as TaskActionName,
    fromStatus: status(row.from_status),
    toStatus: status(row.to_status),
    actor: String(row.actor),
    actorName: optionalString(row.actor_name),
    detail: optionalString(row.detail),
    at: decode.time(row.acted_at),
  };
}

export function stepFromRow(row: Row, decode: Decode): StepRecord {
  return {
    taskId: String(row.task_id),
    name: String(row.name),
    cycle: Number(row.cycle),
    seq: Number(row.seq),
    resultJson: optionalString(row.result_json),
    attempt: Number(row.attempt),
    workerId: String(row.worker_id),
    recordedAt: decode.time(row.recorded_at),
  };
}

export function logFromRow(row: Row, decode: Decode): TaskLogRecord {
  return {
    taskId: String(row.task_id),
    seq: Number(row.seq),
    attempt: Number(row.attempt),
    level: String(row.level) as TaskLogLevel,
    message: String(row.message),
    fieldsJson: optionalString(row.fields_json),
    dropped: Number(row.dropped),
    loggedAt: decode.time(row.logged_at),
  };
}

export function failureFromRow(row: Row, decode: Decode): FailureRow {
  return {
    id: String(row.id),
    taskId: String(row.task_id),
    attempt: Number(row.attempt),
    errorCode: String(row.error_code),
    message: String(row.error_message ?? ''),
    traceId: optionalString(row.trace_id),
    retryable: row.retryable === true || Number(row.retryable) === 1,
    failedAt: decode.time(row.failed_at),
  };
}

export function deadLetterFromRow(row: Row, decode: Decode): DeadLetter {
  return {
    id: String(row.id),
    originalTaskId: String(row.original_task_id),
    taskType: String(row.task_type),
    owner: optionalString(row.owner),
    payload: decode.json(row.payload_json),
    errorCode: String(row.error_code),
    errorMessage: String(row.error_message ?? ''),
    traceId: optionalString(row.trace_id),
    attemptCount: Number(row.attempt_count),
    movedAt: decode.time(row.moved_at),
    replayedAt: optionalTime(row.replayed_at, decode),
    replayTaskId: optionalString(row.replay_task_id),
    archivedAt: optionalTime(row.archived_at, decode),
  };
}

export function policyFromRow(row: Row, decode: Decode): Policy {
  return {
    policyKey: String(row.policy_key),
    taskType: optionalString(row.task_type),
    maxConcurrency: row.max_concurrency === null ? null : Number(row.max_concurrency),
    maxAttempts: row.max_attempts === null ? null : Number(row.max_attempts),
    retryBaseDelayMs: row.retry_base_delay_ms === null ? null : Number(row.retry_base_delay_ms),
    enabled: row.enabled === true || Number(row.enabled) === 1,
    rateLimit: row.rate_limit === null || row.rate_limit === undefined ? null : Number(row.rate_limit),
    ratePeriodMs: row.rate_period_ms === null || row.rate_period_ms === undefined ? null : Number(row.rate_period_ms),
    updatedAt: decode.time(row.update_time),
  };
}

export function workerFromRow(row: Row, decode: Decode): WorkerRecord {
  return {
    workerId: String(row.worker_id),
    host: String(row.host),
    pid: Number(row.pid),
    taskTypes: JSON.parse(String(row.task_types)) as string[],
    concurrency: Number(row.concurrency),
    startedAt: decode.time(row.started_at),
    lastSeenAt: decode.time(row.last_seen_at),
  };
}

/** Progress as column values, in the order of PROGRESS_COLUMNS. */
export const PROGRESS_COLUMNS = [
  'progress_total',
  'progress_processed',
  'progress_succeeded',
  'progress_failed',
  'progress_skipped',
  'progress_message',
] as const;

export function progressValues(progress: TaskProgress): [number, number, number, number, number, string | null] {
  return [progress.total, progress.processed, progress.succeeded, progress.failed, progress.skipped, progress.message];
}

export function emptyStatusCounts(): Record<TaskStatus, number> {
  return {
    QUEUED: 0,
    RUNNING: 0,
    RETRY_WAIT: 0,
    PAUSED: 0,
    CANCEL_REQUESTED: 0,
    CANCELLED: 0,
    SUCCESS: 0,
    PARTIAL_SUCCESS: 0,
    FAILED: 0,
    BLOCKED: 0,
  };
}

function optionalString(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function optionalTime(value: unknown, decode: Decode): Date | null {
  return value === null || value === undefined ? null : decode.time(value);
}

/** A sequence key's standing as listSequences reads it (key row, waiting count, head columns). */
export function sequenceFromRow(row: Row, decode: Decode): SequenceSummary {
  const head =
    row.id === null || row.id === undefined
      ? null
      : { id: String(row.id), taskType: String(row.task_type), status: row.status as TaskStatus, lastErrorCode: optionalString(row.last_error_code) };
  const waiting = Number(row.waiting);
  return {
    sequenceKey: String(row.sequence_key),
    onDeadLetter: row.on_dead_letter as SequenceOnDeadLetter,
    head,
    waiting,
    blocked: sequenceBlocked(head, waiting),
    updatedAt: decode.time(row.updated_at),
  };
}
