/**
 * The short failover case of `npm test` (issue 24): two PostgreSQL 15
 * members under Patroni with synchronous_mode behind HAProxy (patroni.ts),
 * one `patronictl switchover` under load; nothing acknowledged lost, nothing
 * run twice, the workers resume unaided. The long runs are in
 * failover.slow.test.ts (npm run test:faults). Without patroni, etcd or
 * haproxy: skipped with one line (sh deploy/ci-install.sh installs them);
 * on CI it must run.
 */
import { it } from 'vitest';
import { describeOnPatroni, expectNothingLost, failoverUnderLoad, switchover } from './failover-cases.js';

await describeOnPatroni('test/faults/failover.fast.test.ts', 'Patroni switchover', { members: 2, synchronous: true }, (env, cluster) => {
  it('patronictl switchover under load: nothing acknowledged lost, nothing run twice, the workers resume', async () => {
    expectNothingLost(await failoverUnderLoad(env(), cluster(), switchover(cluster())));
  }, 240_000);
});
