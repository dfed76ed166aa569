/**
 * The fault suite's sandboxed handler (fault-child.ts, sandboxTypes): run in
 * a worker thread of the worker process, named by sandbox.exportName `run`.
 * Payload modes as fault-child.ts's where they make sense in a thread:
 *  - busy: `for (;;);` — FAULTS.md 11, the thread's event loop never comes back
 *    (`ms` ignored: only a terminate() ends it);
 *  - hog:  allocates until the thread's memory limit stops it;
 *  - else: returns at once.
 * It writes no effect (its own database connection would be a second client
 * per thread): the cases check its outcome through the store.
 */
import type { TaskContext } from '../../src/core/context.js';
import type { FaultPayload } from './fault-child.js';

export function run(ctx: TaskContext, payload: FaultPayload): unknown {
  if (payload.mode === 'busy') for (;;);
  if (payload.mode === 'hog') {
    const kept: number[][] = [];
    for (;;) kept.push(Array.from({ length: 100_000 }, (_, i) => i));
  }
  return { status: 'SUCCESS', result: { by: 'sandbox', attempt: ctx.attempt } };
}
