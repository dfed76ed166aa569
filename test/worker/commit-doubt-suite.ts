/**
 * F2 (issue 11): an outcome write that commits but whose reply is lost (a
 * connection killed mid-commit, a database crash). The worker retries the
 * write; the retry's fence finds the lease already closed and answers "not
 * applied". Before the fix the worker then reported a lost lease instead of
 * the completion (metrics undercounted successes); now it re-reads the row
 * and reports what really happened.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, type AnyTaskDefinition } from '../../src/core/definition.js';
import { StoreError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';

export function runCommitDoubtSuite(factory: StoreFactory): void {
  describe(`outcome writes whose reply is lost on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    const options = {
      pollIntervalMs: 20,
      heartbeatIntervalMs: 200,
      leaseMs: 5000,
      recoveryIntervalMs: 0,
      logger: false as const,
      globalConcurrency: 100,
      typeConcurrency: 100,
      retry: { baseDelayMs: 10, maxDelayMs: 20, jitter: 0 },
    };

    /** Runs one task on a worker whose first outcome write loses its reply; answers what the worker reported first. */
    const firstReport = async (t: AnyTaskDefinition, reported: 'completed' | 'retryScheduled') => {
      const lossy = commitThenLoseReply(env.store, 1);
      const worker = env.track(createWorker({ store: lossy.store, tasks: [t], concurrency: 1, ...options }));
      const seen: { reported: string[]; lost: string[] } = { reported: [], lost: [] };
      worker.on(reported, ({ task }) => seen.reported.push(task.id));
      worker.on('leaseLost', ({ task }) => seen.lost.push(task.id));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(() => seen.reported.length + seen.lost.length > 0, 'the worker to report the first outcome');
      expect(lossy.lostReplies()).toBe(1); // the fault was injected: the write committed and "failed"
      return { taskId: task.id, seen };
    };

    it('a completion that committed before its reply was lost is reported as a completion, not a lost lease', async () => {
      const t = defineTask({ type: 'doubt-success', execute: () => ({ status: 'SUCCESS' as const, result: { ok: true } }) });
      const { taskId, seen } = await firstReport(t, 'completed');
      expect(seen).toEqual({ reported: [taskId], lost: [] });
      expect(await env.store.getTask({ id: taskId, scope: Scope.global() })).toMatchObject({ status: 'SUCCESS', result: { ok: true } });
    });

    it('a retry decision that committed before its reply was lost is reported as a retry', async () => {
      let runs = 0;
      const t = defineTask({
        type: 'doubt-retry',
        execute: () => {
          if (++runs === 1) throw new Error('first run fails');
        },
      });
      const { taskId, seen } = await firstReport(t, 'retryScheduled');
      expect(seen).toEqual({ reported: [taskId], lost: [] });
      await waitFor(async () => (await env.store.getTask({ id: taskId, scope: Scope.global() }))?.status === 'SUCCESS', 'the second run to succeed');
    });
  });
}

/**
 * The store, except that the first `times` outcome writes commit and then
 * throw the error a dropped connection gives (StoreError, STORE_UNAVAILABLE),
 * as if the reply never arrived.
 */
function commitThenLoseReply(store: Store, times: number): { store: Store; lostReplies: () => number } {
  let lost = 0;
  const loseReply = <R>(result: R): R => {
    if (lost >= times) return result;
    lost += 1;
    throw new StoreError('connection terminated while the reply was on its way (simulated)');
  };
  const overrides: PropertyDescriptorMap = {
    finishAttempts: { value: async (params: Parameters<Store['finishAttempts']>[0]) => loseReply(await store.finishAttempts(params)) },
  };
  if (store.finishAndClaim) {
    overrides.finishAndClaim = { value: async (params: Parameters<NonNullable<Store['finishAndClaim']>>[0]) => loseReply(await store.finishAndClaim!(params)) };
  }
  return { store: Object.create(store, overrides) as Store, lostReplies: () => lost };
}
