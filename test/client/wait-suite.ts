/**
 * client.waitFor on any store: the finished task, whatever the worker that
 * ran it; typed errors on timeout, abort, a missing or foreign task, bad
 * options. Each dialect runs it from test/client/wait-<dialect>.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { InvalidOptionsError, NotFoundError, ValidationError, WaitError } from '../../src/core/errors.js';
import { uuidv7 } from '../../src/core/ids.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const HOUR = 3_600_000;

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export function runWaitSuite(factory: StoreFactory): void {
  describe(`waitFor on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let client: TaskLeaseClient;
    const idle = defineTask({ type: 'wait.idle' });
    beforeEach(() => {
      client = createClient({ store: env.store, tasks: [idle] });
    });

    it('resolves with the finished task once a worker ends it, not before', async () => {
      const open = gate();
      const job = defineTask<{ n: number }>({
        type: 'wait.job',
        execute: async (_ctx, payload) => {
          await open.promise;
          return TaskResult.success({ result: { doubled: payload.n * 2 } });
        },
      });
      const submitter = createClient({ store: env.store, tasks: [job] });
      const { task } = await submitter.submit(job, { n: 21 });
      const worker = env.track(createWorker({ store: env.store, tasks: [job], ...FAST_WORKER }));
      await worker.start();
      let settled: Task | undefined;
      const waiting = submitter.waitFor(task.id, { minPollMs: 5, maxPollMs: 50 }).then((t) => (settled = t));
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: Scope.global() }))?.status === 'RUNNING', 'the task to run');
      expect(settled).toBeUndefined();
      open.open();
      const done = await waiting;
      expect(done).toMatchObject({ id: task.id, status: 'SUCCESS', result: { doubled: 42 } });
    });

    it('wakes on the outcome write, not on its poll timer (one read before, one after)', async () => {
      const open = gate();
      const job = defineTask({
        type: 'wait.push',
        execute: async () => {
          await open.promise;
          return TaskResult.success({});
        },
      });
      const counted = countingReads(env.store);
      const waiter = createClient({ store: counted.store, tasks: [job] });
      const { task } = await waiter.submit(job, {});
      await env.track(createWorker({ store: env.store, tasks: [job], ...FAST_WORKER })).start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: Scope.global() }))?.status === 'RUNNING', 'the task to run');
      // No poll is due before the timeout: only a wake-up can end this wait with the task.
      const waiting = waiter.waitFor(task.id, { minPollMs: 60_000, maxPollMs: 60_000, timeoutMs: 20_000 });
      await waitFor(() => counted.reads >= 1, 'the first read');
      open.open();
      expect(await waiting).toMatchObject({ id: task.id, status: 'SUCCESS' });
      expect(counted.reads).toBeLessThanOrEqual(4);
    });

    it('resolves with a task cancelled while it waits (any terminal status ends the wait)', async () => {
      const { task } = await client.submit(idle, {}, { delayMs: HOUR });
      const waiting = client.waitFor(task.id, { minPollMs: 5 });
      await client.requestCancellation(task.id);
      expect(await waiting).toMatchObject({ id: task.id, status: 'CANCELLED' });
    });

    it('rejects with WAIT_TIMEOUT after timeoutMs, naming the last status it read', async () => {
      const { task } = await client.submit(idle, {}, { delayMs: HOUR });
      const error = await client.waitFor(task.id, { timeoutMs: 100 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WaitError);
      expect(error).toMatchObject({ code: 'WAIT_TIMEOUT', taskId: task.id, lastStatus: 'QUEUED' });
    });

    it('rejects with WAIT_ABORTED when the signal aborts, also when it already had', async () => {
      const { task } = await client.submit(idle, {}, { delayMs: HOUR });
      const controller = new AbortController();
      const waiting = client.waitFor(task.id, { signal: controller.signal, minPollMs: 5 }).catch((e: unknown) => e);
      controller.abort();
      expect(await waiting).toMatchObject({ code: 'WAIT_ABORTED', taskId: task.id });
      expect(await client.waitFor(task.id, { signal: AbortSignal.abort() }).catch((e: unknown) => e)).toMatchObject({ code: 'WAIT_ABORTED' });
    });

    it('answers not found for a missing task and for another owner\u2019s; refuses bad options', async () => {
      await expect(client.waitFor(uuidv7(), { timeoutMs: 1000 })).rejects.toBeInstanceOf(NotFoundError);
      const { task } = await client.submit(idle, {}, { owner: 'bob', delayMs: HOUR });
      await expect(client.waitFor(task.id, { scope: Scope.owner('alice'), timeoutMs: 1000 })).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.waitFor(task.id, { timeoutMs: 0 })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.waitFor(task.id, { timeout: 5 } as object)).rejects.toBeInstanceOf(InvalidOptionsError);
    });

    it('still waits for client events by name', async () => {
      const submitted = client.waitFor('submitted');
      const { task } = await client.submit(idle, {}, { delayMs: HOUR });
      expect((await submitted).tasks.map((t) => t.id)).toEqual([task.id]);
    });
  });
}

/**
 * Another process's outcome wakes a waiter: `waiterStore` shares nothing in
 * this process with the writer (own connections, own bus), and no poll is
 * due before the timeout, so only the store's cross-process wake-up
 * (NOTIFY, the -wal watch) can end the wait with the task.
 */
export async function expectWokenAcrossStores(waiterStore: Store, submit: () => Promise<string>, finish: (id: string) => Promise<void>): Promise<void> {
  const counted = countingReads(waiterStore);
  const id = await submit();
  const waiting = createClient({ store: counted.store, tasks: [] }).waitFor(id, { minPollMs: 60_000, maxPollMs: 60_000, timeoutMs: 20_000 });
  await waitFor(() => counted.reads >= 1, 'the first read');
  await finish(id);
  expect(await waiting).toMatchObject({ id, status: 'SUCCESS' });
  expect(counted.reads).toBeLessThanOrEqual(4);
}

/** `store` with its task reads counted (the waiter's reads: a poll or a wake-up each). */
function countingReads(store: Store): { store: Store; readonly reads: number } {
  let reads = 0;
  const counted = new Proxy(store, {
    get(target, key) {
      if (key === 'getTask') return (params: Parameters<Store['getTask']>[0]) => ((reads += 1), target.getTask(params));
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store: counted,
    get reads() {
      return reads;
    },
  };
}
