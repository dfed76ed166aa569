/**
 * The column rules of status changes that are not outcomes: an operator's
 * change (pause, resume, cancel, retry), a dead letter's replay, a worker's
 * hand-back of never-started tasks; and the renewal answer.
 */
import { InvalidOptionsError } from '../../core/errors.js';
import { isTaskStatus, type TaskStatus } from '../../core/status.js';
import type { Lease } from '../../core/task.js';
import type { RenewResult } from '../types.js';
import { STATUS_SQL } from './sql.js';

// ---- hand-back of never-started tasks (releaseTasks) ---------------------------

/**
 * A prefetched task handed back goes back uncharged: QUEUED (or CANCELLED
 * when a cancel was requested meanwhile), attempt_base + 1 (attempt_count is
 * the fencing number and only grows: the next claim gets a new one, so no
 * late write of this lease can land on it), start_time cleared when no
 * attempt of this cycle remains. Ordered so that MySQL, which assigns left to
 * right, still reads the old status and base.
 */
export function releaseAssignments(now: string, row = ''): string[] {
  const c = (column: string): string => `${row}${column}`;
  return [
    `finish_time = CASE ${c('status')} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${now} ELSE NULL END`,
    `start_time = CASE WHEN ${c('attempt_count')} - 1 = ${c('attempt_base')} THEN NULL ELSE ${c('start_time')} END`,
    `status = CASE ${c('status')} WHEN ${STATUS_SQL.CANCEL_REQUESTED} THEN ${STATUS_SQL.CANCELLED} ELSE ${STATUS_SQL.QUEUED} END`,
    `attempt_base = ${c('attempt_base')} + 1`,
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
  // A task sent back to the queue whose parents have not all ended waits for them (rules/flows.ts).
  const status =
    params.to === 'QUEUED'
      ? `CASE WHEN COALESCE(${row}pending_parents, 0) > 0 THEN ${STATUS_SQL.BLOCKED} ELSE ${STATUS_SQL.QUEUED} END`
      : STATUS_SQL[params.to];
  const sets = [`status = ${status}`, `update_time = ${sql.now}`];
  if (params.to === 'QUEUED' || params.to === 'CANCELLED') sets.push('lease_owner = NULL', 'lease_until = NULL');
  if (params.to === 'QUEUED') sets.push('finish_time = NULL');
  if (params.to === 'CANCELLED') sets.push(`finish_time = ${sql.now}`);
  if (params.newCycle) sets.push(`attempt_base = ${row}attempt_count`);
  if (sql.availableAt) sets.push(`available_at = ${sql.availableAt}`);
  return sets;
}

/** The status changeStatusAssignments leaves: QUEUED is BLOCKED while the task has parents pending. */
export function statusAfterChange(to: TaskStatus, pendingParents: number): TaskStatus {
  return to === 'QUEUED' && pendingParents > 0 ? 'BLOCKED' : to;
}

/** A dead letter's replay: its FAILED task goes back to QUEUED with a fresh attempt cycle, available now. */
export function replayAssignments(now: string, row = ''): string[] {
  return changeStatusAssignments({ to: 'QUEUED', newCycle: true }, { now, availableAt: now, row });
}
export const REPLAYABLE_STATUS = STATUS_SQL.FAILED;

// ---- renewal -------------------------------------------------------------------------

/** A lease as one key: a stranger asking about a task someone else holds must not be told it holds it. */
export function leaseKey(taskId: string, workerId: string, attempt: number, token: string): string {
  return JSON.stringify([taskId, workerId, attempt, token]);
}

/**
 * The renewal answer from the rows the fenced renewal touched (keyed by
 * leaseKey, with their status): RUNNING → renewed, CANCEL_REQUESTED → renewed
 * but cancel requested, not touched → lost.
 */
export function renewalAnswer(leases: readonly Lease[], held: ReadonlyMap<string, string>): RenewResult {
  const result: RenewResult = { renewed: [], cancelRequested: [], lost: [] };
  for (const lease of leases) {
    const status = held.get(leaseKey(lease.taskId, lease.workerId, lease.attempt, lease.token));
    if (status === undefined) result.lost.push(lease.taskId);
    else if (status === 'CANCEL_REQUESTED') result.cancelRequested.push(lease.taskId);
    else result.renewed.push(lease.taskId);
  }
  return result;
}
