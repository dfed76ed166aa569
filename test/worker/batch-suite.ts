/**
 * Batch handlers (executeBatch) end to end on any store: one call for many
 * tasks, each with its own lease, attempt, context and outcome (partial
 * success, retries, dead letters); a lost lease or a cancellation aborts only
 * that task's part; maxWaitMs calls a short batch; a graceful stop runs what
 * was gathered; a payload that fails its schema fails alone.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import type { BatchItem, BatchItemResult, BatchOptions } from '../../src/core/batch.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import { defineTask, TaskResult, type AnyTaskDefinition, type TaskDefinition } from '../../src/core/definition.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { Store } from '../../src/store/types.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

type Payload = { n: number };

/** Resolves once the signal has fired (at once if it has already). */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Resolves once the worker has started two executions. */
function startedTwice(worker: Worker): Promise<void> {
  let started = 0;
  return new Promise((resolve) => worker.on('started', () => ++started === 2 && resolve()));
}

/** The calls a batch handler received: the task ids of each. */
interface Calls {
  ids: string[][];
}

export function runBatchSuite(factory: StoreFactory): void {
  describe(`batch handlers on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    beforeEach(() => {
      store = env.store;
    });

    const setup = (tasks: AnyTaskDefinition[], options: Partial<WorkerOptions> = {}): { client: TaskLeaseClient; worker: Worker } => {
      const client = createClient({ store, tasks });
      const worker = createWorker({ store, tasks, ...FAST_WORKER, concurrency: 10, ...options });
      env.track(worker);
      return { client, worker };
    };
    const taskOf = async (id: string): Promise<Task> => (await store.getTask({ id, scope: Scope.global() }))!;
    const submitN = async (client: TaskLeaseClient, type: string, count: number, maxAttempts = 3): Promise<string[]> =>
      (await client.submitMany(Array.from({ length: count }, (_, n) => ({ type, payload: { n }, maxAttempts })))).map((r) => r.task.id);
    const untilFinal = (ids: string[]) =>
      waitFor(
        async () => {
          const tasks = await Promise.all(ids.map(taskOf));
          return tasks.every((t) => ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'].includes(t.status)) ? tasks : null;
        },
        `tasks ${ids.join(', ')} to finish`,
      );
    const recording =
      (calls: Calls, answer: (items: readonly BatchItem<Payload>[], call: number) => BatchItemResult[] | Promise<BatchItemResult[]>) =>
      async (_ctx: unknown, items: readonly BatchItem<Payload>[]) => {
        calls.ids.push(items.map((item) => item.ctx.taskId));
        return answer(items, calls.ids.length);
      };

    /** A batch type whose calls succeed for every task, recording the ids of each call. */
    const allSucceed = (type: string, batch: BatchOptions): { t: TaskDefinition<Payload>; calls: Calls } => {
      const calls: Calls = { ids: [] };
      return { calls, t: defineTask<Payload>({ type, batch, executeBatch: recording(calls, (items) => items.map(() => undefined)) }) };
    };

    it('runs a batch of N in one call, each task with its own context, payload and result', async () => {
      const calls: Calls = { ids: [] };
      const sizes: number[] = [];
      const t = defineTask<Payload>({
        type: 'batch-one-call',
        schema: z.object({ n: z.number() }),
        batch: { maxSize: 5, maxWaitMs: 30_000 },
        executeBatch: recording(calls, (items) =>
          items.map((item) => TaskResult.success({ result: { doubled: item.payload.n * 2, attempt: item.ctx.attempt } })),
        ),
      });
      const { client, worker } = setup([t]);
      worker.on('batchStarted', ({ size }) => sizes.push(size));
      const registry = new Registry();
      createMetrics({ registry }).attachWorker(worker);
      // The outcomes of one call reach the outcome writer together: one fenced statement for all five.
      const writes: number[] = [];
      const { finishAttempts, finishAndClaim } = store;
      store.finishAttempts = (params) => (writes.push(params.outcomes.length), finishAttempts.call(store, params));
      store.finishAndClaim = (params) => (writes.push(params.outcomes.length), finishAndClaim.call(store, params));
      const ids = await submitN(client, t.type, 5);
      worker.start();
      const tasks = await untilFinal(ids);
      expect(writes).toEqual([5]);
      expect(calls.ids).toHaveLength(1);
      expect([...calls.ids[0]!].sort()).toEqual([...ids].sort());
      expect(sizes).toEqual([5]);
      for (const task of tasks)
        expect(task).toMatchObject({ status: 'SUCCESS', attemptCount: 1, result: { doubled: (task.payload as Payload).n * 2, attempt: 1 } });
      const histogram = (await registry.getMetricsAsJSON()).find((m) => m.name === 'async_task_batch_size')!;
      const sum = (histogram.values as { metricName?: string; labels: Record<string, unknown>; value: number }[]).find(
        (v) => v.metricName === 'async_task_batch_size_sum' && v.labels.task_type === t.type,
      );
      expect(sum?.value).toBe(5);
    });

    it('partial success: each task by its own result — success, a retried error, a dead-lettered TaskFailure, a snooze', async () => {
      const calls: Calls = { ids: [] };
      const t = defineTask<Payload>({
        type: 'batch-partial',
        batch: { maxSize: 4, maxWaitMs: 100 },
        executeBatch: recording(calls, (items) =>
          items.map((item): BatchItemResult => {
            const { n } = item.payload;
            if (n === 1 && item.ctx.attempt === 1) return new Error('flaky');
            if (n === 2) return new TaskFailure('bad record', { code: 'BAD_RECORD', retryable: false });
            if (n === 3 && item.ctx.task.attemptBase === 0 && item.ctx.attempt === 1) return TaskResult.snooze(10);
            return TaskResult.success({ result: { n, attempt: item.ctx.attempt } });
          }),
        ),
      });
      const { client, worker } = setup([t]);
      const ids = await submitN(client, t.type, 4);
      worker.start();
      const [ok, flaky, bad, snoozed] = await untilFinal(ids);
      expect(calls.ids[0]).toHaveLength(4);
      expect(ok).toMatchObject({ status: 'SUCCESS', attemptCount: 1, result: { n: 0, attempt: 1 } });
      expect(flaky).toMatchObject({ status: 'SUCCESS', attemptCount: 2, result: { n: 1, attempt: 2 } });
      expect(bad).toMatchObject({ status: 'FAILED', lastErrorCode: 'BAD_RECORD', attemptCount: 1 });
      expect(snoozed).toMatchObject({ status: 'SUCCESS', result: { n: 3 } });
      const letters = await store.listDeadLetters({ scope: Scope.global(), limit: 10 });
      expect(letters.map((d) => [d.originalTaskId, d.errorCode])).toEqual([[bad!.id, 'BAD_RECORD']]);
      expect((await client.failures(flaky!.id)).map((f) => f.errorCode)).toEqual(['HANDLER_ERROR']);
    });

    it('a call that throws fails every task of the batch with that error, each by its own retry rules', async () => {
      const calls: Calls = { ids: [] };
      const t = defineTask<Payload>({
        type: 'batch-throws',
        batch: { maxSize: 2, maxWaitMs: 100 },
        executeBatch: recording(calls, (items, call) => {
          if (call === 1) throw new TaskFailure('downstream is down', { code: 'DOWNSTREAM' });
          return items.map(() => undefined);
        }),
      });
      const { client, worker } = setup([t]);
      const [once] = await submitN(client, t.type, 1, 1);
      const [twice] = await submitN(client, t.type, 1, 2);
      worker.start();
      const [a, b] = await untilFinal([once!, twice!]);
      expect(calls.ids[0]).toHaveLength(2);
      expect(a).toMatchObject({ status: 'FAILED', lastErrorCode: 'DOWNSTREAM', attemptCount: 1 });
      expect(b).toMatchObject({ status: 'SUCCESS', attemptCount: 2 });
      expect((await store.listDeadLetters({ scope: Scope.global(), limit: 10 })).map((d) => d.originalTaskId)).toEqual([once]);
    });

    it('a result of the wrong shape fails every task of the call for good (BATCH_RESULT_INVALID)', async () => {
      const t = defineTask<Payload>({
        type: 'batch-bad-shape',
        batch: { maxSize: 2, maxWaitMs: 100 },
        executeBatch: () => [undefined] as BatchItemResult[],
      });
      const { client, worker } = setup([t]);
      const ids = await submitN(client, t.type, 2);
      worker.start();
      for (const task of await untilFinal(ids)) expect(task).toMatchObject({ status: 'FAILED', lastErrorCode: 'BATCH_RESULT_INVALID', attemptCount: 1 });
    });

    it('a task whose payload fails its schema or validate fails alone and is not passed to the call', async () => {
      const calls: Calls = { ids: [] };
      const definition = {
        type: 'batch-validated',
        schema: z.object({ n: z.number() }),
        validate: (payload: Payload) => {
          if (payload.n === 7) throw new TaskFailure('seven is not allowed', { code: 'NOT_ALLOWED', retryable: false });
        },
        batch: { maxSize: 3, maxWaitMs: 100 },
        executeBatch: recording(calls, (items) => items.map(() => undefined)),
      };
      const t = defineTask<Payload>(definition);
      // A producer without the schema (an older deployment) submits a payload the worker's schema refuses.
      const loose = createClient({ store, tasks: [defineTask({ type: t.type })] });
      const { worker } = setup([t]);
      const [bad] = (await loose.submitMany([{ type: t.type, payload: { n: 'x' } }])).map((r) => r.task.id);
      const [vetoed, good1, good2] = (await loose.submitMany([7, 1, 2].map((n) => ({ type: t.type, payload: { n } })))).map((r) => r.task.id);
      worker.start();
      const [b, v, g1, g2] = await untilFinal([bad!, vetoed!, good1!, good2!]);
      expect(b).toMatchObject({ status: 'FAILED', lastErrorCode: 'PAYLOAD_INVALID' });
      expect(v).toMatchObject({ status: 'FAILED', lastErrorCode: 'NOT_ALLOWED' });
      expect([g1!.status, g2!.status]).toEqual(['SUCCESS', 'SUCCESS']);
      expect(calls.ids.flat().sort()).toEqual([good1, good2].sort());
    });

    it('a lost lease aborts only that task’s part: its result is discarded, the others succeed, it runs again', async () => {
      const calls: Calls = { ids: [] };
      let stolen: string | null = null;
      const reasons: string[] = [];
      const t = defineTask<Payload>({
        type: 'batch-lease-lost',
        batch: { maxSize: 3, maxWaitMs: 100 },
        executeBatch: recording(calls, async (items, call) => {
          if (call === 1) {
            // Another party takes one task's lease (here: handed back through the store, as a stop elsewhere would).
            const victim = items[1]!.ctx;
            stolen = victim.taskId;
            const { task } = victim;
            expect(
              await store.releaseTasks({ leases: [{ taskId: task.id, workerId: task.leaseOwner!, attempt: task.attemptCount, token: task.leaseToken! }] }),
            ).toBe(1);
            await aborted(victim.signal);
            reasons.push((victim.signal.reason as { code: string }).code);
            expect(items.filter((item) => item.ctx.signal.aborted)).toHaveLength(1);
          }
          return items.map(() => TaskResult.success({ result: { call } }));
        }),
      });
      const { client, worker } = setup([t]);
      const lost: string[] = [];
      worker.on('leaseLost', ({ task }) => lost.push(task.id));
      const ids = await submitN(client, t.type, 3);
      worker.start();
      const tasks = await untilFinal(ids);
      expect(reasons).toEqual(['LEASE_LOST']);
      expect(lost).toEqual([stolen]);
      for (const task of tasks) {
        if (task.id === stolen) expect(task).toMatchObject({ status: 'SUCCESS', attemptCount: 2, result: { call: 2 } });
        else expect(task).toMatchObject({ status: 'SUCCESS', attemptCount: 1, result: { call: 1 } });
      }
      expect(calls.ids[1]).toEqual([stolen]);
    });

    it('a cancellation aborts only that task’s part: it ends CANCELLED, the others succeed', async () => {
      let cancelled: string | null = null;
      const t = defineTask<Payload>({
        type: 'batch-cancel',
        batch: { maxSize: 3, maxWaitMs: 100 },
        executeBatch: async (_ctx, items) => {
          const victim = items[0]!.ctx;
          cancelled = victim.taskId;
          await client.requestCancellation(victim.taskId);
          await aborted(victim.signal);
          return items.map(() => TaskResult.success());
        },
      });
      const { client, worker } = setup([t]);
      const ids = await submitN(client, t.type, 3);
      worker.start();
      const tasks = await untilFinal(ids);
      for (const task of tasks) expect(task.status).toBe(task.id === cancelled ? 'CANCELLED' : 'SUCCESS');
    });

    it('a timeout aborts only that task’s part: it fails TIMEOUT, the others succeed', async () => {
      let timedOut: string | null = null;
      const t = defineTask<Payload>({
        type: 'batch-timeout',
        batch: { maxSize: 3, maxWaitMs: 100 },
        executeBatch: async (_ctx, items) => {
          const victim = items.find((item) => item.ctx.task.deadlineAt !== null)!.ctx;
          timedOut = victim.taskId;
          await aborted(victim.signal);
          return items.map(() => TaskResult.success());
        },
      });
      const { client, worker } = setup([t]);
      const ids = await submitN(client, t.type, 2);
      const [late] = (await client.submitMany([{ type: t.type, payload: { n: 9 }, deadlineAt: new Date(Date.now() + 3000) }])).map((r) => r.task.id);
      worker.start();
      const tasks = await untilFinal([...ids, late!]);
      expect(timedOut).toBe(late);
      for (const task of tasks) expect([task.status, task.lastErrorCode]).toEqual(task.id === late ? ['FAILED', 'TIMEOUT'] : ['SUCCESS', null]);
    });

    it('a task cancelled while its batch gathers leaves it (its slot freed at once); the others are called without it', async () => {
      const { t, calls } = allSucceed('batch-cancel-gathering', { maxSize: 3, maxWaitMs: 3000 });
      const { client, worker } = setup([t]);
      const [gone, kept] = await submitN(client, t.type, 2);
      const bothStarted = startedTwice(worker);
      worker.start();
      await bothStarted;
      expect(await client.requestCancellation(gone!)).toBe('CANCEL_REQUESTED');
      const [g, k] = await untilFinal([gone!, kept!]);
      expect([g!.status, k!.status]).toEqual(['CANCELLED', 'SUCCESS']);
      expect(calls.ids).toEqual([[kept]]);
    });

    it('maxWaitMs calls a batch smaller than maxSize; no call holds more tasks than the worker has slots', async () => {
      const { t, calls } = allSucceed('batch-short', { maxSize: 50, maxWaitMs: 200 });
      const { client, worker } = setup([t], { concurrency: 4 });
      let firstStart = 0;
      let firstCall = 0;
      worker.once('started', () => (firstStart = Date.now()));
      worker.once('batchStarted', () => (firstCall = Date.now()));
      const few = await submitN(client, t.type, 3);
      worker.start();
      await untilFinal(few);
      expect(calls.ids).toEqual([expect.arrayContaining(few)]);
      expect(firstCall - firstStart).toBeGreaterThanOrEqual(150);
      // Seven more with four slots: full calls of at most four (a full worker calls at once, without waiting).
      const more = await submitN(client, t.type, 7);
      await untilFinal(more);
      const later = calls.ids.slice(1);
      expect(later.flat().sort()).toEqual([...more].sort());
      for (const ids of later) expect(ids.length).toBeLessThanOrEqual(4);
    });

    it('a graceful stop runs the batch it gathered at once (no wait for maxWaitMs)', async () => {
      const { t, calls } = allSucceed('batch-stop', { maxSize: 50, maxWaitMs: 60_000 });
      const { client, worker } = setup([t], { shutdownGraceMs: 30_000 }); // without the flush, stop would wait out the grace
      const ids = await submitN(client, t.type, 2);
      const bothStarted = startedTwice(worker);
      worker.start();
      await bothStarted;
      const stoppedAt = Date.now();
      await worker.stop();
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      expect(calls.ids).toHaveLength(1);
      for (const task of await Promise.all(ids.map(taskOf))) expect(task.status).toBe('SUCCESS');
    });
  });
}
