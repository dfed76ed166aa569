/**
 * A worker keeps the leases it holds while its own queue is long (issue 22):
 * its doubts are for the database's silence, not for waits of its own.
 *
 * FAULTS.md 15 with the settings of the outside run that found the
 * regression: 1,000 tasks whose handler throws at once, maxAttempts 3, retry
 * base 2 s ×2 capped at 3 s, lease 2 s, heartbeat 0.5 s, two worker
 * processes at concurrency 600 with claims of 600. On a healthy database
 * every task runs exactly maxAttempts times and ends FAILED with its dead
 * letter; no worker gives up a lease of its own (a burst of failures is the
 * worker's own queue, not the database's silence), so no attempt ends
 * LEASE_EXPIRED and no task is quarantined.
 *
 * FAULTS.md 18 on the stores with a pool: a pool of 2, concurrency 16,
 * handlers holding main-pool connections for 2 s, lease 6 s, heartbeat 1 s.
 * Claims queue behind the handlers for a connection far longer than a
 * lease; the leases they get count from when they run. No handler that owns
 * its task is aborted, and no gap between heartbeats reaches the lease.
 */
import { expect, it } from 'vitest';
import { loadavg } from 'node:os';
import { waitFor } from '../helpers/wait.js';
import type { ChildWorker } from '../process/harness.js';
import type { FaultEnvironment } from './environment.js';
import { allTasks } from './invariants.js';

const TASKS = 1000;
/** Case 18: more tasks than slots, so that claims queue behind handlers holding the pool. */
const HOGS = 24;
const MAX_ATTEMPTS = 3;
const BURST = { concurrency: 600, claimBatchSize: 600, retry: { baseDelayMs: 2000, multiplier: 2, maxDelayMs: 3000 } } as const;

/** The longest gap between two heartbeats that both renewed leases (a worker holding none sends none). */
function longestHeartbeatGap(worker: ChildWorker): number {
  const beats = worker.events.filter((event) => event.event === 'heartbeat');
  return Math.max(0, ...beats.slice(1).map((beat, i) => (beat.renewed! > 0 && beats[i]!.renewed! > 0 ? beat.at! - beats[i]!.at! : 0)));
}

/** The longest gap between heartbeats, and the longest wait for a connection and round trip of one, per worker. */
function heartbeatFigures(workers: readonly ChildWorker[]): string {
  return workers
    .map((worker) => {
      const beats = worker.events.filter((event) => event.event === 'heartbeat');
      const most = (key: 'waitMs' | 'roundTripMs'): number => Math.round(Math.max(0, ...beats.map((beat) => beat[key] ?? 0)));
      return `${worker.config.label}: ${beats.length} beats, longest gap ${longestHeartbeatGap(worker)} ms, wait ${most('waitMs')} ms, round trip ${most('roundTripMs')} ms`;
    })
    .join('; ');
}

/** Case 15: in the whole fault suite (npm run test:faults), where its load is the machine's and its figures are printed. */
export function retryBurstCase(env: () => FaultEnvironment): void {
  it(`${TASKS.toLocaleString('en')} tasks fail at once: each runs exactly ${MAX_ATTEMPTS} times, no lease is given up, none is quarantined`, async () => {
    const workers = [env().worker('burst-a', ['fail'], BURST), env().worker('burst-b', ['fail'], BURST)];
    await Promise.all(workers.map((worker) => worker.until('ready')));
    const load = loadavg()[0]!;
    const began = Date.now();
    await env().submit(
      'fail',
      Array.from({ length: TASKS }, () => ({ mode: 'throw' as const })),
      { maxAttempts: MAX_ATTEMPTS },
    );
    await waitFor(async () => (await env().countStatus('FAILED')) === TASKS, `all ${TASKS} tasks to fail for good`, 150_000, 200);
    const drainMs = Date.now() - began;
    await Promise.all(workers.map((worker) => worker.stop()));
    const givenUp = workers.flatMap((worker) => worker.events.filter((event) => event.event === 'leaseLost'));
    expect(givenUp.length, `leases lost by the workers on a healthy database; heartbeats: ${heartbeatFigures(workers)}`).toBe(0);
    const tasks = await allTasks(env().store, ['FAILED']);
    const runs = new Map<number, number>();
    for (const task of tasks) runs.set(task.attemptCount - task.attemptBase, (runs.get(task.attemptCount - task.attemptBase) ?? 0) + 1);
    expect(Object.fromEntries(runs), 'tasks by attempts spent').toEqual({ [MAX_ATTEMPTS]: TASKS });
    expect(tasks.filter((task) => task.leaseExpiries > 0).length, 'tasks that lost a lease').toBe(0);
    expect(await env().executions()).toBe(TASKS * MAX_ATTEMPTS);
    expect(await env().invariants()).toMatchObject({ violations: [], figures: { executions: TASKS * MAX_ATTEMPTS } });
    console.log(`case 15 on ${env().dialect}: drained in ${drainMs} ms at load ${load.toFixed(2)} (1 min average at the start)`);
  }, 240_000);
}

/** Case 18, on the stores with a connection pool (SQLite has none). */
export function poolExhaustionCase(env: () => FaultEnvironment): void {
  it('handlers hold the main pool: no handler that owns its task is aborted, no heartbeat gap reaches the lease', async () => {
    const timing = { concurrency: 16, leaseMs: 6000, heartbeatIntervalMs: 1000 };
    // The last of 16 handlers waits 16 s for one of the 2 connections: longer than the store's default connect timeout.
    const worker = env().worker('pool-a', ['hog'], timing, { poolSize: 2, connectTimeoutMs: 60_000 });
    await worker.until('ready');
    const ids = await env().submit(
      'hog',
      Array.from({ length: HOGS }, () => ({ mode: 'pool' as const, ms: 2000 })),
    );
    await waitFor(async () => (await env().countStatus('SUCCESS')) === HOGS, `all ${HOGS} tasks to succeed`, 120_000, 200);
    await worker.stop();
    const trouble = worker.events.filter((event) => event.event === 'leaseLost' || event.event === 'aborted');
    expect(trouble.length, `handlers aborted or leases lost; heartbeats: ${heartbeatFigures([worker])}`).toBe(0);
    expect(longestHeartbeatGap(worker), heartbeatFigures([worker])).toBeLessThan(timing.leaseMs);
    for (const id of ids) expect(await env().attempts(id)).toEqual([{ attempt: 1, worker_id: 'pool-a', outcome: 'SUCCESS' }]);
    expect(await env().invariants()).toMatchObject({ violations: [], figures: { executions: HOGS, repeatedEffects: 0 } });
  }, 180_000);
}
