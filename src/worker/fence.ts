/**
 * `ctx.fence()`: a fencing token for systems outside the task store — a
 * number that a second database, an object store or a partner's HTTP API can
 * compare, so that the write of an attempt that lost its lease (a zombie:
 * paused, partitioned, slow) is refused there once a newer attempt wrote.
 *
 * The token is the lease's attempt number (attempt_count). It grows with
 * every claim of a task and never goes down: a hand-back, a snooze or a free
 * lease expiry raises attempt_base instead, and a new cycle (an operator's
 * retry, a dead letter's replay) starts from attempt_base = attempt_count
 * (store/rules/outcomes.ts, changes.ts). One exception makes the durable
 * confirmation below necessary: a claim on PostgreSQL commits without waiting
 * for its WAL flush (store/postgres/claim.ts), and SQLite's commits under
 * synchronous = NORMAL are not synced either (a power loss may undo them).
 * A database crash may lose such a claim after its handler started — and the
 * next claim of the task then gets the same attempt number again. Inside the task store the lease token keeps
 * the two apart (store/rules/leases.ts), but an outside system sees only the
 * number: if the first handler had handed out N, the second would hand out N
 * too, and its writes would not win over the zombie's.
 *
 * So a fence is handed out only after one fenced renewal of the lease whose
 * commit is on disk before it answers (RenewParams.durable). It proves the
 * lease still holds, and it makes the claim durable with it (a WAL flush
 * covers every record before it): once any handler holds N, no claim of that
 * task can ever be given N again, and every later claim is given more. A
 * claim lost in a crash never had a fence handed out, so the N its successor
 * gets again is still new to every outside system. Handlers that never call
 * it pay nothing; a handler that calls it pays one round trip, on its first
 * call of the attempt (the execution context keeps the answer).
 *
 * What the fence does not do: stop the zombie. Its lease may be lost the
 * moment after the fence was taken; the outside system's check (a
 * conditional write, a header compared with the last seen) is what refuses
 * its late write. The signal still fires as for any lost lease.
 */
import { InvalidStateError, TaskAbortedError } from '../core/errors.js';
import type { Execution } from './execution.js';

/** What the fence needs of the lease keeper (lease-keeper.ts). */
export interface DurableConfirmer {
  confirmDurably(execution: Execution): Promise<boolean>;
}

/** The lease's fence once a durable fenced write confirmed it; rejects with the abort reason (LEASE_LOST…) when it does not hold. */
export async function takeFence(execution: Execution, leases: DurableConfirmer): Promise<number> {
  checkCanFence(execution);
  if (!(await leases.confirmDurably(execution))) {
    throw execution.abortReason ?? new TaskAbortedError('LEASE_LOST', 'ctx.fence: the lease is gone (another worker may own this task now)');
  }
  // A cancellation (or timeout) that arrived meanwhile ends the attempt: it must not start writing elsewhere now.
  checkCanFence(execution);
  return execution.lease.attempt;
}

function checkCanFence(execution: Execution): void {
  const reason = execution.abortReason;
  if (execution.state === 'lost') throw reason ?? new TaskAbortedError('LEASE_LOST', 'ctx.fence: the lease is gone');
  // A graceful stop lets the handler finish, and its lease holds meanwhile: only other aborts refuse.
  if (reason !== null && reason.code !== 'SHUTDOWN') throw reason;
  if (execution.state !== 'running') {
    throw new InvalidStateError(`ctx.fence: task ${execution.task.id} is ${execution.state} (take the fence before ctx.complete and before returning)`);
  }
}
