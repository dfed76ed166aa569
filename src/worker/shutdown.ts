/**
 * A graceful stop, in the order that loses nothing: no more claims or
 * sweeps; waiting tasks handed back at once; running handlers given the
 * grace period, then aborted (their tasks handed back as ABANDONED once they
 * have stopped); outcomes and hand-backs of leases given up drained; leases renewed until then; the registry
 * row deleted last. A handler that ignores its abort is left to lease expiry.
 */
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';
import type { ClaimScheduler } from './claim-scheduler.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { ResolvedWorkerOptions } from './options.js';
import type { OutcomeWriter } from './outcome-writer.js';
import type { PolicyCache } from './policy-cache.js';
import type { RecoverySweeper } from './recovery-sweeper.js';

export interface ShutdownParts {
  options: ResolvedWorkerOptions;
  table: ExecutionTable;
  claims: ClaimScheduler;
  sweeper: RecoverySweeper;
  writer: OutcomeWriter<Execution>;
  leases: LeaseKeeper;
  releaseWaiting(): Promise<void>;
  policies: PolicyCache;
  onError(operation: string, error: unknown): void;
}

export async function stopGracefully(parts: ShutdownParts): Promise<void> {
  const { options: o, table } = parts;
  await Promise.all([parts.claims.stop(), parts.sweeper.stop()]);
  await parts.releaseWaiting();
  if (!(await table.whenIdle(o.shutdownGraceMs, o.clock))) {
    for (const execution of table.running()) execution.abort('SHUTDOWN', 'worker is shutting down');
    await table.whenIdle(o.shutdownAbortWaitMs, o.clock);
  }
  let timer: ReturnType<typeof o.clock.setTimeout> = undefined;
  await Promise.race([
    Promise.all([parts.writer.drain(), parts.leases.givenUpSettled()]),
    new Promise((resolve) => (timer = o.clock.setTimeout(() => resolve(undefined), o.shutdownAbortWaitMs))),
  ]);
  o.clock.clearTimeout(timer);
  parts.leases.stop();
  await parts.policies.stop();
  await o.store.unregisterWorker({ workerId: o.workerId }).catch((error: unknown) => parts.onError('unregisterWorker', error));
}
