/**
 * An outcome write whose reply was lost (the connection died mid-commit, the
 * database crashed after the commit) may have committed. Its retry then finds
 * the lease already closed and answers "not applied" — by our own earlier
 * write, not by another worker. Before reporting a lost lease the writer asks
 * the database which it was (issue 11, F2):
 *
 * - the task row still shows this attempt closed with this outcome (same
 *   attempt count, the status the outcome produces, no lease); or, when the
 *   task has moved on since (a retry already claimed again),
 * - the attempt's history row, closed by this worker with this outcome's name
 *   (and error code). The sweep closes an expired attempt as LEASE_EXPIRED,
 *   so it is never mistaken for ours.
 *
 * RELEASED (a hand-back at shutdown) and SNOOZED leave the row QUEUED, which
 * a sweep's requeue also does: only the attempt row can tell them apart.
 */
import { Scope } from '../core/scope.js';
import type { TaskStatus } from '../core/status.js';
import { attemptOutcomeName, hasFailure, isUncharged, statusAfterOutcome } from '../store/rules/outcomes.js';
import type { AttemptOutcome, Store } from '../store/types.js';

/** The statuses the outcome's own write leaves (from RUNNING, or CANCEL_REQUESTED), by the stores' one rule. */
function statusesAfter(kind: AttemptOutcome['kind']): readonly TaskStatus[] {
  return isUncharged(kind) ? [] : [statusAfterOutcome(kind, 'RUNNING'), statusAfterOutcome(kind, 'CANCEL_REQUESTED')];
}

/** True when the database shows that this outcome was written (by an earlier try of the same write). */
export async function outcomeCommitted(store: Store, outcome: AttemptOutcome): Promise<boolean> {
  const { lease } = outcome;
  const errorCode = hasFailure(outcome) ? outcome.failure.errorCode : null;
  const task = await store.getTask({ id: lease.taskId, scope: Scope.global() });
  if (task === null) return false;
  if (
    task.attemptCount === lease.attempt &&
    task.leaseOwner === null &&
    statusesAfter(outcome.kind).includes(task.status) &&
    (errorCode === null || task.lastErrorCode === errorCode)
  )
    return true;
  const attempt = (await store.listAttempts({ taskId: lease.taskId })).find((row) => row.attempt === lease.attempt);
  return (
    attempt !== undefined &&
    attempt.workerId === lease.workerId &&
    attempt.outcome === attemptOutcomeName(outcome.kind) &&
    (errorCode === null || attempt.errorCode === errorCode)
  );
}
