/**
 * After a crash of the primary under Patroni's synchronous_mode, no (task,
 * attempt) may start twice (issue 24). It did, now and then (2 tasks in 1 of
 * 10 kill runs): a claim made alone committed with synchronous_commit = off,
 * so it could miss the synchronous standby while the worker had already
 * started its handler, and the promoted standby's next claim carried the same
 * attempt number. Claims now commit synchronously whenever
 * synchronous_standby_names is set (src/store/postgres/claim.ts). The kill
 * case three more times; intermittent before the fix, so a pass here is
 * evidence, not proof.
 */
import { expect, it } from 'vitest';
import { describeOnPatroni, failoverUnderLoad, killPrimary } from './failover-cases.js';

await describeOnPatroni(
  'test/faults/failover-claims.slow.test.ts',
  'claims across a crash of the primary',
  { members: 2, synchronous: true },
  (env, cluster) => {
    for (const round of [1, 2, 3])
      it(`the primary's postmaster SIGKILLed under load (round ${round}): no (task, attempt) started twice`, async () => {
        expect(await failoverUnderLoad(env(), cluster(), killPrimary(cluster()))).toMatchObject({ duplicateExecutions: 0, lostSubmits: 0, lostOutcomes: 0 });
      }, 600_000);
  },
);
