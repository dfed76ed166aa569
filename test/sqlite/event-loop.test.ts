/**
 * SQLite answers synchronously, so a worker draining a long backlog must still
 * yield to timers and I/O (heartbeats, stop) and keep its leases bounded.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';

describe('a worker on SQLite with a long backlog', () => {
  let store: Store;
  beforeEach(async () => {
    store = await sqliteFactory.create();
  });
  afterEach(() => sqliteFactory.destroy(store));

  it('lets timers run, holds at most two capacities of leases, and stops at once', async () => {
    const task = defineTask({ type: 'quick', execute: () => undefined });
    const client = createClient({ store, tasks: [task] });
    for (let i = 0; i < 40_000; i += 5000) await client.submitMany(Array.from({ length: 5000 }, () => ({ type: 'quick', payload: {} })));
    const worker = createWorker({ store, tasks: [task], concurrency: 10, prefetch: 100, globalConcurrency: 1e6, typeConcurrency: 1e6 });
    let maxLeased = 0;
    let done = 0;
    worker.on('claimed', () => void store.leasedCounts().then((c) => (maxLeased = Math.max(maxLeased, c.quick ?? 0))));
    worker.on('completed', () => (done += 1));
    worker.start();
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      const asked = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 10));
      delays.push(performance.now() - asked);
    }
    await waitFor(() => done > 1000, 'progress');
    const stopping = performance.now();
    await worker.stop();
    expect(performance.now() - stopping).toBeLessThan(2000);
    expect(Math.max(...delays)).toBeLessThan(1000); // a 10 ms timer, never starved for long
    expect(maxLeased).toBeLessThanOrEqual(2 * (10 + 100));
    const counts = await store.countByStatus({ scope: Scope.global() });
    expect(counts.RUNNING).toBe(0);
    expect(counts.QUEUED + counts.SUCCESS).toBe(40_000);
  });
});
