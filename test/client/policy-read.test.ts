/**
 * Issue 16: a submit reads the policies (their maxAttempts) at most once a
 * second, and a steady stream of submits never waits for that read: a read
 * between one and two seconds old still serves while a fresh one is taken in
 * the background; an older one is read again first.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import type { Policy, Store } from '../../src/store/types.js';
import { sqliteFactory } from '../helpers/sqlite.js';

describe('submit and the policy read', () => {
  let store: Store;
  let reads = 0;
  let gate: Promise<void> | null = null;
  let open: () => void = () => undefined;
  const close = (): void => {
    gate = new Promise((resolve) => (open = resolve));
  };
  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    store = await sqliteFactory.create();
  });
  afterEach(async () => {
    vi.useRealTimers();
    open();
    await sqliteFactory.destroy(store);
  });

  it('waits for the first read and for a stale one, never for a refresh of a recent one', async () => {
    const listPolicies = store.listPolicies.bind(store);
    const counting: Store = Object.create(store, {
      listPolicies: {
        value: async (): Promise<Policy[]> => {
          reads += 1;
          await gate;
          return listPolicies();
        },
      },
    });
    const task = defineTask({ type: 'p' });
    const client = createClient({ store: counting, tasks: [task] });
    await client.submit(task, {});
    expect(reads).toBe(1);
    await client.submit(task, {});
    expect(reads).toBe(1); // fresh: no read

    close();
    vi.setSystemTime(Date.now() + 1500);
    await client.submit(task, {}); // resolves while the background read is held at the gate
    expect(reads).toBe(2);
    open();

    vi.setSystemTime(Date.now() + 5000);
    close();
    let done = false;
    const submitted = client.submit(task, {}).then(() => (done = true));
    await vi.waitFor(() => expect(reads).toBe(3));
    expect(done).toBe(false); // a stale read is taken before the insert
    open();
    await submitted;
    expect(done).toBe(true);
  });
});
