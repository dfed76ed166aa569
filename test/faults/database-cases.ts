/**
 * Faults of the database (FAULTS.md 8, 9 and issue 11's B1), one set of
 * cases for PostgreSQL and MySQL, injected only on a server the file
 * started itself (cluster.ts, maria-server.ts; never the shared ones):
 * frozen (SIGSTOP on all its processes), crashed (pg_ctl stop -m immediate;
 * SIGKILL of mariadbd) and restarted, made read-only
 * (default_transaction_read_only; read_only), and cut off from one worker
 * by a black hole (black-hole.ts: a proxy of ours that stops forwarding and
 * answering without closing anything) while it stays up for the others.
 * (Killed connections are a worker case, on every store: worker-cases.ts.)
 */
import { expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import type { ChildWorker } from '../process/harness.js';
import { Scope } from '../../src/core/scope.js';
import { BlackHoleProxy } from './black-hole.js';
import { allTasks } from './invariants.js';
import { TIMING, type FaultEnvironment } from './environment.js';

const SETTLE_MS = 90_000;

export function databaseFaultCases(env: () => FaultEnvironment, dialect: 'postgres' | 'mysql'): void {
  it('B1: a database frozen for 4 leases: the worker aborts its handlers before their leases end, not when the database comes back, then recovers', async () => {
    const a = env().worker('frozen-a', ['work'], { concurrency: 4, recoveryIntervalMs: 0 });
    await a.until('ready');
    await env().submit(
      'work',
      Array.from({ length: 4 }, () => ({ mode: 'hold' as const, ms: 600_000, onlyAttempt: 1 })),
    );
    await waitFor(async () => (await env().executions('frozen-a')) === 4, 'all 4 handlers to run');
    const pids = await env().server.freeze();
    // Taken once every process is stopped: no renewal can commit after this, so every lease ends within leaseMs of it.
    const frozenAt = Date.now();
    try {
      await waitFor(() => a.count('aborted') === 4 || Date.now() - frozenAt > 4 * TIMING.leaseMs, 'the freeze to last 4 leases', 6 * TIMING.leaseMs, 50);
    } finally {
      env().server.thaw(pids);
    }
    const aborts = a.events.filter((e) => e.event === 'aborted');
    expect(aborts.map((e) => e.reason)).toEqual(['LEASE_LOST', 'LEASE_LOST', 'LEASE_LOST', 'LEASE_LOST']);
    for (const abort of aborts) expect(abort.at! - frozenAt).toBeLessThan(TIMING.leaseMs);
    const b = env().worker('frozen-b', ['work']);
    // Run again by b once the sweep took the leases back — or by a itself, when the database answered while it still had
    // them and a's give-ups went back uncharged (given-up.ts). Either way b must be up before it is stopped.
    await b.until('ready', 60_000);
    await waitFor(async () => (await env().countStatus('SUCCESS')) === 4, 'the tasks to be run again', SETTLE_MS, 100);
    // The frozen worker itself recovers, unaided: alone again, it claims and completes new tasks.
    await b.stop();
    const after = await env().submit(
      'work',
      Array.from({ length: 4 }, () => ({ mode: 'sleep' as const, ms: 10 })),
    );
    for (const id of after) await a.until('completed', SETTLE_MS, id);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await a.stop();
  }, 120_000);

  it('black hole between one worker and the server for 4 leases: it aborts its handlers before their leases end, another takes over, its late writes are fenced, it recovers', async () => {
    await blackHoleCase(env(), { concurrency: 4, open: async (proxy) => proxy.swallow() });
  }, 150_000);

  if (dialect === 'mysql')
    // The claim takes GET_LOCK in its first round trip and releases it in its second: a worker cut off between the
    // two held it (and every other claim waited) for the server's wait_timeout, 8 h by default. Our transactions
    // now bound their session's idle time (IDLE_IN_TRANSACTION_SECONDS), and the leases granted after the lock wait
    // count from after it, not from the send (OnSent): b's first claim keeps its leases.
    it('black hole opened inside a claim, right after its GET_LOCK reached the server: the others still claim', async () => {
      // One slot free: the worker keeps claiming while its 4 handlers hold their tasks.
      await blackHoleCase(env(), { concurrency: 5, open: (proxy) => proxy.swallowAfter('GET_LOCK') });
    }, 150_000);

  it('database crash under load and restart: every acknowledged enqueue survives, the workers resume unaided', async () => {
    const workers = [env().worker('crash-a', ['work'], { concurrency: 8 }), env().worker('crash-b', ['work'], { concurrency: 8 })];
    await Promise.all(workers.map((w) => w.until('ready')));
    const load = submitUntilStopped(env());
    await waitFor(async () => (await env().countStatus('SUCCESS')) >= 100, 'some progress before the crash', SETTLE_MS, 100);
    await env().server.crash();
    await waitFor(() => load.failures() > 0, 'a submit to fail during the outage', 30_000, 20);
    await env().server.start();
    await waitFor(() => load.acknowledgedSinceRestart() > 0, 'a submit to succeed after the restart', 60_000, 50);
    await load.stop();
    await waitForAllSucceeded(env(), workers);
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await stopAll(workers); // both were still alive and stopped gracefully
  }, 180_000);

  it('read-only failover: the workers back off without crashing and resume when it is turned off', async () => {
    const workers = [env().worker('ro-a', ['work'], { concurrency: 4 }), env().worker('ro-b', ['work'], { concurrency: 4 })];
    await Promise.all(workers.map((w) => w.until('ready')));
    await env().submit(
      'work',
      Array.from({ length: 400 }, () => ({ mode: 'sleep' as const, ms: 20 })),
    );
    await waitFor(async () => (await env().countStatus('SUCCESS')) >= 50, 'some progress first', SETTLE_MS, 50);
    await env().server.setReadOnly(true);
    await waitFor(
      () => workers.every((w) => w.events.some((e) => e.event === 'error' && /read-only/.test(e.message ?? ''))),
      'both workers to meet the read-only database',
      30_000,
      50,
    );
    const during = await env().countStatus('SUCCESS');
    await waitFor(() => workers.every((w) => w.count('error') >= 3), 'a few failed tries each', 30_000, 50);
    expect(await env().countStatus('SUCCESS')).toBe(during); // nothing was written meanwhile
    await env().server.setReadOnly(false);
    await waitForAllSucceeded(env());
    expect(await env().invariants()).toMatchObject({ violations: [], knownGaps: [] });
    await stopAll(workers);
  }, 180_000);
}

/**
 * The black hole as a claim answers (pending/late-claim.test.ts): worker a, behind the proxy, is woken by a submit and
 * claims the task; the claim commits on the server and its answer (marked by the task's payload) is held 4 leases,
 * while b, direct, sweeps and runs the task. When the answer reaches a, its lease ended long ago and b has the task:
 * a must not start its handler (no execution logged, no event about it), and nothing of the task changes.
 */
export async function lateClaimCase(env: FaultEnvironment, dialect: 'postgres' | 'mysql'): Promise<void> {
  const direct = env.server.url;
  const proxy = await BlackHoleProxy.before(direct);
  try {
    // Polls seldom: it claims when a submit wakes it. The task's payload marks the claim's answer for the proxy.
    const a = env.worker('late-a', ['work'], { concurrency: 1, pollIntervalMs: 60_000, recoveryIntervalMs: 0 }, { storeUrl: proxy.address(direct) });
    await a.until('ready');
    const marker = `hole-${Date.now()}`;
    const opened = proxy.swallowReplyWith(marker);
    const [late] = await env.submitJson('work', [JSON.stringify({ ms: 10, marker })]);
    await waitFor(() => opened.then(() => true), 'the claim of the marked task to answer', 30_000, 50);
    const heldAt = Date.now();
    const b = env.worker('late-b', ['work']);
    await waitFor(
      async () => (await env.statusOf(late!)) === 'SUCCESS' && Date.now() - heldAt > 4 * TIMING.leaseMs,
      'b to run it, 4 leases into the hole',
      SETTLE_MS,
      100,
    );
    // PostgreSQL's claim is one statement: it committed before its answer was held. MySQL's first round trip is the
    // one answered with the task (the candidates): held, the second (the UPDATE, COMMIT) is never sent, and the
    // server ends the idle session (IDLE_IN_TRANSACTION_SECONDS): nothing was claimed.
    const attempts =
      dialect === 'postgres'
        ? [
            [1, 'late-a', 'LEASE_EXPIRED'],
            [2, 'late-b', 'SUCCESS'],
          ]
        : [[1, 'late-b', 'SUCCESS']];
    expect((await env.attempts(late!)).map((x) => [x.attempt, x.worker_id, x.outcome])).toEqual(attempts);
    const settled = await env.store.getTask({ id: late!, scope: Scope.global() });
    // The answer arrives 4 leases late: a must not start a handler on a lease that ended long ago.
    proxy.release();
    await b.stop();
    const [next] = await env.submit('work', [{ ms: 10 }]);
    await a.until('completed', SETTLE_MS, next);
    const seen = {
      events: a.events.filter((e) => e.id === late).map((e) => `${e.event}${e.reason ? ` ${e.reason}` : ''}`),
      executions: (await env.executions('late-a')) - 1, // but next's
      unchanged: JSON.stringify(await env.store.getTask({ id: late!, scope: Scope.global() })) === JSON.stringify(settled),
      invariants: await env.invariants(),
    };
    expect(seen).toMatchObject({
      // Given up on arrival (its local deadline had passed), never started; on MySQL never claimed at all.
      events: dialect === 'postgres' ? ['leaseLost unreachable'] : [],
      executions: 0,
      unchanged: true,
      invariants: { violations: [], knownGaps: [], figures: { repeatedEffects: 0 } },
    });
    await a.stop();
  } finally {
    proxy.release();
    await proxy.close();
  }
}

/**
 * The black hole case: worker a reaches the server through a proxy (black-hole.ts) and runs 4 held tasks; `open`
 * opens the hole (at once, or at a chosen statement). a must abort its handlers less than a lease after the hole
 * opened; b, direct, takes the tasks over; when the hole closes, a's late writes change nothing and a recovers.
 */
export async function blackHoleCase(env: FaultEnvironment, options: { concurrency: number; open(proxy: BlackHoleProxy): Promise<void> }): Promise<void> {
  const direct = env.server.url;
  const proxy = await BlackHoleProxy.before(direct);
  try {
    const a = env.worker('hole-a', ['work'], { concurrency: options.concurrency, recoveryIntervalMs: 0 }, { storeUrl: proxy.address(direct) });
    await a.until('ready');
    const ids = await env.submit(
      'work',
      Array.from({ length: 4 }, () => ({ mode: 'hold' as const, ms: 600_000, completeAnyway: true, onlyAttempt: 1 })),
    );
    await waitFor(async () => (await env.executions('hole-a')) === 4, 'all 4 handlers to run behind the proxy');
    await options.open(proxy);
    // Nothing a sends from now on reaches the server before release(): every lease it holds ends within leaseMs of this.
    const swallowedAt = Date.now();
    // The server is up for everyone else: b sweeps the expired leases and runs the tasks while a hears nothing.
    const b = env.worker('hole-b', ['work']);
    await waitFor(
      async () => (await env.countStatus('SUCCESS')) === 4 && Date.now() - swallowedAt > 4 * TIMING.leaseMs,
      'b to run the 4 tasks, and the hole to last 4 leases',
      SETTLE_MS,
      100,
    ).catch(async (error: Error) => {
      const statuses = (await allTasks(env.store)).map((t) => `${t.status}/${t.attemptCount}/${t.leaseOwner}`);
      throw new Error(`${error.message}\n${statuses.join(' ')}\nb: ${JSON.stringify(b.events.slice(-6))}\na: ${JSON.stringify(a.events.slice(-6))}`);
    });
    const aborts = a.events.filter((e) => e.event === 'aborted');
    expect(aborts.map((e) => e.reason)).toEqual(['LEASE_LOST', 'LEASE_LOST', 'LEASE_LOST', 'LEASE_LOST']);
    for (const abort of aborts) expect(abort.at! - swallowedAt).toBeLessThan(TIMING.leaseMs);
    const settled = await Promise.all(ids.map((id) => env.store.getTask({ id, scope: Scope.global() })));
    expect(settled.map((task) => task!.result)).toEqual(ids.map(() => ({ by: 'hole-b', attempt: 2 })));
    // The hole closes: what a sent meanwhile (renewals, its handlers' stale completions) reaches the server late.
    proxy.release();
    await b.stop();
    const after = await env.submit(
      'work',
      Array.from({ length: 4 }, () => ({ mode: 'sleep' as const, ms: 10 })),
    );
    for (const id of after) await a.until('completed', SETTLE_MS, id); // a recovered, unaided
    expect(await Promise.all(ids.map((id) => env.store.getTask({ id, scope: Scope.global() })))).toEqual(settled); // the late writes changed nothing
    expect(a.exitCode()).toBeUndefined();
    expect(await env.invariants()).toMatchObject({ violations: [], knownGaps: [], figures: { repeatedEffects: 0 } });
    await a.stop();
  } finally {
    proxy.release();
    await proxy.close();
  }
}

export async function waitForAllSucceeded(env: FaultEnvironment, workers: ChildWorker[] = []): Promise<void> {
  await waitFor(
    async () => (await env.countAcknowledged('SUCCESS')) === env.acknowledged.length,
    `all ${env.acknowledged.length} acknowledged tasks to succeed`,
    SETTLE_MS,
    200,
  ).catch(async (error: Error) => {
    // What a stuck drain leaves to look at: the statuses, and each worker's last words.
    const now = (await env.store.now()).getTime();
    const statuses: Record<string, number> = {};
    for (const task of await allTasks(env.store)) {
      const key = `${task.status}${task.leaseUntil !== null && task.leaseUntil.getTime() < now ? ' (expired)' : ''}`;
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
    const last = workers.map((w) => `${w.config.label} exit=${String(w.exitCode())} ${JSON.stringify(w.events.slice(-4))}\n${w.log.slice(-1000)}`);
    throw new Error(`${error.message}\n${JSON.stringify(statuses)}\n${last.join('\n')}`);
  });
}

async function stopAll(workers: ChildWorker[]): Promise<void> {
  await Promise.all(workers.map((w) => w.stop()));
}

/**
 * Submits small batches back to back (`pauseMs` between them: a load the workers keep up with); a batch counts as
 * acknowledged only when its insert returned, and `acknowledgedAt` has the time each batch was.
 */
export function submitUntilStopped(
  env: FaultEnvironment,
  pauseMs = 0,
): { stop(): Promise<void>; failures(): number; acknowledgedSinceRestart(): number; acknowledgedAt: number[] } {
  let running = true;
  let failures = 0;
  let afterFailure = 0;
  const acknowledgedAt: number[] = [];
  const loop = (async () => {
    while (running) {
      try {
        await env.submit(
          'work',
          Array.from({ length: 20 }, () => ({ mode: 'sleep' as const, ms: 5 })),
        );
        acknowledgedAt.push(Date.now());
        if (failures > 0) afterFailure += 20;
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      } catch {
        failures += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
    failures: () => failures,
    acknowledgedSinceRestart: () => afterFailure,
    acknowledgedAt,
  };
}
