/**
 * ctx.fence (worker/fence.ts) on every store: the fence strictly grows over
 * retries, a hand-back, a lease expiry swept and taken by another worker, an
 * operator's retry and a dead letter's replay (new cycles); it costs one
 * durable renewal on the first call of an attempt and none after; a lease
 * lost at the database rejects with LEASE_LOST, a cancelled attempt with
 * CANCELLED; a sandboxed handler gets it through the worker's thread.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskAbortedError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { RenewParams, RenewResult, Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { claimParams, leaseOf } from '../store/fixtures.js';

const G = Scope.global();
const options = { ...FAST_WORKER, recoveryIntervalMs: 0, concurrency: 1 };
const HANDLERS = new URL('./sandbox-handlers.ts', import.meta.url);

/**
 * The store, recording every renewal asked for durably; `fakeHeartbeats`: the other renewals answer "renewed"
 * without writing, so that the worker believes it holds a lease the database lets expire.
 */
function instrumented(store: Store, fakeHeartbeats = false) {
  const durable: RenewParams[] = [];
  const renewLeases = async (params: RenewParams): Promise<RenewResult> => {
    if (params.durable) durable.push(params);
    else if (fakeHeartbeats) return { renewed: params.leases.map((lease) => lease.taskId), cancelRequested: [], lost: [] };
    return store.renewLeases(params);
  };
  return { store: Object.create(store, { renewLeases: { value: renewLeases } }) as Store, durable };
}

