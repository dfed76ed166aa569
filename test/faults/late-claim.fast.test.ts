/**
 * A claim whose answer reaches the worker after the lease it grants has
 * ended — here held 4 leases by a black hole (black-hole.ts
 * swallowReplyWith), while another worker swept the task and ran it — starts
 * no handler: the worker gives the lease up on arrival (`leaseLost`
 * `unreachable`). Failed before issue 22's fix: the handler started (its
 * first write, the `executions` row, landed) and was aborted only after.
 * On MySQL the answer held is the claim's first round trip: the claim never
 * commits, the server ends the idle session, and the other worker runs the
 * task as attempt 1 (before the idle bound the held session kept the claim
 * lock, and nobody claimed for the whole hole).
 */
import { it } from 'vitest';
import { lateClaimCase } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

for (const dialect of ['postgres', 'mysql'] as const) {
  await describeOnStore(
    dialect,
    'late claim answer',
    (env) => {
      it('black hole as a claim answers, its answer held past the lease: the cut-off worker never runs that task, another does', async () => {
        await lateClaimCase(env(), dialect);
      }, 150_000);
    },
    { ownServer: true },
  );
}
