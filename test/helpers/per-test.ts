import { afterEach, beforeEach } from 'vitest';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from './factory.js';

/**
 * A fresh store for every test. Workers the test tracks are stopped before
 * the store is destroyed; a worker the test started without tracking and left
 * running fails the test (its row is still in the worker registry), instead
 * of being stopped quietly and leaking timers into the next test.
 */
export function perTestStore(factory: StoreFactory): { readonly store: Store; track<W extends { stop(): Promise<void> }>(worker: W): W } {
  let store: Store | undefined;
  const running: { stop(): Promise<void> }[] = [];
  beforeEach(async () => {
    store = await factory.create();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((worker) => worker.stop()));
    if (!store) return;
    // (A test that closed its store on purpose cannot be asked; its workers are tracked.)
    const leaked = await store.listWorkers({ seenWithinMs: 3_600_000 }).catch(() => []);
    await factory.destroy(store);
    if (leaked.length > 0)
      throw new Error(`the test left ${leaked.length} worker(s) running: ${leaked.map((w) => w.workerId).join(', ')} (track them or stop them)`);
  });
  return {
    get store() {
      return store!;
    },
    track(worker) {
      running.push(worker);
      return worker;
    },
  };
}
