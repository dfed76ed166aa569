/**
 * The poison pill (FAULTS.md 13, issue 11's B3): a task whose handler kills
 * its process on every attempt, beside three innocent tasks in flight in the
 * same process, the process restarted each time it dies. The poison pill
 * ends FAILED with a dead letter in bounded time — two free crashes (nothing
 * tells yet which task killed the process), then maxAttempts crashes in
 * quarantine, where it runs alone — and its innocent neighbours succeed,
 * having spent no attempt on its crashes. Fails on main before the fix
 * (the innocents were dead-lettered with it, 3 × LEASE_EXPIRED each).
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { QUARANTINE_AFTER_LEASE_EXPIRIES } from '../../src/core/task.js';
import { describeWithCluster } from './describe-store.js';
import { runPoisonPill } from './poison-case.js';

const MAX_ATTEMPTS = 3;

await describeWithCluster('poison pill', (env) => {
  it('process.exit in a handler: the poison is dead-lettered after 2 + maxAttempts crashes, its neighbours succeed uncharged', async () => {
    const run = await runPoisonPill(env(), MAX_ATTEMPTS);
    const crashes = QUARANTINE_AFTER_LEASE_EXPIRIES + MAX_ATTEMPTS;
    expect(await env().statusOf(run.poison)).toBe('FAILED');
    expect((await env().attempts(run.poison)).map((a) => a.outcome)).toEqual(Array.from({ length: crashes }, () => 'LEASE_EXPIRED'));
    expect(run.restarts).toBeGreaterThanOrEqual(crashes);
    for (const id of run.innocent) {
      expect(await env().statusOf(id), id).toBe('SUCCESS');
      const task = (await env().store.getTask({ id, scope: Scope.global() }))!;
      // the crashes beside the poison cost nothing: the one attempt spent is the success
      expect(task.attemptCount - task.attemptBase, id).toBe(1);
    }
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] }); // I5: the FAILED task has its dead letter
  }, 180_000);
});
