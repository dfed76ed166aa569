/**
 * A claim whose answer reaches the worker after the lease it grants has
 * ended — here held 4 leases by a black hole (black-hole.ts
 * swallowReplyWith), while another worker swept the task and ran it — starts
 * no handler: the worker gives the lease up on arrival (`leaseLost`
 * `unreachable`). Failed before issue 22's fix: the handler started (its
 * first write, the `executions` row, landed) and was aborted only after. On
 * MySQL the same hole trips first on the claim lock
 * (pending/black-hole-mysql.test.ts).
 */
import { it } from 'vitest';
import { lateClaimCase } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore(
  'postgres',
  'late claim answer',
  (env) => {
    it('black hole as a claim answers: the claim committed, its answer held past the lease; the cut-off worker never runs that task, another does', async () => {
      await lateClaimCase(env());
    }, 150_000);
  },
  { ownServer: true },
);
