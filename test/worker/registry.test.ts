import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';

describe('the worker registry', () => {
  let store: Store;
  beforeEach(async () => {
    store = await sqliteFactory.create();
  });
  afterEach(() => sqliteFactory.destroy(store));

  it('keeps a row while the worker runs and none after it stopped, even with a registration in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const refreshing = new Promise<void>((resolve) => (entered = resolve));
    let landedResolve!: () => void;
    const landed = new Promise<void>((resolve) => (landedResolve = resolve));
    let calls = 0;
    // From the first heartbeat on, a registration is slow to reach the database; stop() comes while one is in flight.
    const slow: Store = Object.create(store, {
      registerWorker: {
        value: async (p: Parameters<Store['registerWorker']>[0]) => {
          if (++calls < 2) return store.registerWorker(p);
          entered();
          await gate;
          await store.registerWorker(p);
          landedResolve();
        },
      },
    });
    const worker = createWorker({
      store: slow,
      tasks: [defineTask({ type: 'r', execute: () => undefined })],
      recoveryIntervalMs: 0,
      heartbeatIntervalMs: 20,
      leaseMs: 1000,
    });
    worker.start();
    await refreshing;
    const stopping = worker.stop();
    setTimeout(release, 50);
    await stopping;
    await landed; // the slow registration has reached the database by now, whichever came first
    expect(await store.listWorkers({ seenWithinMs: 60_000 })).toEqual([]);

    const running = createWorker({ store, tasks: [defineTask({ type: 'r', execute: () => undefined })], recoveryIntervalMs: 0 }).start();
    const registered = await waitFor(async () => {
      const rows = await store.listWorkers({ seenWithinMs: 60_000 });
      return rows.length > 0 ? rows : null;
    }, 'the running worker to register');
    expect(registered.map((w) => [w.workerId, w.taskTypes])).toEqual([[running.workerId, ['r']]]);
    await running.stop();
    expect(await store.listWorkers({ seenWithinMs: 60_000 })).toEqual([]);
  });
});
