/**
 * The business rules every store obeys, written once. A dialect calls these
 * functions (code that decides in JavaScript) or interpolates the SQL text
 * they render (statements that decide inside the database); it keeps only
 * what is truly its own: statement shapes, locking, batching and its
 * driver's error codes. Status names appear in SQL only through this module
 * (and the frozen migration texts, which record what was once applied).
 */
import { ErrorCode, InvalidOptionsError } from '../core/errors.js';
import { GLOBAL_POLICY_KEY } from '../core/policy-keys.js';
import {
  AttemptOutcomeName, canTransition, isTaskStatus, LEASED_STATUSES, TaskStatus, TERMINAL_STATUSES,
} from '../core/status.js';
import type { FailureRecord } from '../core/task.js';
import type { AttemptOutcome, RecoveryResult, RenewResult } from './types.js';

// ---- SQL text of statuses, status sets and policy keys ---------------------

/** A string constant of this codebase as an SQL literal (never user input: no escaping is needed or done). */
function literal(text: string): string {
  return `'${text}'`;
}

/** Every status as its SQL literal: `STATUS_SQL.RUNNING` is `'RUNNING'`. */
export const STATUS_SQL = Object.fromEntries(Object.values(TaskStatus).map((status) => [status, literal(status)])) as {
  readonly [K in TaskStatus]: string;
};

/** A list of statuses as SQL: `('RUNNING','CANCEL_REQUESTED')`. */
export function statusList(statuses: readonly TaskStatus[]): string {
  return `(${statuses.map(literal).join(',')})`;
}

/** Held by a worker: every fenced write requires one of these. */
export const LEASED_SQL = statusList(LEASED_STATUSES);
export const LEASED_STATUSES_SET: ReadonlySet<string> = new Set(LEASED_STATUSES);
/** What a claim may take (when due and before its deadline). */
const CLAIMABLE_STATUSES: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT'];
export const CLAIMABLE_SQL = statusList(CLAIMABLE_STATUSES);
export const TERMINAL_SQL = statusList(TERMINAL_STATUSES);
/** Ends that keep a result and an artifact. */
export const SUCCESS_STATUSES: readonly TaskStatus[] = ['SUCCESS', 'PARTIAL_SUCCESS'];

/** The GLOBAL policy key as SQL, and the prefix of a type's key (`'TYPE:' || task_type`). */
export const GLOBAL_POLICY_SQL = literal(GLOBAL_POLICY_KEY);
export const TYPE_POLICY_PREFIX_SQL = literal('TYPE:');

// ---- attempt outcomes ----------------------------------------------------------

type OutcomeKind = AttemptOutcome['kind'];

/** A RETRY is a failed attempt (the task will run again); every other kind names its attempt's end itself. */
export function attemptOutcomeName(kind: OutcomeKind): AttemptOutcomeName {
  return kind === 'RETRY' ? 'FAILED' : kind;
}

/** attemptOutcomeName as SQL over a column holding the kind. */
export function attemptOutcomeSql(kindColumn: string): string {
  return `CASE ${kindColumn} WHEN ${literal('RETRY')} THEN ${literal(attemptOutcomeName('RETRY'))} ELSE ${kindColumn} END`;
}

/** Outcomes that carry a result (and an artifact): the successful ones. */
export function isSuccess(outcome: AttemptOutcome): outcome is Extract<AttemptOutcome, { result: unknown }> {
  return outcome.kind === 'SUCCESS' || outcome.kind === 'PARTIAL_SUCCESS';
}

/** Outcomes that carry a failure: it is recorded (failure row, last_error_code, the attempt's error_code). */
export function hasFailure(outcome: AttemptOutcome): outcome is Extract<AttemptOutcome, { failure: FailureRecord }> {
  return outcome.kind === 'RETRY' || outcome.kind === 'FAILED';
}
export const FAILURE_KINDS_SQL = `(${literal('RETRY')},${literal('FAILED')})`;
export const SUCCESS_KINDS_SQL = `(${literal('SUCCESS')},${literal('PARTIAL_SUCCESS')})`;

// ---- outcome → status ------------------------------------------------------------

/** Where an outcome sends a RUNNING task. */
const OUTCOME_STATUS: Readonly<Record<OutcomeKind, TaskStatus>> = {
  SUCCESS: 'SUCCESS',
  PARTIAL_SUCCESS: 'PARTIAL_SUCCESS',
  RETRY: 'RETRY_WAIT',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  ABANDONED: 'QUEUED',
};
const OUTCOME_KINDS = Object.keys(OUTCOME_STATUS) as OutcomeKind[];

/**
 * The status an outcome leaves a leased task in. A task with a cancel request
 * may only end as the transition table allows from CANCEL_REQUESTED (cancelled,
 * or in success): a failure or hand-back on it cancels it (the failure is still
 * recorded).
 */
