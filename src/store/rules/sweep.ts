/**
 * The recovery sweep's rules: what becomes of an expired lease (requeued
 * with attempts left, failed and dead-lettered when spent, cancelled when a
 * cancel was requested), what it costs, the failures it records and their
 * messages.
 *
 * What an expired lease costs (issue 11, B3): a crash kills every task its
 * process held, and nothing tells which one caused it. So a task's first
 * QUARANTINE_AFTER_LEASE_EXPIRIES expiries cost no attempt (attempt_base + 1,
 * as a hand-back); from then on the task runs alone (the worker's rule,
 * core/task.ts isQuarantined) and a lease it loses is its own: it spends an
 * attempt. A poison pill is dead-lettered after QUARANTINE_AFTER + maxAttempts
 * crashes; its neighbours lose no attempt to it.
 */
import { ErrorCode } from '../../core/errors.js';
import { AttemptOutcomeName, IDLE_STATUSES } from '../../core/status.js';
import { QUARANTINE_AFTER_LEASE_EXPIRIES, type FailureRecord } from '../../core/task.js';
import type { RecoveryResult } from '../types.js';
import { literal, STATUS_SQL, statusList } from './sql.js';

export const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped renewing it (crashed, stalled or partitioned)';
export const DEADLINE_MESSAGE = 'deadline passed before the task could run';
export const LEASE_EXPIRED_SQL = literal(ErrorCode.LEASE_EXPIRED);
export const DEADLINE_EXCEEDED_SQL = literal(ErrorCode.DEADLINE_EXCEEDED);
/** The attempt outcome of an expired lease, as SQL. */
export const LEASE_EXPIRED_OUTCOME_SQL = literal(AttemptOutcomeName.LEASE_EXPIRED);

export function leaseExpiredFailure(retryable: boolean): FailureRecord {
  return { errorCode: ErrorCode.LEASE_EXPIRED, message: LEASE_EXPIRED_MESSAGE, traceId: null, retryable };
}

/**
 * What the deadline step fails once deadline_at has passed: every task no worker holds, PAUSED included —
 * a paused task cannot be run in time any more either, and left out it would stay PAUSED forever (F7).
 */
export const OVERDUE_SQL = statusList(IDLE_STATUSES);

export const DEADLINE_FAILURE: FailureRecord = Object.freeze({
  errorCode: ErrorCode.DEADLINE_EXCEEDED,
  message: DEADLINE_MESSAGE,
  traceId: null,
  retryable: false,
});

export interface ExpiredLeaseRow {
  status: string;
  attempt_count: unknown;
  attempt_base: unknown;
  max_attempts: unknown;
  lease_expiries: unknown;
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

/** An expiry is free while the task has not yet lost QUARANTINE_AFTER leases (it did not run alone). */
function freeExpiry(leaseExpiries: number): boolean {
  return leaseExpiries < QUARANTINE_AFTER_LEASE_EXPIRIES;
}
const FREE_EXPIRY_SQL = (row: string): string => `CASE WHEN ${row}lease_expiries < ${QUARANTINE_AFTER_LEASE_EXPIRIES} THEN 1 ELSE 0 END`;

/**
 * The columns an expired lease changes besides status and lease, as SQL over
 * the row before the change. In this order: MySQL assigns left to right, so
 * attempt_base must read lease_expiries before it grows.
 */
export function expiredLeaseAssignments(row = ''): string[] {
  return [`attempt_base = ${row}attempt_base + ${FREE_EXPIRY_SQL(row)}`, `lease_expiries = ${row}lease_expiries + 1`];
}

/** What the sweep does with an expired lease. */
export function expiredLeaseDecision(row: ExpiredLeaseRow): ExpiredLeaseDecision {
  if (row.status === 'CANCEL_REQUESTED') {
    return { status: 'CANCELLED', finished: true, deadLetter: false, attemptOutcome: 'CANCELLED', failure: null };
  }
  const base = Number(row.attempt_base) + (freeExpiry(Number(row.lease_expiries)) ? 1 : 0);
  const spent = Number(row.attempt_count) - base >= Number(row.max_attempts);
  return {
    status: spent ? 'FAILED' : 'QUEUED',
    finished: spent,
    deadLetter: spent,
    attemptOutcome: AttemptOutcomeName.LEASE_EXPIRED,
    failure: leaseExpiredFailure(!spent),
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
                  WHEN ${row}attempt_count - ${row}attempt_base - ${FREE_EXPIRY_SQL(row)} >= ${row}max_attempts THEN ${STATUS_SQL.FAILED}
                  ELSE ${STATUS_SQL.QUEUED} END`;
}
