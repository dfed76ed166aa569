/**
 * The poison pill, as it holds today: the task that kills its process ends
 * FAILED with a dead letter after maxAttempts crashes, each crash charged as
 * one attempt, and the restarted workers carry on. (That its innocent
 * neighbours survive is issue 11's B3, a store fix: pending/poison.test.ts.)
 */
import { expect, it } from 'vitest';
import { describeWithCluster } from './describe-store.js';
import { runPoisonPill } from './poison-case.js';

await describeWithCluster('poison pill', (env) => {
  it('process.exit in a handler: each crash is an attempt, the task is dead-lettered after maxAttempts, workers restart', async () => {
    const run = await runPoisonPill(env(), 3);
    expect(await env().statusOf(run.poison)).toBe('FAILED');
    expect((await env().attempts(run.poison)).map((a) => a.outcome)).toEqual(['LEASE_EXPIRED', 'LEASE_EXPIRED', 'LEASE_EXPIRED']);
    expect(run.restarts).toBeGreaterThanOrEqual(3);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] }); // I5: the FAILED task has its dead letter
  }, 180_000);
});
