/** Worker health (seed article 2, AsyncTaskWorkerHealthIndicator) on a real SQLite store. */
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { workerHealth, worstStatus } from '../../src/observe/health.js';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import { perTestStore } from '../helpers/per-test.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, untilAborted } from './suite.js';

describe('worker health', () => {
  const env = perTestStore(sqliteFactory);
  let store: Store;
  beforeEach(() => {
    store = env.store;
  });

  it('is DOWN until started, UP when idle, DEGRADED when its slots are full, DOWN once stopped', async () => {
    const held = defineTask({ type: 'health.held', execute: (ctx) => untilAborted(ctx.signal) });
    const client = createClient({ store, tasks: [held] });
    const worker = createWorker({ store, tasks: [held], ...FAST, concurrency: 1, workerId: 'health-worker' });
    env.track(worker);

    const idle = workerHealth(worker);
    expect(idle.status).toBe('DOWN');
    expect(idle.error).toMatch(/not running \(state idle\)/);

    worker.start();
    expect(workerHealth(worker)).toEqual({
      status: 'UP',
      details: {
        workerId: 'health-worker',
        state: 'running',
        running: true,
        active: 0,
        buffered: 0,
        maxConcurrency: 1,
        utilization: 0,
        registeredTaskTypes: ['health.held'],
        storeProblem: null,
        limits: { global: FAST.globalConcurrency, perType: { 'health.held': FAST.typeConcurrency }, usable: FAST.typeConcurrency },
      },
    });

    const started = worker.waitFor('started');
    const { task } = await client.submit(held, {});
    await started;
    const busy = workerHealth(worker);
    expect(busy).toMatchObject({ status: 'DEGRADED', details: { active: 1, utilization: 1 } });
    expect(busy.error).toMatch(/load 100% is above 90%/);
    expect(workerHealth(worker, { utilizationThreshold: 1 }).status).toBe('UP');
    expect(worstStatus([{ status: 'UP', details: null }, busy])).toBe('DEGRADED');

    await client.requestCancellation(task.id);
    await waitFor(() => workerHealth(worker).status === 'UP', 'the slot to free up');

    await worker.stop();
    expect(workerHealth(worker)).toMatchObject({ status: 'DOWN', details: { state: 'stopped', running: false } });
    expect(() => workerHealth(worker, { utilizationThreshold: 1.5 })).toThrow(/utilizationThreshold/);
  });
});