export function statusAfterOutcome(kind: OutcomeKind, current: TaskStatus): TaskStatus {
  const target = OUTCOME_STATUS[kind];
  return current === 'CANCEL_REQUESTED' && !canTransition('CANCEL_REQUESTED', target) ? 'CANCELLED' : target;
}

/** Kinds that a cancel request turns into CANCELLED. */
const CANCELLED_ON_REQUEST = OUTCOME_KINDS.filter((kind) => statusAfterOutcome(kind, 'CANCEL_REQUESTED') !== OUTCOME_STATUS[kind]);

/** statusAfterOutcome as SQL: `kind` is a column or a literal, `current` the row's status before the write. */
export function statusAfterOutcomeSql(kind: string, current: string): string {
  const whens = OUTCOME_KINDS.map((k) => `WHEN ${literal(k)} THEN ${STATUS_SQL[OUTCOME_STATUS[k]]}`).join(' ');
  const cancelled = CANCELLED_ON_REQUEST.map(literal).join(',');
  return `CASE WHEN ${current} = ${STATUS_SQL.CANCEL_REQUESTED} AND ${kind} IN (${cancelled}) THEN ${STATUS_SQL.CANCELLED} ELSE CASE ${kind} ${whens} END END`;
}

/** statusAfterOutcome for one known kind as SQL: a constant where no cancel request can change it. */
export function statusAfterKindSql(kind: OutcomeKind, current: string): string {
  if (!CANCELLED_ON_REQUEST.includes(kind)) return STATUS_SQL[OUTCOME_STATUS[kind]];
  return `CASE ${current} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${STATUS_SQL.CANCELLED} ELSE ${STATUS_SQL[OUTCOME_STATUS[kind]]} END`;
}

/** finish_time after one known kind as SQL: set (`now`) when the task ends for good, else kept. */
export function finishTimeAfterKindSql(kind: OutcomeKind, current: string, now: string): string {
  const plain = TERMINAL_STATUSES.includes(OUTCOME_STATUS[kind]);
  if (plain || !CANCELLED_ON_REQUEST.includes(kind)) return plain ? now : 'finish_time';
  return `CASE ${current} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${now} ELSE finish_time END`;
}

// ---- hand-back of never-started tasks (releaseTasks) ---------------------------

/**
 * A prefetched task handed back goes back as if never claimed: QUEUED (or
 * CANCELLED when a cancel was requested meanwhile), attempt_count − 1,
 * start_time cleared when no attempt of this cycle remains. Ordered so that
 * MySQL, which assigns left to right, still reads the old status and count.
 */
export function releaseAssignments(now: string, row = ''): string[] {
  const c = (column: string): string => `${row}${column}`;
  return [
    `finish_time = CASE ${c('status')} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${now} ELSE NULL END`,
    `start_time = CASE WHEN ${c('attempt_count')} - 1 = ${c('attempt_base')} THEN NULL ELSE ${c('start_time')} END`,
    `status = CASE ${c('status')} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${STATUS_SQL.CANCELLED} ELSE ${STATUS_SQL.QUEUED} END`,
    `attempt_count = ${c('attempt_count')} - 1`,
    'lease_owner = NULL',
    'lease_until = NULL',
    `update_time = ${now}`,
  ];
}

// ---- operator status changes (changeStatus) ------------------------------------

/** `to` must be a status: it is written into SQL text. */
export function checkStatusTarget(to: unknown): asserts to is TaskStatus {
  if (!isTaskStatus(to)) throw new InvalidOptionsError('changeStatus', 'to', `is not a status: ${String(to)}`);
}

/**
 * The column rules of a status change by target: QUEUED clears the lease and
 * finish_time (newCycle: attempt_base = attempt_count); CANCELLED clears the
 * lease and sets finish_time; PAUSED and CANCEL_REQUESTED change the status
 * only. `availableAt` (an SQL expression) reschedules.
 */
export function changeStatusAssignments(
  params: { to: TaskStatus; newCycle?: boolean },
  sql: { now: string; availableAt?: string | null; row?: string },
): string[] {
  checkStatusTarget(params.to);
  const row = sql.row ?? '';
  const sets = [`status = ${STATUS_SQL[params.to]}`, `update_time = ${sql.now}`];
  if (params.to === 'QUEUED' || params.to === 'CANCELLED') sets.push('lease_owner = NULL', 'lease_until = NULL');
  if (params.to === 'QUEUED') sets.push('finish_time = NULL');
  if (params.to === 'CANCELLED') sets.push(`finish_time = ${sql.now}`);
  if (params.newCycle) sets.push(`attempt_base = ${row}attempt_count`);
  if (sql.availableAt) sets.push(`available_at = ${sql.availableAt}`);
  return sets;
}

