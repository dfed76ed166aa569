/**
 * Faults of the worker process (FAULTS.md 1, 3, 11, 14): killed, frozen past
 * its lease, its event loop blocked, stopped with SIGTERM ×5 and SIGKILL.
 * Real OS processes against the file's own PostgreSQL cluster.
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import { describeWithCluster } from './describe-cluster.js';
import { TIMING } from './environment.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;

await describeWithCluster('worker faults', (env) => {
  it('kill -9 mid-task: each task runs once more elsewhere, attempt +1', async () => {
    const victim = env().worker('kill-a', ['work'], { concurrency: 4, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const ids = await env().submit(
      'work',
      Array.from({ length: 4 }, () => ({ mode: 'sleep' as const, ms: 5000, onlyAttempt: 1 })),
    );
    await waitFor(async () => (await env().executions('kill-a')) === 4, 'the victim to run all 4');
    victim.signal('SIGKILL');
    await victim.exit();
    const rescuer = env().worker('kill-b', ['work']);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 4, 'the rescuer to complete all 4', RESCUE_MS, 100);
    for (const id of ids) {
      expect((await env().attempts(id)).map((a) => [a.attempt, a.worker_id, a.outcome])).toEqual([
        [1, 'kill-a', 'LEASE_EXPIRED'],
        [2, 'kill-b', 'SUCCESS'],
      ]);
    }
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { executions: 8, repeatedEffects: 0 } });
    await rescuer.stop();
  }, 90_000);

  it('SIGSTOP past the lease, another takes over, SIGCONT: the stale completion changes 0 rows and the handler is aborted', async () => {
    const zombie = env().worker('zombie-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await zombie.until('ready');
    const [id] = await env().submit('work', [{ mode: 'hold', ms: 600_000, completeAnyway: true, onlyAttempt: 1 }]);
    await zombie.until('started', 30_000, id);
    zombie.signal('SIGSTOP');
    const rescuer = env().worker('zombie-b', ['work']);
    await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the rescuer to complete the task', RESCUE_MS, 100);
    const settled = await env().store.getTask({ id: id!, scope: Scope.global() });
    zombie.signal('SIGCONT');
    const aborted = await zombie.until('aborted', 15_000, id).catch((error: Error) => {
      throw new Error(`${error.message}\n${JSON.stringify(zombie.events)}\n${zombie.log}`);
    });
    expect(aborted.reason).toBe('LEASE_LOST');
    await zombie.until('leaseLost', 15_000, id);
    await zombie.stop();
    expect(await env().store.getTask({ id: id!, scope: Scope.global() })).toEqual(settled); // the stale write changed nothing
    expect(settled!.result).toEqual({ by: 'zombie-b', attempt: 2 });
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await rescuer.stop();
  }, 90_000);

  it('event loop blocked for 3 leases: the lease loss is detected and the stale completion fenced', async () => {
    const blocked = env().worker('busy-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await blocked.until('ready');
    const [id] = await env().submit('work', [{ mode: 'busy', ms: 3 * TIMING.leaseMs, completeAnyway: true, onlyAttempt: 1 }]);
    await blocked.until('started', 30_000, id);
    const rescuer = env().worker('busy-b', ['work']);
    const aborted = await blocked.until('aborted', RESCUE_MS, id);
    expect(aborted.reason).toBe('LEASE_LOST');
    await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the rescuer to complete the task', RESCUE_MS, 100);
    const task = await env().store.getTask({ id: id!, scope: Scope.global() });
    expect(task!.result).toEqual({ by: 'busy-b', attempt: 2 });
    expect((await env().attempts(id!)).map((a) => [a.worker_id, a.outcome])).toEqual([
      ['busy-a', 'LEASE_EXPIRED'],
      ['busy-b', 'SUCCESS'],
    ]);
    expect(blocked.has('completed', id)).toBe(false); // the blocked worker never reported the stale completion as done
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await Promise.all([blocked.stop(), rescuer.stop()]);
  }, 90_000);

  it('SIGTERM ×5 with tasks shorter and longer than the grace: short ones complete, long ones are handed back, none left RUNNING', async () => {
    const stopping = env().worker('term-a', ['work'], { concurrency: 4, shutdownGraceMs: 1000, shutdownAbortWaitMs: 1000, recoveryIntervalMs: 0 });
    await stopping.until('ready');
    const short = await env().submit('work', [
      { mode: 'sleep', ms: 300 },
      { mode: 'sleep', ms: 300 },
    ]);
    const long = await env().submit('work', [
      { mode: 'hold', ms: 60_000, onlyAttempt: 1 },
      { mode: 'hold', ms: 60_000, onlyAttempt: 1 },
    ]);
    await waitFor(() => stopping.count('started') === 4, 'all 4 to start');
    for (let i = 0; i < 5; i += 1) stopping.signal('SIGTERM');
    const completed = await stopping.stop(30_000);
    expect(completed.sort()).toEqual([...short].sort());
    for (const id of long) expect(await env().statusOf(id)).toBe('QUEUED'); // handed back at once, not left to lease expiry
    expect(await env().countStatus('RUNNING')).toBe(0);
    const next = env().worker('term-b', ['work']);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 4, 'the next worker to run the handed-back tasks', RESCUE_MS, 100);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await next.stop();
  }, 90_000);

  it('SIGTERM ×5 then SIGKILL during the grace: the sweep requeues what it held, nothing stays RUNNING', async () => {
    const victim = env().worker('kill9-a', ['work'], { concurrency: 4, shutdownGraceMs: 5000, recoveryIntervalMs: 0 });
    await victim.until('ready');
    const short = await env().submit('work', [{ mode: 'sleep', ms: 200 }]);
    const long = await env().submit(
      'work',
      Array.from({ length: 3 }, () => ({ mode: 'hold' as const, ms: 60_000, onlyAttempt: 1 })),
    );
    await waitFor(() => victim.count('started') === 4, 'all 4 to start');
    for (let i = 0; i < 5; i += 1) victim.signal('SIGTERM');
    await victim.until('completed', 10_000, short[0]);
    victim.signal('SIGKILL');
    await victim.exit();
    for (const id of long) expect(await env().statusOf(id)).toBe('RUNNING'); // still leased by the dead process
    const rescuer = env().worker('kill9-b', ['work']);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 4, 'the rescuer to run the orphans', RESCUE_MS, 100);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await rescuer.stop();
  }, 90_000);
});
