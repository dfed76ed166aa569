/**
 * The worker suite: the engine end to end (client → store → worker) on any
 * store. Each dialect runs it from test/worker/<dialect>.test.ts. Tests wait
 * on worker events or store conditions, never on fixed sleeps.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { ClaimParams, Store } from '../../src/store/types.js';
import { defineTask, TaskResult, type AnyTaskDefinition } from '../../src/core/definition.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const FAST = FAST_WORKER;

function claimParams(workerId: string, taskTypes: string[]): ClaimParams {
  return { workerId, taskTypes, limit: 10, leaseMs: 30_000, globalConcurrency: 1000, typeConcurrency: 1000 };
}

/** A gate a handler waits on until the test opens it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export function runWorkerSuite(factory: StoreFactory): void {
  describe(`worker on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    beforeEach(() => {
      store = env.store;
    });

    const setup = (tasks: AnyTaskDefinition[], options: Partial<WorkerOptions> = {}): { client: TaskLeaseClient; worker: Worker } => {
      const client = createClient({ store, tasks });
      const worker = createWorker({ store, tasks, ...FAST, ...options });
      env.track(worker);
      return { client, worker };
    };
    const statusOf = async (id: string): Promise<Task> => (await store.getTask({ id, scope: Scope.global() }))!;
    const until = (id: string, status: Task['status']) => waitFor(async () => (await statusOf(id)).status === status, `task ${id} to be ${status}`);

    it('runs a task through its lifecycle with its validated payload', async () => {
      const seen: unknown[] = [];
      const echo = defineTask({
        type: 'echo',
        schema: z.object({ n: z.number() }),
        execute: (ctx, payload) => {
          seen.push(payload);
          return { status: 'SUCCESS', artifactId: `a-${payload.n}`, result: { doubled: payload.n * 2 } };
        },
      });
      const { client, worker } = setup([echo]);
      const { task } = await client.submit(echo, { n: 21 });
      const done = worker.waitFor('completed', (e) => e.task.id === task.id);
      worker.start();
      await done;
      expect(seen).toEqual([{ n: 21 }]);
      expect(await statusOf(task.id)).toMatchObject({ status: 'SUCCESS', artifactId: 'a-21', result: { doubled: 42 }, attemptCount: 1 });
    });

    it('does not start a delayed task early', async () => {
      const started: number[] = [];
      const t = defineTask({
        type: 'delayed',
        execute: () => {
          started.push(Date.now());
        },
      });
      const { client, worker } = setup([t]);
      worker.start();
      const submittedAt = Date.now();
      const { task } = await client.submit(t, {}, { delayMs: 400 });
      await until(task.id, 'SUCCESS');
      expect(started[0]! - submittedAt).toBeGreaterThanOrEqual(390);
    });

    it('aborts a running task at its deadline as TIMEOUT, without retry', async () => {
      let aborted: unknown = null;
      const t = defineTask({
        type: 'slow',
        execute: (ctx) =>
          untilAborted(ctx.signal).catch((reason) => {
            aborted = reason;
            throw reason;
          }),
      });
      const { client, worker } = setup([t]);
      const timedOut = worker.waitFor('timedOut');
      worker.start();
      const { task } = await client.submit(t, {}, { deadlineAt: new Date(Date.now() + 1500), maxAttempts: 3 });
      await timedOut;
      await until(task.id, 'FAILED');
      expect(await statusOf(task.id)).toMatchObject({ lastErrorCode: 'TIMEOUT', attemptCount: 1 });
      expect((aborted as { code?: string }).code).toBe('TIMEOUT');
      expect((await store.listDeadLetters({ scope: Scope.global(), limit: 5 }))[0]!.errorCode).toBe('TIMEOUT');
    });

    it('aborts an attempt over maxExecutionMs', async () => {
      const t = defineTask({ type: 'overrun', execute: (ctx) => untilAborted(ctx.signal) });
      const { client, worker } = setup([t], { maxExecutionMs: 200 });
      worker.start();
      const { task } = await client.submit(t, {});
      await until(task.id, 'FAILED');
      expect((await statusOf(task.id)).lastErrorCode).toBe('TIMEOUT');
    });

    it('cancels a queued task before it ever runs', async () => {
      let ran = false;
      const t = defineTask({
        type: 'never',
        execute: () => {
          ran = true;
        },
      });
      const { client, worker } = setup([t]);
      const { task } = await client.submit(t, {});
      expect(await client.requestCancellation(task.id)).toBe('CANCELLED');
      worker.start();
      const { task: marker } = await client.submit(t, {});
      await until(marker.id, 'SUCCESS');
      expect(await statusOf(task.id)).toMatchObject({ status: 'CANCELLED', attemptCount: 0 });
      expect(ran).toBe(true); // the marker ran; the cancelled one did not (attemptCount 0)
    });

    it('cancels a running task: its signal fires and it ends CANCELLED', async () => {
      const started = gate();
      let reason: unknown = null;
      const t = defineTask({
        type: 'cancellable',
        execute: async (ctx) => {
          started.open();
          await untilAborted(ctx.signal).catch((r) => {
            reason = r;
            throw r;
          });
        },
      });
      const { client, worker } = setup([t]);
      worker.start();
      const { task } = await client.submit(t, {});
      await started.promise;
      expect(await client.requestCancellation(task.id)).toBe('CANCEL_REQUESTED');
      await until(task.id, 'CANCELLED');
      expect((reason as { code?: string }).code).toBe('CANCELLED');
      const attempts = await store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => a.outcome)).toEqual(['CANCELLED']);
    });

    it('ctx.checkCancellation throws once a cancellation is requested', async () => {
      const started = gate();
      const t = defineTask({
        type: 'polling',
        execute: async (ctx) => {
          started.open();
          for (;;) {
            await ctx.checkCancellation();
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        },
      });
      const { client, worker } = setup([t], { heartbeatIntervalMs: 1000 });
      worker.start();
      const { task } = await client.submit(t, {});
      await started.promise;
      await client.requestCancellation(task.id);
      await until(task.id, 'CANCELLED');
    });

    it('pauses and resumes a waiting task', async () => {
      const t = defineTask({ type: 'pausable', execute: () => undefined });
      const { client, worker } = setup([t]);
      const { task } = await client.submit(t, {});
      await client.pause(task.id);
      worker.start();
      const { task: marker } = await client.submit(t, {});
      await until(marker.id, 'SUCCESS');
      expect((await statusOf(task.id)).status).toBe('PAUSED');
      await client.resume(task.id);
      await until(task.id, 'SUCCESS');
    });

    it('submits idempotently: the same type, owner and key give the same task', async () => {
      const t = defineTask({ type: 'once', execute: () => undefined });
      const { client } = setup([t]);
      const a = await client.submit(t, { v: 1 }, { owner: 'alice', idempotencyKey: 'order-1' });
      const b = await client.submit(t, { v: 2 }, { owner: 'alice', idempotencyKey: 'order-1' });
      expect(b.created).toBe(false);
      expect(b.task.id).toBe(a.task.id);
      expect((await client.list()).tasks).toHaveLength(1);
    });

    it('throttles progress writes by count and flushes the final progress', async () => {
      const t = defineTask({
        type: 'progressive',
        execute: (ctx) => {
          for (let i = 1; i <= 2000; i++) ctx.reportProgress({ total: 2000, processed: i, succeeded: i });
        },
      });
      const { client, worker } = setup([t], { progressFlushIntervalMs: 60_000, progressFlushThreshold: 500 });
      let writes = 0;
      worker.on('progress', () => (writes += 1));
      worker.start();
      const { task } = await client.submit(t, {});
      await until(task.id, 'SUCCESS');
      // 2000 reports, threshold 500: one write at 500 (later thresholds coalesce while it is in flight) — far fewer than 2000.
      expect(writes).toBeGreaterThanOrEqual(1);
      expect(writes).toBeLessThanOrEqual(4);
      expect((await statusOf(task.id)).progress).toMatchObject({ total: 2000, processed: 2000, succeeded: 2000 });
    });

    it('throttles progress writes by time', async () => {
      const t = defineTask({
        type: 'timed-progress',
        execute: async (ctx) => {
          const until = Date.now() + 350;
          let i = 0;
          while (Date.now() < until) {
            ctx.reportProgress({ total: 0, processed: ++i });
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
        },
      });
      const { client, worker } = setup([t], { progressFlushIntervalMs: 100, progressFlushThreshold: 1_000_000 });
      let writes = 0;
      worker.on('progress', () => (writes += 1));
      worker.start();
      const { task } = await client.submit(t, {});
      await until(task.id, 'SUCCESS');
      expect(writes).toBeGreaterThanOrEqual(2);
      expect(writes).toBeLessThanOrEqual(5);
    });

    it('retries a failing task up to maxAttempts, then FAILED plus a dead letter', async () => {
      let calls = 0;
      const t = defineTask({
        type: 'flaky-forever',
        execute: () => {
          calls += 1;
          throw new Error('secret customer data');
        },
      });
      const { client, worker } = setup([t]);
      const retries: number[] = [];
      worker.on('retryScheduled', (e) => retries.push(e.retryDelayMs));
      const deadLettered = worker.waitFor('deadLettered');
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 3 });
      await until(task.id, 'FAILED');
      expect(calls).toBe(3);
      expect(retries).toEqual([10, 20]);
      const failures = await store.listFailures({ taskId: task.id });
      expect(failures.map((f) => [f.attempt, f.errorCode, f.retryable])).toEqual([
        [3, 'HANDLER_ERROR', true],
        [2, 'HANDLER_ERROR', true],
        [1, 'HANDLER_ERROR', true],
      ]);
      for (const f of failures) expect(f.message).not.toContain('secret');
      const letters = await store.listDeadLetters({ scope: Scope.global(), limit: 5 });
      expect(letters.map((l) => l.originalTaskId)).toEqual([task.id]);
      // the event names the dead letter the store made, so an operator can replay it from the alert
      expect(await deadLettered).toMatchObject({ task: { id: task.id, status: 'FAILED' }, deadLetterId: letters[0]!.id });
      expect((await store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['FAILED', 'FAILED', 'FAILED']);
    });

    it('succeeds on a retry', async () => {
      let calls = 0;
      const t = defineTask({
        type: 'flaky',
        execute: () => {
          if (++calls < 2) throw new Error('transient');
        },
      });
      const { client, worker } = setup([t]);
      worker.start();
      const { task } = await client.submit(t, {});
      await until(task.id, 'SUCCESS');
      expect((await statusOf(task.id)).attemptCount).toBe(2);
    });

    it('fails a non-retryable error at once', async () => {
      let calls = 0;
      const t = defineTask({
        type: 'fatal',
        execute: () => {
          calls += 1;
          throw new TaskFailure('bad input file', { code: 'BAD_FILE', retryable: false });
        },
      });
      const { client, worker } = setup([t]);
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 5 });
      await until(task.id, 'FAILED');
      expect(calls).toBe(1);
      expect((await statusOf(task.id)).lastErrorCode).toBe('BAD_FILE');
    });

    it('fails a payload that fails its schema at run time without retry', async () => {
      const loose = defineTask({ type: 'schema-drift', execute: () => undefined });
      const strict = defineTask({ type: 'schema-drift', schema: z.object({ id: z.string() }), execute: () => undefined });
      const client = createClient({ store, tasks: [loose] });
      const worker = createWorker({ store, tasks: [strict], ...FAST });
      env.track(worker);
      const { task } = await client.submit(loose, { id: 42 }, { maxAttempts: 5 });
      worker.start();
      await until(task.id, 'FAILED');
      expect(await statusOf(task.id)).toMatchObject({ lastErrorCode: 'PAYLOAD_INVALID', attemptCount: 1 });
    });

    it('a worker that lost its lease writes nothing and its signal fires', async () => {
      const started = gate();
      let aborted: unknown = null;
      const finish = gate();
      const t = defineTask({
        type: 'stolen',
        execute: async (ctx) => {
          started.open();
          ctx.signal.addEventListener('abort', () => {
            aborted = ctx.signal.reason;
            finish.open();
          });
          await finish.promise;
          ctx.reportProgress({ total: 1, processed: 1 });
          return { status: 'SUCCESS', artifactId: 'zombie-artifact' };
        },
      });
      // After its first claim the zombie's renewals and claims never reach the database
      // (a partition), so its lease runs out; its other writes still would.
      let claims = 0;
      const partitioned: Store = Object.create(store, {
        renewLeases: { value: () => Promise.reject(new Error('network partition')) },
        claimTasks: {
          value: (p: Parameters<Store['claimTasks']>[0]) => (claims++ === 0 ? store.claimTasks(p) : Promise.reject(new Error('network partition'))),
        },
      });
      const zombie = createWorker({ store: partitioned, tasks: [t], ...FAST, leaseMs: 300, heartbeatIntervalMs: 100, recoveryIntervalMs: 0 });
      env.track(zombie);
      const client = createClient({ store, tasks: [t] });
      const { task } = await client.submit(t, {});
      zombie.start();
      await started.promise;
      // Another process reclaims the task once the lease has expired.
      await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued === 1, 'lease to expire');
      const [reclaimed] = await store.claimTasks({
        workerId: 'rescuer',
        taskTypes: ['stolen'],
        limit: 1,
        leaseMs: 60_000,
        globalConcurrency: 10,
        typeConcurrency: 10,
      });
      expect(reclaimed!.attemptCount).toBe(2);
      await waitFor(() => aborted, 'the zombie handler to be aborted');
      expect((aborted as { code?: string }).code).toBe('LEASE_LOST');
      await zombie.stop();
      expect(await statusOf(task.id)).toMatchObject({ status: 'RUNNING', leaseOwner: 'rescuer', attemptCount: 2, artifactId: null, progress: null });
    });

    it('stops gracefully: waits for running handlers', async () => {
      const started = gate();
      const release = gate();
      const t = defineTask({
        type: 'graceful',
        execute: async () => {
          started.open();
          await release.promise;
        },
      });
      const { client, worker } = setup([t], { shutdownGraceMs: 10_000 });
      worker.start();
      const { task } = await client.submit(t, {});
      await started.promise;
      let stopped = false;
      const stopping = worker.stop().then(() => (stopped = true));
      await waitFor(() => !worker.isRunning, 'worker to stop claiming');
      expect(stopped).toBe(false);
      release.open();
      await stopping;
      expect((await statusOf(task.id)).status).toBe('SUCCESS');
    });

    it('stops gracefully: aborts handlers after the grace period and hands their tasks back', async () => {
      const started = gate();
      let reason: unknown = null;
      const t = defineTask({
        type: 'stubborn',
        execute: async (ctx) => {
          started.open();
          await untilAborted(ctx.signal).catch((r) => {
            reason = r;
            throw r;
          });
        },
      });
      const { client, worker } = setup([t], { shutdownGraceMs: 200 });
      const released = worker.waitFor('released');
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 1 });
      await started.promise;
      await worker.stop();
      expect((reason as { code?: string }).code).toBe('SHUTDOWN');
      expect(await released).toMatchObject({ task: { id: task.id }, started: true });
      // A hand-back is not a failure (issue 11, F5): no attempt spent, the attempt row says so.
      const back = await statusOf(task.id);
      expect(back).toMatchObject({ status: 'QUEUED', leaseOwner: null, attemptCount: 1, lastErrorCode: null });
      expect(back.attemptCount - back.attemptBase).toBe(0);
      expect(await store.listAttempts({ taskId: task.id })).toMatchObject([{ attempt: 1, outcome: 'RELEASED', errorCode: null }]);
      expect(await store.listFailures({ taskId: task.id })).toEqual([]);
      // maxAttempts 1 and one start behind it: the task still has its attempt, and runs to SUCCESS.
      const next = defineTask({ type: 'stubborn', execute: () => undefined });
      const { worker: second } = setup([next]);
      second.start();
      await until(task.id, 'SUCCESS');
      expect((await store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['RELEASED', 'SUCCESS']);
    });

    it('a snoozed task runs again after its delay, spending no attempt: snoozed twice with maxAttempts 1, it still succeeds', async () => {
      const runs: number[] = [];
      const t = defineTask({
        type: 'snoozer',
        execute: (ctx) => {
          runs.push(ctx.attempt);
          return runs.length <= 2 ? TaskResult.snooze(300) : TaskResult.success({ result: { runs: runs.length } });
        },
      });
      const { client, worker } = setup([t]);
      const snoozes: { delayMs: number; status: string }[] = [];
      worker.on('snoozed', (e) => snoozes.push({ delayMs: e.delayMs, status: e.task.status }));
      const failed: unknown[] = [];
      worker.on('failed', (e) => failed.push(e));
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 1 });
      const done = await waitFor(async () => {
        const now = await statusOf(task.id);
        return now.status === 'SUCCESS' ? now : undefined;
      }, 'the snoozed task to succeed');
      expect(done).toMatchObject({ attemptCount: 3, attemptBase: 2, lastErrorCode: null, result: { runs: 3 } });
      expect(snoozes).toEqual([
        { delayMs: 300, status: 'QUEUED' },
        { delayMs: 300, status: 'QUEUED' },
      ]);
      expect(failed).toEqual([]);
      const attempts = await store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'SNOOZED'],
        [2, 'SNOOZED'],
        [3, 'SUCCESS'],
      ]);
      // The delay is kept by the database clock: each run starts at least 300 ms after the snooze was written.
      for (let i = 1; i < attempts.length; i++) {
        expect(attempts[i]!.startedAt.getTime() - attempts[i - 1]!.finishedAt!.getTime()).toBeGreaterThanOrEqual(290);
      }
    });

    it('runs a task that lost two leases alone: after the others, nothing beside it, one such task at a time', async () => {
      const crashTwice = async (ids: string[]): Promise<void> => {
        // Two leases lost, as if their process had crashed twice (a ghost worker claims them and never renews).
        for (let i = 0; i < 2; i++) {
          expect(await store.claimTasks({ ...claimParams('ghost', ['iso']), leaseMs: 50 })).toHaveLength(ids.length);
          const requeued = async (): Promise<boolean> => (await Promise.all(ids.map(statusOf))).every((task) => task.status === 'QUEUED');
          await waitFor(async () => (await requeued()) || (await store.recover({ batchSize: 10 }), false), 'the expired leases requeued');
        }
        for (const id of ids) expect(await statusOf(id)).toMatchObject({ leaseExpiries: 2, attemptCount: 2, attemptBase: 2 });
      };
      const normalsRelease = gate();
      let active = 0;
      const seen: { kind: string; activeBeside: number }[] = [];
      const t = defineTask<{ kind: string }>({
        type: 'iso',
        execute: async (_ctx, payload) => {
          seen.push({ kind: payload.kind, activeBeside: active });
          active += 1;
          if (payload.kind === 'normal') await normalsRelease.promise;
          active -= 1;
        },
      });
      // Room for all five in one claim: the first quarantined task is kept, the second handed back.
      const { client, worker } = setup([t], { concurrency: 5 });
      const [q1, q2] = await client.submitMany([
        { type: 'iso', payload: { kind: 'quarantined' } },
        { type: 'iso', payload: { kind: 'quarantined' } },
      ]);
      await crashTwice([q1!.task.id, q2!.task.id]);
      await client.submitMany(Array.from({ length: 3 }, () => ({ type: 'iso', payload: { kind: 'normal' } })));
      const handedBack = worker.waitFor('released');
      worker.start();
      expect(await handedBack).toMatchObject({ started: false }); // the second quarantined task goes back at once
      await waitFor(() => seen.filter((s) => s.kind === 'normal').length === 3, 'the normal tasks to start');
      expect(seen.filter((s) => s.kind === 'quarantined')).toEqual([]); // it waits for them
      normalsRelease.open();
      await until(q1!.task.id, 'SUCCESS');
      await until(q2!.task.id, 'SUCCESS');
      expect(seen.filter((s) => s.kind === 'quarantined')).toEqual([
        { kind: 'quarantined', activeBeside: 0 },
        { kind: 'quarantined', activeBeside: 0 },
      ]);
      // a hand-back of a never-started task is uncharged: each quarantined task spent one attempt, the one it ran
      for (const q of [q1!, q2!]) expect((await statusOf(q.task.id)).attemptCount - (await statusOf(q.task.id)).attemptBase).toBe(1);
    });

    it('a quarantined task starts only once the quarantined task handed back beside it is back in the store', async () => {
      // A poison pill that exits at once must not take the other quarantined task with it: that task's lease would
      // expire a third time and cost it an attempt (found by the poison fault test under load).
      let handedBack = false;
      const startedAfterHandBack: boolean[] = [];
      const t = defineTask({ type: 'iso2', execute: () => void startedAfterHandBack.push(handedBack) });
      const { client, worker } = setup([t], { concurrency: 5 });
      const ids = (
        await client.submitMany([
          { type: 'iso2', payload: {} },
          { type: 'iso2', payload: {} },
        ])
      ).map((r) => r.task.id);
      for (let i = 0; i < 2; i++) {
        expect(await store.claimTasks({ ...claimParams('ghost', ['iso2']), leaseMs: 50 })).toHaveLength(2);
        const requeued = async (): Promise<boolean> => (await Promise.all(ids.map(statusOf))).every((task) => task.status === 'QUEUED');
        await waitFor(async () => (await requeued()) || (await store.recover({ batchSize: 10 }), false), 'the expired leases requeued');
      }
      const handBackEntered = gate();
      const handBackGoes = gate();
      const release = store.releaseTasks.bind(store);
      store.releaseTasks = async (params) => {
        handBackEntered.open();
        await handBackGoes.promise;
        const released = await release(params);
        handedBack = true;
        return released;
      };
      worker.start();
      await handBackEntered.promise;
      handBackGoes.open();
      for (const id of ids) await until(id, 'SUCCESS');
      expect(startedAfterHandBack).toEqual([true, true]);
    });

    it('a quarantined task waiting for the others starts once the lease given up beside it is handed back', async () => {
      // Found by the chaos run: the given-up hand-back settled and nothing started the quarantined task waiting for it,
      // so the worker held it under a renewed lease, claimed nothing more, and the task stayed RUNNING forever.
      const seen: { kind: string; attempt: number }[] = [];
      const t = defineTask<{ kind: string }>({
        type: 'iso3',
        execute: async (ctx, payload) => {
          seen.push({ kind: payload.kind, attempt: ctx.attempt });
          // The normal task's first attempt runs until its lease is given up.
          if (payload.kind === 'normal' && seen.length === 1) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        },
      });
      const { client, worker } = setup([t], { concurrency: 5, leaseMs: 2_000, heartbeatIntervalMs: 100 });
      const q = await client.submit(t, { kind: 'quarantined' });
      // q lost two leases (a ghost worker claimed it twice and never renewed).
      for (let i = 0; i < 2; i++) {
        expect(await store.claimTasks({ ...claimParams('ghost', ['iso3']), leaseMs: 50 })).toHaveLength(1);
        await waitFor(async () => (await statusOf(q.task.id)).status === 'QUEUED' || (await store.recover({ batchSize: 10 }), false), 'q requeued');
      }
      expect(await statusOf(q.task.id)).toMatchObject({ leaseExpiries: 2 });
      const n = await client.submit(t, { kind: 'normal' });
      // The database stops confirming n's lease (its renewals answer neither renewed nor lost) until the worker gives it up.
      let doubtN = true;
      const renew = store.renewLeases.bind(store);
      store.renewLeases = async (params) => {
        const answer = await renew(params);
        return doubtN ? { ...answer, renewed: answer.renewed.filter((id) => id !== n.task.id) } : answer;
      };
      const lost: { id: string; reason: string }[] = [];
      worker.on('leaseLost', ({ task, reason }) => {
        lost.push({ id: task.id, reason });
        doubtN = false;
      });
      const normalStarted = worker.waitFor('started', (e) => e.task.id === n.task.id);
      worker.start();
      await normalStarted;
      await waitFor(() => seen.length > 0, 'the normal task to run');
      expect(seen).toEqual([{ kind: 'normal', attempt: 1 }]); // q was claimed beside it and waits to run alone
      await until(q.task.id, 'SUCCESS');
      await until(n.task.id, 'SUCCESS');
      expect(lost).toContainEqual({ id: n.task.id, reason: 'unreachable' });
      // n's given-up attempt went back uncharged (or, on a starved machine, its lease expired first and the sweep requeued it)
      const outcomes = (await store.listAttempts({ taskId: n.task.id })).map((a) => a.outcome);
      expect(outcomes.at(-1)).toBe('SUCCESS');
      expect(['RELEASED', 'LEASE_EXPIRED']).toContain(outcomes[0]);
    });

    it('a snooze with a bad delay fails the attempt like any handler error', async () => {
      const t = defineTask({ type: 'bad-snooze', execute: () => ({ status: 'SNOOZED' as const, delayMs: -1 }) });
      const { client, worker } = setup([t]);
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 1 });
      await until(task.id, 'FAILED');
      expect((await store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['FAILED']);
      expect(() => TaskResult.snooze(Number.NaN)).toThrow(/snooze delay/);
    });

    it('hands back prefetched tasks at once when it stops', async () => {
      const started = gate();
      const release = gate();
      const t = defineTask({
        type: 'prefetched',
        execute: async () => {
          started.open();
          await release.promise;
        },
      });
      const { client, worker } = setup([t], { concurrency: 1, prefetch: 3 });
      await client.submitMany(Array.from({ length: 4 }, () => ({ type: 'prefetched', payload: {} })));
      const claimed = worker.waitFor('claimed');
      worker.start();
      await claimed;
      await started.promise;
      expect((await store.countByStatus({ scope: Scope.global() })).RUNNING).toBe(4);
      const stopping = worker.stop();
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).QUEUED === 3, 'prefetched tasks back in the queue');
      release.open();
      await stopping;
      const counts = await store.countByStatus({ scope: Scope.global() });
      expect(counts).toMatchObject({ SUCCESS: 1, QUEUED: 3, RUNNING: 0 });
    });

    it('emits slow for attempts over the threshold', async () => {
      const t = defineTask({ type: 'sluggish', execute: () => new Promise((resolve) => setTimeout(resolve, 120)) });
      const { client, worker } = setup([t], { slowTaskThresholdMs: 50 });
      const slow = worker.waitFor('slow');
      worker.start();
      await client.submit(t, {});
      const event = await slow;
      expect(event.durationMs).toBeGreaterThan(50);
    });

    it('runs no more handlers at once than its concurrency', async () => {
      let running = 0;
      let peak = 0;
      const t = defineTask({
        type: 'bounded',
        execute: async () => {
          running += 1;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running -= 1;
        },
      });
      const { client, worker } = setup([t], { concurrency: 3, prefetch: 2 });
      await client.submitMany(Array.from({ length: 30 }, () => ({ type: 'bounded', payload: {} })));
      worker.start();
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === 30, 'all 30 done');
      expect(peak).toBe(3);
    });

    it('under a binding type limit claims once per batch of outcomes, not once more per outcome', async () => {
      const t = defineTask({ type: 'limited', execute: () => undefined });
      // No polling (a poll 50 ms after work was found is right, but on a loaded machine it adds claims a timing can't bound).
      const { client, worker } = setup([t], { concurrency: 10, prefetch: 50, typeConcurrency: 5, pollIntervalMs: 60_000, minPollIntervalMs: 60_000 });
      let claims = 0;
      let writes = 0;
      const claimTasks = store.claimTasks.bind(store);
      const finishAttempts = store.finishAttempts.bind(store);
      let standalone = 0;
      store.claimTasks = (params) => {
        claims += 1;
        standalone += 1;
        return claimTasks(params);
      };
      store.finishAttempts = (params) => {
        writes += 1;
        return finishAttempts(params);
      };
      const finishAndClaim = store.capabilities.finishAndClaim ? store.finishAndClaim.bind(store) : null;
      if (finishAndClaim)
        store.finishAndClaim = (params) => {
          claims += 1;
          writes += 1;
          return finishAndClaim(params);
        };
      await client.submitMany(Array.from({ length: 100 }, () => ({ type: 'limited', payload: {} })));
      worker.start();
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === 100, 'all 100 done');
      // 100 tasks, at most 5 leased at once: at least 20 claims and 20 outcome writes (a store with
      // finishAndClaim makes most claims with the writes). A claim sent while the last outcomes were still
      // being written, or one more per outcome, finds nothing and doubles the claims.
      expect(writes).toBeGreaterThanOrEqual(20);
      expect(claims).toBeLessThanOrEqual(writes + 3);
      // With finishAndClaim, the next 5 come with the last 5's outcomes: few claims of their own.
      if (finishAndClaim) expect(standalone).toBeLessThanOrEqual(10);
    });
  });
}
