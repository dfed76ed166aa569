/**
 * Adaptive polling: soon after work was found, backing off to pollIntervalMs
 * while claims come back empty (the fallback when no wake-up comes, e.g. a
 * submit from another process on SQLite or MySQL).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';

describe('adaptive polling', () => {
  let store: Store;
  let worker: Worker | undefined;
  beforeEach(async () => {
    store = await sqliteFactory.create();
  });
  afterEach(async () => {
    await worker?.stop();
    await sqliteFactory.destroy(store);
  });

  it('polls soon after work, then backs off to pollIntervalMs', async () => {
    const claims: number[] = [];
    const counting: Store = Object.create(store, {
      claimTasks: { value: (p: Parameters<Store['claimTasks']>[0]) => (claims.push(Date.now()), store.claimTasks(p)) },
      // No wake-ups reach this worker: only its polls can find work.
      subscribe: { value: () => () => undefined },
    });
    const task = defineTask({ type: 'polled', execute: () => undefined });
    worker = createWorker({ store: counting, tasks: [task], pollIntervalMs: 400, minPollIntervalMs: 10, recoveryIntervalMs: 0 });
    const done = worker.waitFor('completed');
    worker.start();
    await store.insertTasks({
      tasks: [
        {
          id: 't1',
          taskType: 'polled',
          payloadJson: '{}',
          priority: 0,
          delayMs: 0,
          availableAt: null,
          deadlineAt: null,
          maxAttempts: 1,
          owner: null,
          idempotencyKey: null,
          traceId: null,
        },
      ],
    });
    await done;
    const foundAt = claims.length;
    const since = Date.now();
    await waitFor(() => claims.length >= foundAt + 8, 'eight more polls', 10_000);
    const gaps = claims
      .slice(foundAt - 1)
      .map((at, i, all) => (i === 0 ? 0 : at - all[i - 1]!))
      .slice(1);
    // 10, 20, 40, … up to 400: each gap at least the last (timers never fire early), the last ones at the cap
    expect(gaps[0]).toBeLessThan(200);
    expect(gaps.at(-1)).toBeGreaterThanOrEqual(390);
    expect(Date.now() - since).toBeGreaterThan(10 + 20 + 40 + 80 + 160 + 320 + 400 - 50);
  });
});
