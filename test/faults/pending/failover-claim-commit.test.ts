/**
 * Pending (issue 24): after a crash of the primary under Patroni's
 * synchronous_mode, no (task, attempt) may start twice. It does, now and
 * then (2 tasks in 1 of 10 kill runs, 2026-12-02; the cause below is the one
 * path we found, not yet confirmed by a trace): a
 * claim made alone commits with synchronous_commit = off
 * (src/store/postgres/claim.ts), so it may not have reached the synchronous
 * standby when the primary dies, while the worker already started its
 * handler. The promoted standby has the task QUEUED with the attempt before,
 * and its next claim carries the same attempt number (the first run stays
 * fenced by its lease token: it writes nothing). Fixed when a claim is as
 * durable as what the handler may do after it (a synchronous commit under
 * synchronous replication, at least). Intermittent: run it a few times.
 *
 * PENDING=1 npx vitest run --config vitest.faults.config.ts test/faults/pending/failover-claim-commit.test.ts
 */
import { expect, it } from 'vitest';
import { describeOnPatroni, failoverUnderLoad, killPrimary } from '../failover-cases.js';

await describeOnPatroni(
  'test/faults/pending/failover-claim-commit.test.ts',
  'claims across a crash of the primary',
  { members: 2, synchronous: true },
  (env, cluster) => {
    for (const round of [1, 2, 3])
      it(`the primary's postmaster SIGKILLed under load (round ${round}): no (task, attempt) started twice`, async () => {
        expect(await failoverUnderLoad(env(), cluster(), killPrimary(cluster()))).toMatchObject({ duplicateExecutions: 0, lostSubmits: 0, lostOutcomes: 0 });
      }, 600_000);
  },
);