export function runFenceSuite(factory: StoreFactory): void {
  describe(`fencing tokens (ctx.fence) on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('grows with every retry; one durable renewal per attempt however often the handler asks', async () => {
      const seen: number[][] = [];
      const t = defineTask({
        type: 'fenced',
        maxAttempts: 3,
        execute: async (ctx: TaskContext) => {
          const first = await ctx.fence();
          const again = await Promise.all([ctx.fence(), ctx.fence()]);
          seen.push([ctx.attempt, first, ...again]);
          if (ctx.attempt < 3) throw new Error('once more');
          return { status: 'SUCCESS' as const, result: { fence: first } };
        },
      });
      const counted = instrumented(env.store);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the task to succeed');
      await worker.stop();
      expect(seen).toEqual([
        [1, 1, 1, 1],
        [2, 2, 2, 2],
        [3, 3, 3, 3],
      ]);
      expect(counted.durable.map((p) => p.leases.map((l) => [l.taskId, l.attempt]))).toEqual([[[task.id, 1]], [[task.id, 2]], [[task.id, 3]]]);
    });

    it('grows over a hand-back and over a lease expiry swept and taken by another worker; the old leases are refused', async () => {
      const t = defineTask({ type: 'fenced', execute: async (ctx: TaskContext) => ({ status: 'SUCCESS' as const, result: { fence: await ctx.fence() } }) });
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      const durably = (lease: ReturnType<typeof leaseOf>, leaseMs: number) => env.store.renewLeases({ leases: [lease], leaseMs, durable: true });
      // A worker that took its fence (1) and handed the task back before it started (a graceful stop's prefetch buffer).
      const [first] = await env.store.claimTasks(claimParams({ workerId: 'first', taskTypes: ['fenced'], limit: 1 }));
      expect((await durably(leaseOf(first!), 30_000)).renewed).toEqual([task.id]);
      expect(await env.store.releaseTasks({ leases: [leaseOf(first!)] })).toBe(1);
      // One that took its fence (2), then froze past its lease: the sweep takes the task back.
      const [second] = await env.store.claimTasks(claimParams({ workerId: 'second', taskTypes: ['fenced'], limit: 1, leaseMs: 30_000 }));
      expect((await durably(leaseOf(second!), 200)).renewed).toEqual([task.id]);
      await waitFor(async () => (await env.store.recover({ batchSize: 10 })).requeued === 1, 'the sweep to requeue the expired lease', 30_000, 50);
      // Both old holders are refused if they ask again: neither gets a fence any more.
      expect((await durably(leaseOf(first!), 30_000)).lost).toEqual([task.id]);
      expect((await durably(leaseOf(second!), 30_000)).lost).toEqual([task.id]);
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the task to succeed');
      await worker.stop();
      const done = (await env.store.getTask({ id: task.id, scope: G }))!;
      expect([first!.attemptCount, second!.attemptCount, (done.result as { fence: number }).fence]).toEqual([1, 2, 3]);
      expect((await env.store.listAttempts({ taskId: task.id })).map((a) => [a.attempt, a.workerId, a.outcome])).toEqual([
        [1, 'first', 'RELEASED'],
        [2, 'second', 'LEASE_EXPIRED'],
        [3, worker.workerId, 'SUCCESS'],
      ]);
    });

    it('grows over an operator’s retry and a dead letter’s replay (new cycles)', async () => {
      const fences: number[] = [];
      const t = defineTask({
        type: 'fenced',
        maxAttempts: 1,
        execute: async (ctx: TaskContext) => {
          fences.push(await ctx.fence());
          if (fences.length < 3) throw new Error('fails for good');
        },
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      const statusIs = (status: string, after: number) => async () => {
        const now = await env.store.getTask({ id: task.id, scope: G });
        return now?.status === status && now.attemptCount === after;
      };
      worker.start();
      await waitFor(statusIs('FAILED', 1), 'the first attempt to fail');
      await client.retry(task.id);
      await waitFor(statusIs('FAILED', 2), 'the retried attempt to fail');
      const letters = await client.deadLetters.list();
      const latest = letters.find((letter) => letter.originalTaskId === task.id && letter.attemptCount === 2)!;
      expect((await client.deadLetters.replay(latest.id)).outcome).toBe('REPLAYED');
      await waitFor(statusIs('SUCCESS', 3), 'the replayed task to succeed');
      await worker.stop();
      expect(fences).toEqual([1, 2, 3]);
    });

    it('a lease lost at the database rejects with LEASE_LOST: the durable renewal finds it gone, the signal fires', async () => {
      let go: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (go = resolve));
      const answers: unknown[][] = [];
      const t = defineTask({
        type: 'fenced',
        maxAttempts: 2,
        execute: async (ctx: TaskContext) => {
          await released;
          try {
            answers.push([await ctx.fence()]);
          } catch (error) {
            answers.push([error, ctx.signal.aborted]);
            throw error;
          }
        },
      });
      // Heartbeats that only say "renewed": the lease ends in the database 1 s after the claim, and the sweep takes it.
      const counted = instrumented(env.store, true);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options, leaseMs: 1000 }));
      const lost: string[] = [];
      worker.on('leaseLost', ({ task, reason }) => lost.push(`${task.attemptCount}:${reason}`));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'RUNNING', 'the task to start');
      // (The first expiry costs no attempt: the sweep requeues the task, and the worker may run it again later.)
      const swept = async () => {
        const { requeued, failed } = await env.store.recover({ batchSize: 10 });
        return requeued + failed === 1;
      };
      await waitFor(swept, 'the sweep to take the expired lease', 30_000, 20);
      go();
      await waitFor(() => answers.length >= 1, 'the handler to ask for its fence');
      const [error, aborted] = answers[0] as [TaskAbortedError, boolean];
      expect(error).toBeInstanceOf(TaskAbortedError);
      expect([error.code, aborted]).toEqual(['LEASE_LOST', true]);
      expect(lost[0]).toBe('1:renewal');
      expect(counted.durable.filter((p) => p.leases[0]!.attempt === 1)).toHaveLength(1);
      await worker.stop();
      expect((await env.store.listAttempts({ taskId: task.id }))[0]).toMatchObject({ attempt: 1, outcome: 'LEASE_EXPIRED' });
    });

    it('a cancellation requested before the fence rejects it with CANCELLED: an attempt being cancelled starts no outside write', async () => {
      let go: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (go = resolve));
      const answers: unknown[] = [];
      const t = defineTask({
        type: 'fenced',
        execute: async (ctx: TaskContext) => {
          await released;
          answers.push(await ctx.fence().catch((error: unknown) => error));
        },
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'RUNNING', 'the task to start');
      await client.requestCancellation(task.id);
      go();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'CANCELLED', 'the task to end cancelled');
      await worker.stop();
      expect(answers).toEqual([expect.objectContaining({ name: 'TaskAbortedError', code: 'CANCELLED' })]);
    });

    it('a sandboxed handler gets its fence through the worker’s thread (one durable renewal)', async () => {
      const t = defineTask({ type: 'sbx.fence', maxAttempts: 1, sandbox: { module: HANDLERS, exportName: 'fenced' } });
      const counted = instrumented(env.store);
      env.track(createWorker({ store: counted.store, tasks: [t], ...options })).start();
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      const done = await waitFor(
        async () => {
          const now = await env.store.getTask({ id: task.id, scope: G });
          return now?.status === 'SUCCESS' || now?.status === 'FAILED' ? now : null;
        },
        'the sandboxed task to end',
        60_000,
        20,
      );
      expect([done.status, done.result]).toEqual(['SUCCESS', { fence: 1, again: 1 }]);
      expect(counted.durable).toHaveLength(1);
    }, 60_000);
  });
}
