import { afterEach, beforeEach } from 'vitest';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from './factory.js';

/**
 * A fresh store for every test, and whatever the test tracks (workers) stopped
 * before the store is destroyed: a test that leaves a worker running fails the next.
 */
export function perTestStore(factory: StoreFactory): { readonly store: Store; track<W extends { stop(): Promise<void> }>(worker: W): W } {
  let store: Store | undefined;
  const running: { stop(): Promise<void> }[] = [];
  beforeEach(async () => {
    store = await factory.create();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((worker) => worker.stop()));
    if (store) await factory.destroy(store);
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
