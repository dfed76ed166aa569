/**
 * What an attempt's outcome does to its task, once for every dialect: the
 * status it leads to (a cancel request ends it CANCELLED unless it
 * succeeded), finish_time, the attempt row's outcome name, and which
 * outcomes carry a result or a failure. As functions for dialects that
 * decide in code, as SQL for those that decide in a statement.
 */
import { AttemptOutcomeName, canTransition, TaskStatus, TERMINAL_STATUSES } from '../../core/status.js';
import type { FailureRecord } from '../../core/task.js';
import type { AttemptOutcome } from '../types.js';
import { literal, STATUS_SQL } from './sql.js';

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
export function isSuccess(outcome: AttemptOutcome): outcome is Extract<AttemptOutcome, { resultJson: string | null }> {
  return outcome.kind === 'SUCCESS' || outcome.kind === 'PARTIAL_SUCCESS';
}

/** Outcomes that carry a failure: it is recorded (failure row, last_error_code, the attempt's error_code). */
export function hasFailure(outcome: AttemptOutcome): outcome is Extract<AttemptOutcome, { failure: FailureRecord }> {
  return isFailureKind(outcome.kind);
}
export function isFailureKind(kind: OutcomeKind): kind is 'RETRY' | 'FAILED' {
  return kind === 'RETRY' || kind === 'FAILED';
}
export const FAILURE_KINDS_SQL = `(${literal('RETRY')},${literal('FAILED')})`;
export const SUCCESS_KINDS_SQL = `(${literal('SUCCESS')},${literal('PARTIAL_SUCCESS')})`;

/**
 * last_error_code after an outcome, as SQL over the kind (a column or a
 * literal): a failure's code; a success clears it (the failure table keeps
 * the history, and a SUCCESS row that still says LEASE_EXPIRED misleads);
 * anything else leaves it.
 */
export function lastErrorCodeSql(kind: string, failureCode: string, current = 'last_error_code'): string {
  return `CASE WHEN ${kind} IN ${FAILURE_KINDS_SQL} THEN ${failureCode} WHEN ${kind} IN ${SUCCESS_KINDS_SQL} THEN NULL ELSE ${current} END`;
}

// ---- what an attempt costs ---------------------------------------------------------

/**
 * Attempts spent in a cycle are attempt_count − attempt_base. attempt_count
 * is also the fencing number and must only grow, so an attempt that costs
 * nothing is given back by raising attempt_base instead: a hand-back by a
 * stopping worker (RELEASED) and a snooze are not failures.
 */
const UNCHARGED_KINDS: readonly OutcomeKind[] = ['RELEASED', 'SNOOZED'];
export const UNCHARGED_KINDS_SQL = `(${UNCHARGED_KINDS.map(literal).join(',')})`;

export function isUncharged(kind: OutcomeKind): boolean {
  return UNCHARGED_KINDS.includes(kind);
}

/** attempt_base after an outcome, as SQL over the kind (a column or a literal). */
export function attemptBaseAfterSql(kind: string, current = 'attempt_base'): string {
  return `CASE WHEN ${kind} IN ${UNCHARGED_KINDS_SQL} THEN ${current} + 1 ELSE ${current} END`;
}

/** Outcomes that set when the task may run again (their delay counts on the database clock). */
export function delayOf(outcome: AttemptOutcome): number | null {
  if (outcome.kind === 'RETRY') return Math.max(0, outcome.retryDelayMs);
  if (outcome.kind === 'SNOOZED') return Math.max(0, outcome.delayMs);
  return null;
}
export const DELAYED_KINDS_SQL = `(${literal('RETRY')},${literal('SNOOZED')})`;

/**
 * Kinds written by an older release that a newer one still accepts (the
 * PostgreSQL outcome function serves every process during a rolling
 * upgrade): ABANDONED was the hand-back, now RELEASED.
 */
export function currentKindSql(kind: string): string {
  return `CASE ${kind} WHEN ${literal('ABANDONED')} THEN ${literal('RELEASED')} ELSE ${kind} END`;
}

// ---- outcome → status ------------------------------------------------------------

/** Where an outcome sends a RUNNING task. */
const OUTCOME_STATUS: Readonly<Record<OutcomeKind, TaskStatus>> = {
  SUCCESS: 'SUCCESS',
  PARTIAL_SUCCESS: 'PARTIAL_SUCCESS',
  RETRY: 'RETRY_WAIT',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  RELEASED: 'QUEUED',
  SNOOZED: 'QUEUED',
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
