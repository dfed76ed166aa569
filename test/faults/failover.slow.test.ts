/**
 * The Patroni failover suite (issue 24, FAULTS.md 9): three PostgreSQL 15
 * members under Patroni with synchronous_mode, etcd, HAProxy on /primary
 * (patroni.ts), under load — a switchover, the primary's postmaster
 * SIGKILLed, and a demoted primary that stays up read-only behind a stale
 * route (failover-cases.ts). Nothing acknowledged is lost, nothing runs
 * twice (failover-claims.slow.test.ts repeats the SIGKILL),
 * the workers resume unaided; each case prints its figures
 * (`failover {…}`). Then the same kill with asynchronous replication, whose
 * figures are reported and not held to zero: a failover may lose what the
 * old primary acknowledged last.
 */
import { expect, it } from 'vitest';
import { describeOnPatroni, expectNothingLost, failoverUnderLoad, killPrimary, staleRoute, switchover } from './failover-cases.js';

const FILE = 'test/faults/failover.slow.test.ts';

await describeOnPatroni(FILE, 'Patroni failover, synchronous_mode', { members: 3, synchronous: true }, (env, cluster) => {
  it('patronictl switchover under load', async () => {
    expectNothingLost(await failoverUnderLoad(env(), cluster(), switchover(cluster())));
  }, 600_000);

  it("the primary's postmaster SIGKILLed under load", async () => {
    // Claims commit synchronously under synchronous replication: none whose handler started is lost with the primary.
    expectNothingLost(await failoverUnderLoad(env(), cluster(), killPrimary(cluster())));
  }, 600_000);

  it('a demoted primary that stays up read-only, reached by a stale route, until the route moves', async () => {
    const { fault, route } = await staleRoute(cluster());
    try {
      const report = await failoverUnderLoad(env(), cluster(), fault);
      expectNothingLost(report);
      expect(Object.keys(report.workerErrors).some((key) => key.includes('25006'))).toBe(true);
    } finally {
      await route.close();
    }
  }, 600_000);
});

await describeOnPatroni(FILE, 'Patroni failover, asynchronous replication', { members: 2, synchronous: false }, (env, cluster) => {
  it("the primary's postmaster SIGKILLed under load: figures reported (losses are possible)", async () => {
    const report = await failoverUnderLoad(env(), cluster(), killPrimary(cluster()));
    // The workers resumed (checked inside) and nothing ran twice under one attempt; what the old primary acknowledged
    // last may be gone: that is asynchronous replication, reported in the figures.
    expect(report.duplicateExecutions).toBe(0);
  }, 600_000);
});
