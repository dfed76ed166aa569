/**
 * FAULTS.md 15 with the settings of the outside run that found the
 * regression: 1,000 tasks whose handler throws at once, maxAttempts 3, retry
 * base 2 s ×2 capped at 3 s, lease 2 s, heartbeat 0.5 s, two worker
 * processes at concurrency 600 with claims of 600. On a healthy database
 * every task runs exactly maxAttempts times and ends FAILED with its dead
 * letter; no worker gives up a lease of its own (a burst of failures is the
 * worker's own queue, not the database's silence), so no attempt ends
 * LEASE_EXPIRED and no task is quarantined.
 */
import { expect, it } from 'vitest';
import { loadavg } from 'node:os';
import { waitFor } from '../helpers/wait.js';
import type { ChildWorker } from '../process/harness.js';
import type { FaultEnvironment } from './environment.js';
import { allTasks } from './invariants.js';

const TASKS = 1000;
const MAX_ATTEMPTS = 3;
const BURST = { concurrency: 600, claimBatchSize: 600, retry: { baseDelayMs: 2000, multiplier: 2, maxDelayMs: 3000 } } as const;

/** The longest gap between heartbeats, and the longest wait for a connection and round trip of one, per worker. */
export function heartbeatFigures(workers: readonly ChildWorker[]): string {
  return workers
    .map((worker) => {
      const beats = worker.events.filter((event) => event.event === 'heartbeat');
      const gaps = beats.slice(1).map((beat, i) => Number(beat.at) - Number(beats[i]!.at));
      const most = (key: 'waitMs' | 'roundTripMs'): number => Math.max(0, ...beats.map((beat) => beat[key] ?? 0));
      return `${worker.config.label}: ${beats.length} beats, longest gap ${Math.max(0, ...gaps)} ms, wait ${most('waitMs')} ms, round trip ${most('roundTripMs')} ms`;
    })
    .join('; ');
}

export function retryBurstCases(env: () => FaultEnvironment): void {
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
