/**
 * `ctx.complete(tx, result)`: the attempt's success written inside the
 * handler's own transaction, so that its effects and the fenced outcome
 * commit or roll back together (exactly-once effects; River's JobCompleteTx).
 *
 * The write is the store's ordinary fenced outcome write, joined to the
 * caller's transaction. If the fence fails (the lease expired and another
 * worker may hold the task) it throws LEASE_LOST, so that the handler rolls
 * back and its effects never land. If it holds, the task row stays locked by
 * the caller's transaction until it ends: nobody else can take the task over
 * meanwhile. Just before the write the execution goes to `committing`, where
 * the worker neither renews the lease (a renewal would wait for that lock)
 * nor writes a second outcome. When the handler has
 * returned, the worker reads back whether the completion committed
 * (completionCommitted); a rolled-back one counts as never made.
 */
import { ErrorCode, InvalidStateError, TaskAbortedError, UnsupportedError, ValidationError } from '../core/errors.js';
import type { TaskResult } from '../core/definition.js';
import type { Store } from '../store/types.js';
import { outcomeCommitted } from './commit-doubt.js';
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { successOutcome } from './outcome.js';

export async function completeInTransaction(
  execution: Execution,
  services: { store: Store; table: ExecutionTable; leases: LeaseKeeper; resultEncoder?: () => ((taskType: string, value: unknown) => unknown) | undefined },
  transaction: unknown,
  result: TaskResult | undefined,
): Promise<void> {
  const { store, table, leases } = services;
  checkCanComplete(execution, store, transaction);
  const taskResult = result ?? { status: 'SUCCESS' };
  const context = execution.context!;
  await execution.definition.validateCompletion?.(taskResult, execution.payload, context);
  await context.settle(); // the outcome carries the final progress
  const outcome = successOutcome(execution, taskResult, services.resultEncoder?.());
  if (outcome.kind === 'FAILED') throw new ValidationError(outcome.failure.message ?? 'result is not JSON', 'result', ErrorCode.RESULT_NOT_SERIALIZABLE);
  checkCanComplete(execution, store, transaction); // an abort may have arrived while validateCompletion ran
  // Out of the heartbeat before the row is locked, and no heartbeat that asked for it still running: one that
  // did would wait for the caller's commit holding the locks of every other lease of this worker.
  // From here on the worker reads back whether this completion committed (a thrown write: it did not).
  execution.completion = outcome;
  table.moveTo(execution, 'committing');
  await leases.heartbeatsSettled();
  const { applied } = await store.finishAttempts({ outcomes: [outcome], transaction });
  if (!applied[0]) {
    leases.loseLease(execution, 'write');
    throw new TaskAbortedError('LEASE_LOST', 'ctx.complete: the lease is gone (another worker may own this task now): roll back your transaction');
  }
  // A renewal's answer (lease lost) or a timeout may have come while the write was in flight: the worker
  // has decided otherwise already, so this completion must not commit.
  if (execution.state !== 'committing' || notShutdown(execution)) {
    throw execution.abortReason ?? new TaskAbortedError('LEASE_LOST', 'ctx.complete: the attempt ended while its completion was being written: roll back');
  }
}

/** Whether the completion written in the handler's transaction committed; a read that fails counts as not (the fence still guards). */
export async function completionCommitted(execution: Execution, store: Store, onError: (error: unknown) => void): Promise<boolean> {
  try {
    return await outcomeCommitted(store, execution.completion!);
  } catch (error) {
    onError(error);
    return false;
  }
}

function checkCanComplete(execution: Execution, store: Store, transaction: unknown): void {
  if (!store.capabilities.transactionalComplete) {
    throw new UnsupportedError(
      `ctx.complete(tx) needs a store whose transactions a handler can join (PostgreSQL, MySQL); ${store.dialect} cannot: return the result instead`,
    );
  }
  if (transaction === undefined || transaction === null)
    throw new ValidationError('ctx.complete needs your transaction (a client inside BEGIN)', 'transaction');
  if (execution.state === 'lost') throw execution.abortReason ?? new TaskAbortedError('LEASE_LOST', 'ctx.complete: the lease is gone');
  if (notShutdown(execution)) throw execution.abortReason!;
  if (execution.state !== 'running')
    throw new InvalidStateError(`ctx.complete: task ${execution.task.id} is ${execution.state} (complete once, before returning)`);
}

/** Aborted for a reason that ends the attempt (a shutdown lets the handler finish). */
function notShutdown(execution: Execution): boolean {
  const reason = execution.abortReason;
  return reason !== null && reason.code !== 'SHUTDOWN';
}
