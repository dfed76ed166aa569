/**
 * Pending (issue 22, the worker's lease keeping): a claim whose answer
 * reaches the worker after the lease it grants has ended — here held 4
 * leases by a black hole (black-hole.ts swallowReplyWith), while another
 * worker swept the task and ran it — must not start a handler. Fails today
 * on PostgreSQL: the worker starts the handler (its first write, the
 * `executions` row, lands), then gives the lease up (`leaseLost`
 * `unreachable`) and aborts it (`LEASE_LOST`); its outcome is fenced and the
 * task row unchanged, but a handler ran on a lease another worker had
 * already used. The local lease deadline of a claim must count from when the
 * claim was put on its connection (issue 22), and a claim answered past it
 * must hand its tasks back unstarted. On MySQL the same hole trips first on
 * the claim lock (pending/black-hole-mysql.test.ts).
 */
import { it } from 'vitest';
import { lateClaimCase } from '../database-cases.js';
import { describeOnStore } from '../describe-store.js';

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
