/**
 * Faults of the worker process (FAULTS.md 1, 3, 7, 10, 11, 14): killed,
 * frozen past its lease, its event loop blocked, stopped with SIGTERM ×5 and
 * SIGKILL, stopped while another worker runs a task it lost, its connections
 * cut, its clock skewed. One set of cases for every
 * store: each dialect's workers-<dialect>.fast.test.ts runs them on its own
 * target (targets.ts) with real OS processes.
 */
import { expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { waitFor } from '../helpers/wait.js';
import type { ChildWorker } from '../process/harness.js';
import { TIMING, type FaultEnvironment } from './environment.js';
import type { FaultDialect } from './targets.js';

const RESCUE_MS = TIMING.leaseMs + TIMING.recoveryIntervalMs + 30_000;
const TEN_MINUTES = 600_000;

/**
 * Waits until the worker's handler has logged its start (its `executions` row committed), so that the freeze that
 * follows finds the handler running (and on SQLite does not have to wait out that write: env.freeze).
 */
async function handlerLogged(env: FaultEnvironment, label: string): Promise<void> {
  await waitFor(async () => (await env.executions(label)) > 0, `${label}'s handler to log its start`, 30_000, 20);
}

export function workerFaultCases(dialect: FaultDialect, env: () => FaultEnvironment): void {
  /** Kills a worker running 4 tasks (in one batch-handler call when `batched`); another completes each once more. */
  const killMidWork = async (prefix: string, batched: boolean): Promise<void> => {
    const type = batched ? 'batch' : 'work';
    const extras = batched ? { batchTypes: [type] } : {};
    const victim = env().worker(`${prefix}-a`, [type], { concurrency: 4, recoveryIntervalMs: 0 }, extras);
    await victim.until('ready');
    const ids = await env().submit(
      type,
      Array.from({ length: 4 }, () => ({ mode: 'sleep' as const, ms: 5000, onlyAttempt: 1 })),
    );
    await waitFor(async () => (await env().executions(`${prefix}-a`)) === 4, 'the victim to run all 4');
    if (batched) expect(victim.events.filter((e) => e.event === 'batch').map((e) => e.size)).toEqual([4]); // in one call
    victim.signal('SIGKILL');
    await victim.exit();
    const rescuer = env().worker(`${prefix}-b`, [type], {}, extras);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 4, 'the rescuer to complete all 4', RESCUE_MS, 100);
    for (const id of ids) {
      expect((await env().attempts(id)).map((a) => [a.attempt, a.worker_id, a.outcome])).toEqual([
        [1, `${prefix}-a`, 'LEASE_EXPIRED'],
        [2, `${prefix}-b`, 'SUCCESS'],
      ]);
    }
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { executions: 8, repeatedEffects: 0 } });
    await rescuer.stop();
  };

  it('kill -9 mid-task: each task runs once more elsewhere, attempt +1', () => killMidWork('kill', false), 90_000);

  it('kill -9 mid-batch: every task of the batch call is recovered and completed once more elsewhere, attempt +1', () => killMidWork('batch', true), 90_000);

  it('SIGSTOP past the lease, another takes over, SIGCONT: the stale completion changes 0 rows and the handler is aborted', async () => {
    const zombie = env().worker('zombie-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await zombie.until('ready');
    const [id] = await env().submit('work', [{ mode: 'hold', ms: 600_000, completeAnyway: true, onlyAttempt: 1 }]);
    await zombie.until('started', 30_000, id);
    await env().freeze(zombie);
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
    // The sweeper runs before the block begins: a rescuer forked during it may start later than the block ends (a loaded
    // machine), and the sweep must requeue the task for the rescuer to run it.
    const sweeper = env().worker('busy-s', ['idle']);
    const blocked = env().worker('busy-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await Promise.all([sweeper.until('ready'), blocked.until('ready')]);
    const [id] = await env().submit('work', [{ mode: 'busy', ms: 3 * TIMING.leaseMs, completeAnyway: true, onlyAttempt: 1 }]);
    await blocked.until('started', 30_000, id);
    const rescuer = env().worker('busy-b', ['work']);
    const aborted = await blocked.until('aborted', RESCUE_MS, id);
    expect(aborted.reason).toBe('LEASE_LOST');
    await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the task to run again', RESCUE_MS, 100);
    const task = await env().store.getTask({ id: id!, scope: Scope.global() });
    expect(task!.result).toMatchObject({ attempt: 2 }); // busy-b's, or busy-a's once it was free again
    expect((await env().attempts(id!)).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'LEASE_EXPIRED'],
      [2, 'SUCCESS'],
    ]);
    expect(blocked.events.some((e) => e.event === 'completed' && e.id === id && e.attempt === 1)).toBe(false);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    // busy-a may have run the task again before the rescuer even started (a loaded machine): a child stopped before it is
    // ready has no SIGTERM handler yet, and would never say it stopped.
    await rescuer.until('ready', 60_000);
    await Promise.all([blocked.stop(), rescuer.stop(), sweeper.stop()]);
  }, 120_000);

  it('event loop blocked for 3 leases, no sweep in between: the holder does not renew its expired lease, the handler is aborted', async () => {
    // Nobody sweeps: when the loop frees, the heartbeat timer may fire before the local lease deadline's. The worker gives up
    // a lease whose local deadline passed before it renews anything, and the store renews no lease whose lease_until passed.
    const blocked = env().worker('late-a', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    await blocked.until('ready');
    const [id] = await env().submit('work', [{ mode: 'busy', ms: 3 * TIMING.leaseMs, completeAnyway: true, onlyAttempt: 1 }]);
    await blocked.until('started', 30_000, id);
    expect((await blocked.until('aborted', 30_000, id)).reason).toBe('LEASE_LOST');
    expect(blocked.events.some((e) => e.event === 'completed' && e.id === id && e.attempt === 1)).toBe(false);
    await blocked.stop();
  }, 60_000);

  it('SIGSTOP past the lease, swept, SIGCONT: the same worker claims the task again and aborts its first handler (LEASE_LOST)', async () => {
    // Two slots: on SIGCONT the worker may claim the requeued task (attempt 2) before its heartbeat notices the loss of
    // attempt 1; the first handler must still be aborted, its completion fenced, attempt 2's result kept.
    const worker = env().worker('again-a', ['work'], { concurrency: 2, recoveryIntervalMs: 0 });
    const sweeper = env().worker('again-s', ['idle']);
    await Promise.all([worker.until('ready'), sweeper.until('ready')]);
    const [id] = await env().submit('work', [{ mode: 'hold', ms: TEN_MINUTES, completeAnyway: true, onlyAttempt: 1 }]);
    await worker.until('started', 30_000, id);
    await handlerLogged(env(), 'again-a');
    await env().freeze(worker);
    await waitFor(async () => (await env().attempts(id!))[0]?.outcome === 'LEASE_EXPIRED', 'the sweep to expire the frozen lease', RESCUE_MS, 100);
    worker.signal('SIGCONT');
    expect((await worker.until('aborted', 15_000, id)).reason).toBe('LEASE_LOST');
    await waitFor(async () => (await env().statusOf(id!)) === 'SUCCESS', 'the task to run again', RESCUE_MS, 100);
    expect((await env().store.getTask({ id: id!, scope: Scope.global() }))!.result).toEqual({ by: 'again-a', attempt: 2 });
    expect((await env().attempts(id!)).map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'LEASE_EXPIRED'],
      [2, 'SUCCESS'],
    ]);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await Promise.all([worker.stop(), sweeper.stop()]);
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

  it('SIGTERM ×5 to a worker frozen past its lease while another runs its task: its shutdown hands back, completes and fails nothing of the lost task', async () => {
    // The terms are sent while it is stopped and delivered on SIGCONT, racing its heartbeat's discovery of the loss: the
    // shutdown's hand-back and the handler's late completion (completeAnyway) must both be fenced, whichever comes first.
    const stale = env().worker('lost-a', ['work'], { concurrency: 2, shutdownGraceMs: 1000, shutdownAbortWaitMs: 1000, recoveryIntervalMs: 0 });
    await stale.until('ready');
    const [id] = await env().submit('work', [{ mode: 'hold', ms: 6000, completeAnyway: true }]);
    await stale.until('started', 30_000, id);
    await handlerLogged(env(), 'lost-a');
    await env().freeze(stale);
    const owner = env().worker('lost-b', ['work'], { concurrency: 1 });
    await owner.until('started', RESCUE_MS, id);
    for (let i = 0; i < 5; i += 1) stale.signal('SIGTERM');
    stale.signal('SIGCONT');
    const stopped = await stale.until('stopped', 30_000);
    await stale.exit();
    expect(stopped.completed).not.toContain(id);
    const now = (await env().store.getTask({ id: id!, scope: Scope.global() }))!;
    if (now.status === 'RUNNING')
      expect([now.leaseOwner, now.attemptCount]).toEqual(['lost-b', 2]); // still the new owner's, untouched
    else expect([now.status, now.result]).toEqual(['SUCCESS', { by: 'lost-b', attempt: 2 }]);
    await owner.until('completed', RESCUE_MS, id);
    expect(owner.has('aborted', id)).toBe(false); // the new owner never lost its lease to the old one's shutdown
    expect((await env().attempts(id!)).map((a) => [a.attempt, a.worker_id, a.outcome])).toEqual([
      [1, 'lost-a', 'LEASE_EXPIRED'],
      [2, 'lost-b', 'SUCCESS'],
    ]);
    expect((await env().store.getTask({ id: id!, scope: Scope.global() }))!.result).toEqual({ by: 'lost-b', attempt: 2 });
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await owner.stop();
  }, 90_000);

  // SQLite: a file, no connections to cut.
  if (dialect !== 'sqlite')
    it('killed connections (every connection of both workers, twice): the workers reconnect, no task is lost', async () => {
      const terminate = env().target.terminate!;
      const workers = [env().worker('cut-a', ['work'], { concurrency: 4 }), env().worker('cut-b', ['work'], { concurrency: 4 })];
      await Promise.all(workers.map((w) => w.until('ready')));
      await env().submit(
        'work',
        Array.from({ length: 600 }, () => ({ mode: 'sleep' as const, ms: 10 })),
      );
      for (const threshold of [100, 300]) {
        await waitFor(async () => (await env().countStatus('SUCCESS')) >= threshold, `${threshold} successes`, RESCUE_MS, 50);
        const cut = (await terminate('cut-a')) + (await terminate('cut-b'));
        expect(cut).toBeGreaterThan(0);
      }
      await waitFor(async () => (await env().countAcknowledged('SUCCESS')) === 600, 'all 600 to succeed', 90_000, 200);
      expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
      await stopAll(workers);
    }, 180_000);

  it('clock skew ±10 min in a worker process: its sweep steals no live lease, its own lease holds while renewed and is lost once expired', async () => {
    // The leases are judged by the database clock: a worker whose wall clock runs ahead must not see others' leases as
    // expired, one whose clock runs behind must not keep a lease the database has expired.
    const normal = env().worker('skew-n', ['work'], { concurrency: 1, recoveryIntervalMs: 0 });
    const ahead = env().worker('skew-ahead', ['idle'], {}, { clockSkewMs: TEN_MINUTES });
    // One slot: once its frozen handler's lease is swept, it cannot claim that task again before it notices the loss
    // (that case, a worker claiming back a task it still runs, is the SIGSTOP-swept-SIGCONT case above).
    const behind = env().worker('skew-behind', ['skewed'], { concurrency: 1 }, { clockSkewMs: -TEN_MINUTES });
    await Promise.all([normal, ahead, behind].map((w) => w.until('ready')));
    const [held] = await env().submit('work', [{ mode: 'sleep', ms: 3 * TIMING.leaseMs }]);
    const [own] = await env().submit('skewed', [{ mode: 'sleep', ms: 3 * TIMING.leaseMs }]);
    await Promise.all([normal.until('completed', RESCUE_MS, held), behind.until('completed', RESCUE_MS, own)]);
    // Three leases long, swept every second by both skewed workers: one attempt each, no LEASE_EXPIRED.
    expect((await env().attempts(held!)).map((a) => [a.worker_id, a.outcome])).toEqual([['skew-n', 'SUCCESS']]);
    expect((await env().attempts(own!)).map((a) => [a.worker_id, a.outcome])).toEqual([['skew-behind', 'SUCCESS']]);

    const [lost] = await env().submit('skewed', [{ mode: 'hold', ms: 600_000, completeAnyway: true, onlyAttempt: 1 }]);
    await behind.until('started', 30_000, lost);
    await env().freeze(behind);
    await waitFor(async () => (await env().attempts(lost!))[0]?.outcome === 'LEASE_EXPIRED', 'the sweep to expire the frozen lease', RESCUE_MS, 100);
    behind.signal('SIGCONT');
    const aborted = await behind.until('aborted', 15_000, lost).catch((error: Error) => {
      throw new Error(`${error.message}\n${JSON.stringify(behind.events.slice(-8))}\n${behind.log}`);
    });
    expect(aborted.reason).toBe('LEASE_LOST');
    await waitFor(async () => (await env().statusOf(lost!)) === 'SUCCESS', 'the task to run again', RESCUE_MS, 100);
    // Attempt 2 or later: on a loaded machine the rerun's own lease may expire too; what matters is that attempt 1's
    // completion was fenced (the result is a later attempt's) and no effect repeated.
    const rerun = (await env().store.getTask({ id: lost!, scope: Scope.global() }))!.result as { by: string; attempt: number };
    expect(rerun.by).toBe('skew-behind');
    expect(rerun.attempt).toBeGreaterThan(1);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await stopAll([normal, ahead, behind]);
  }, 120_000);
}

async function stopAll(workers: ChildWorker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop()));
}
