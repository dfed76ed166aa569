/**
 * Fairness on every dialect: a binding type limit shared among the live
 * workers of the type (F8), per-owner limits (OWNER:<owner> policies and the
 * default owner limit) read at every claim, and round robin across owners so
 * that one owner's backlog does not starve another's few tasks.
 */
import { describe, expect, it } from 'vitest';
import { ownerPolicyKey } from '../../src/core/policy-keys.js';
import type { Task } from '../../src/core/task.js';
import type { ClaimParams, PolicyInput, Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { claimParams, leaseOf, newTask, useStore } from './fixtures.js';

function ownerPolicy(owner: string, maxConcurrency: number | null, enabled = true): PolicyInput {
  return { policyKey: ownerPolicyKey(owner), taskType: null, maxConcurrency, maxAttempts: null, retryBaseDelayMs: null, enabled };
}

const register = (store: Store, workerId: string): Promise<void> =>
  store.registerWorker({ worker: { workerId, host: 'h', pid: 1, taskTypes: ['alpha'], concurrency: 10 } });

const byOwner = (tasks: readonly Task[]): Record<string, number> =>
  tasks.reduce<Record<string, number>>((counts, task) => ({ ...counts, [task.owner ?? '-']: (counts[task.owner ?? '-'] ?? 0) + 1 }), {});

const succeed = (store: Store, tasks: readonly Task[]) =>
  store.finishAttempts({ outcomes: tasks.map((t) => ({ kind: 'SUCCESS' as const, lease: leaseOf(t), artifactId: null, resultJson: null, progress: null })) });

export function runOwnerConformance(factory: StoreFactory): void {
  describe(`Store fairness: ${factory.dialect}`, () => {
    const current = useStore(factory);
    const claim = (overrides: Partial<ClaimParams>) => current.store.claimTasks(claimParams(overrides));

    it('a worker over its share of a binding type limit leaves a freed slot to the other live worker (F8)', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: Array.from({ length: 30 }, () => newTask()) });
      const shared = { typeConcurrency: 10, liveWithinMs: 60_000 };
      await register(store, 'w1');
      const first = await claim({ ...shared, workerId: 'w1', limit: 20 });
      expect(first).toHaveLength(10); // alone: the whole limit
      await register(store, 'w2');
      await succeed(store, first.slice(0, 1));
      // w1 holds 9 of 10 with a second worker live: its share is 5, and one free slot is not its to take.
      expect(await claim({ ...shared, workerId: 'w1', limit: 20 })).toHaveLength(0);
      expect(await claim({ ...shared, workerId: 'w2', limit: 20 })).toHaveLength(1);
      await succeed(store, first.slice(1, 5));
      // Four free: w2 (1 held) fills its share of 5; nothing is left for w1.
      expect(await claim({ ...shared, workerId: 'w2', limit: 20 })).toHaveLength(4);
      expect(await claim({ ...shared, workerId: 'w1', limit: 20 })).toHaveLength(0);
      // Without the registry (no liveWithinMs), a claim takes every free slot, as before.
      await succeed(store, first.slice(5, 7));
      expect(await claim({ typeConcurrency: 10, workerId: 'w1', limit: 20 })).toHaveLength(2);
    });

    it('an OWNER:<owner> policy caps that owner, changes apply at the next claim, and unowned tasks are not capped', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: [...Array.from({ length: 6 }, () => newTask({ owner: 'acme' })), ...Array.from({ length: 3 }, () => newTask())] });
      await store.savePolicy({ policy: ownerPolicy('acme', 2) });
      expect(byOwner(await claim({ limit: 20 }))).toEqual({ acme: 2, '-': 3 });
      expect(await claim({ limit: 20 })).toHaveLength(0);
      await store.savePolicy({ policy: ownerPolicy('acme', 3) });
      expect(byOwner(await claim({ limit: 20 }))).toEqual({ acme: 1 });
      await store.savePolicy({ policy: ownerPolicy('acme', 10, false) });
      expect(await claim({ limit: 20 })).toHaveLength(0); // disabled: acme's tasks wait
      await store.deletePolicy({ policyKey: ownerPolicyKey('acme') });
      expect(byOwner(await claim({ limit: 20 }))).toEqual({ acme: 3 }); // no policy, no default: unlimited
    });

    it('the default owner limit caps every owner without a policy; a policy overrides it', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: ['a', 'b', 'c'].flatMap((owner) => Array.from({ length: 5 }, () => newTask({ owner }))) });
      await store.savePolicy({ policy: ownerPolicy('c', 4) });
      expect(byOwner(await claim({ limit: 50, ownerConcurrency: 2 }))).toEqual({ a: 2, b: 2, c: 4 });
    });

    it("an owner's 1,000 queued tasks do not starve another owner's 10: they start within the first claim", async () => {
      const { store } = current;
      const big = Array.from({ length: 1000 }, () => newTask({ owner: 'big' }));
      for (let i = 0; i < big.length; i += 500) await store.insertTasks({ tasks: big.slice(i, i + 500) });
      await store.insertTasks({ tasks: Array.from({ length: 10 }, () => newTask({ owner: 'small' })) });
      // Plain claims take the oldest first: the small owner waits behind the whole backlog.
      const plain = await claim({ limit: 10, workerId: 'plain' });
      expect(byOwner(plain)).toEqual({ big: 10 });
      await succeed(store, plain);
      // Round robin across owners: both owners' first tasks, in turns.
      expect(byOwner(await claim({ limit: 10, fairOwners: true }))).toEqual({ big: 5, small: 5 });
      // Any owner policy turns the round robin on for every worker.
      await store.savePolicy({ policy: ownerPolicy('nobody', 1) });
      expect(byOwner(await claim({ limit: 10 }))).toEqual({ big: 5, small: 5 });
    });
  });
}