/** A dead letter's replay: its FAILED task goes back to QUEUED with a fresh attempt cycle, available now. */
export function replayAssignments(now: string, row = ''): string[] {
  return changeStatusAssignments({ to: 'QUEUED', newCycle: true }, { now, availableAt: now, row });
}
export const REPLAYABLE_STATUS = STATUS_SQL.FAILED;

// ---- the recovery sweep ------------------------------------------------------------

export const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped renewing it (crashed, stalled or partitioned)';
export const DEADLINE_MESSAGE = 'deadline passed before the task could run';
export const LEASE_EXPIRED_SQL = literal(ErrorCode.LEASE_EXPIRED);
export const DEADLINE_EXCEEDED_SQL = literal(ErrorCode.DEADLINE_EXCEEDED);
/** The attempt outcome of an expired lease, as SQL. */
export const LEASE_EXPIRED_OUTCOME_SQL = literal(AttemptOutcomeName.LEASE_EXPIRED);

export function leaseExpiredFailure(retryable: boolean): FailureRecord {
  return { errorCode: ErrorCode.LEASE_EXPIRED, message: LEASE_EXPIRED_MESSAGE, traceId: null, retryable };
}

export const DEADLINE_FAILURE: FailureRecord = Object.freeze({
  errorCode: ErrorCode.DEADLINE_EXCEEDED, message: DEADLINE_MESSAGE, traceId: null, retryable: false,
});

export interface ExpiredLeaseRow {
  status: string;
  attempt_count: unknown;
  attempt_base: unknown;
  max_attempts: unknown;
}

export interface ExpiredLeaseDecision {
  /** CANCELLED (a cancel was requested), QUEUED (attempts left) or FAILED (spent). */
  status: 'CANCELLED' | 'QUEUED' | 'FAILED';
  /** The task ends for good: finish_time is set. */
  finished: boolean;
  /** Spent: the payload goes to the dead-letter table. */
  deadLetter: boolean;
  attemptOutcome: AttemptOutcomeName;
  /** Recorded as a failure row unless the task was being cancelled. */
  failure: FailureRecord | null;
}

/** What the sweep does with an expired lease. */
export function expiredLeaseDecision(row: ExpiredLeaseRow): ExpiredLeaseDecision {
  if (row.status === 'CANCEL_REQUESTED') {
    return { status: 'CANCELLED', finished: true, deadLetter: false, attemptOutcome: 'CANCELLED', failure: null };
  }
  const spent = Number(row.attempt_count) - Number(row.attempt_base) >= Number(row.max_attempts);
  return {
    status: spent ? 'FAILED' : 'QUEUED', finished: spent, deadLetter: spent,
    attemptOutcome: AttemptOutcomeName.LEASE_EXPIRED, failure: leaseExpiredFailure(!spent),
  };
}

/** The sweep's counts of expired leases by what became of them. */
export function tallyExpired(decisions: readonly ExpiredLeaseDecision[]): Pick<RecoveryResult, 'requeued' | 'failed' | 'cancelled'> {
  const count = (status: ExpiredLeaseDecision['status']) => decisions.filter((d) => d.status === status).length;
  return { requeued: count('QUEUED'), failed: count('FAILED'), cancelled: count('CANCELLED') };
}

/** expiredLeaseDecision's status as SQL over the row (alias `row`, e.g. 't.'). */
export function expiredLeaseStatusSql(row = ''): string {
  return `CASE WHEN ${row}status = ${STATUS_SQL.CANCEL_REQUESTED} THEN ${STATUS_SQL.CANCELLED}
                  WHEN ${row}attempt_count - ${row}attempt_base >= ${row}max_attempts THEN ${STATUS_SQL.FAILED}
                  ELSE ${STATUS_SQL.QUEUED} END`;
}

// ---- renewal -------------------------------------------------------------------------

/** A lease as one key: a stranger asking about a task someone else holds must not be told it holds it. */
export function leaseKey(taskId: string, workerId: string, attempt: number): string {
  return JSON.stringify([taskId, workerId, attempt]);
}

/**
 * The renewal answer from the rows the fenced renewal touched (keyed by
 * leaseKey, with their status): RUNNING → renewed, CANCEL_REQUESTED → renewed
 * but cancel requested, not touched → lost.
 */
export function renewalAnswer(
  leases: readonly { taskId: string; workerId: string; attempt: number }[],
  held: ReadonlyMap<string, string>,
): RenewResult {
  const result: RenewResult = { renewed: [], cancelRequested: [], lost: [] };
  for (const lease of leases) {
    const status = held.get(leaseKey(lease.taskId, lease.workerId, lease.attempt));
    if (status === undefined) result.lost.push(lease.taskId);
    else if (status === 'CANCEL_REQUESTED') result.cancelRequested.push(lease.taskId);
    else result.renewed.push(lease.taskId);
  }
  return result;
}
