/**
 * Durable steps in the worker (ctx.step, worker/steps.ts) on every store: a
 * retry resumes after the last completed step, a completed step's fn never
 * runs again, the steps are read once per execution (never by a claim),
 * a graceful hand-back resumes too, results come back as JSON gives them
 * back, bounds fail the task for good,
 * a refused record is a lost lease, and an operator's retry starts afresh.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskAbortedError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const options = { ...FAST_WORKER, recoveryIntervalMs: 0, concurrency: 2 };

/** The store, counting listSteps and claim calls, and answering recordStep false when `refuse` says so. */
function instrumented(store: Store, refuse: (name: string) => boolean = () => false) {
  const calls = { listSteps: 0, recordStep: 0 };
  const overrides: PropertyDescriptorMap = {
    listSteps: {
      value: (params: Parameters<Store['listSteps']>[0]) => {
        calls.listSteps += 1;
        return store.listSteps(params);
      },
    },
    recordStep: {
      value: async (params: Parameters<Store['recordStep']>[0]) => {
        calls.recordStep += 1;
        return refuse(params.name) ? false : store.recordStep(params);
      },
    },
  };
  return { store: Object.create(store, overrides) as Store, calls };
}

async function metric(registry: Registry, name: string, taskType: string): Promise<number> {
  const values = (await registry.getSingleMetric(name)!.get()).values.filter((v) => v.labels.task_type === taskType);
  return values.reduce((sum, v) => sum + v.value, 0);
}

export function runStepSuite(factory: StoreFactory): void {
  describe(`durable steps (ctx.step) on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('a retry resumes after the last completed step: attempt 2 skips steps 1–2 and runs step 3; no fn runs twice', async () => {
      const runs: string[] = [];
      const t = defineTask({
        type: 'three-steps',
        maxAttempts: 3,
        execute: async (ctx: TaskContext) => {
          const a = await ctx.step('reserve', () => (runs.push(`reserve@${ctx.attempt}`), { reservation: 'r-1' }));
          const b = await ctx.step('charge', async () => (runs.push(`charge@${ctx.attempt}`), { charge: 'ch-1', at: new Date(0) }));
          if (ctx.attempt === 1) throw new Error('crash between step 2 and step 3');
          const c = await ctx.step('ship', () => (runs.push(`ship@${ctx.attempt}`), 'shipped'));
          const none = await ctx.step('nothing', () => (runs.push(`nothing@${ctx.attempt}`), undefined));
          return { status: 'SUCCESS' as const, result: { a, b, c, none: none === undefined } };
        },
      });
      const counted = instrumented(env.store);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const registry = new Registry();
      createMetrics({ registry }).attachWorker(worker);
      const events: string[] = [];
      worker.on('step', ({ name, replayed, task }) => events.push(`${name}:${replayed ? 'replayed' : 'recorded'}@${task.attemptCount}`));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the task to succeed');
      await worker.stop();
      expect(runs).toEqual(['reserve@1', 'charge@1', 'ship@2', 'nothing@2']);
      const done = await env.store.getTask({ id: task.id, scope: G });
      // The Date came back as JSON gives it back, on the attempt that replayed it.
      expect(done).toMatchObject({
        attemptCount: 2,
        result: { a: { reservation: 'r-1' }, b: { charge: 'ch-1', at: new Date(0).toISOString() }, c: 'shipped', none: true },
      });
      const steps = await env.store.listSteps({ taskId: task.id });
      expect(steps.map((s) => [s.name, s.attempt, s.resultJson])).toEqual([
        ['reserve', 1, '{"reservation":"r-1"}'],
        ['charge', 1, '{"charge":"ch-1","at":"1970-01-01T00:00:00.000Z"}'],
        ['ship', 2, '"shipped"'],
        ['nothing', 2, null],
      ]);
      expect(events).toEqual(['reserve:recorded@1', 'charge:recorded@1', 'reserve:replayed@2', 'charge:replayed@2', 'ship:recorded@2', 'nothing:recorded@2']);
      // One read per execution that used steps; four records, none twice.
      expect(counted.calls).toEqual({ listSteps: 2, recordStep: 4 });
      expect(await metric(registry, 'async_task_steps_recorded_total', 'three-steps')).toBe(4);
      expect(await metric(registry, 'async_task_steps_replayed_total', 'three-steps')).toBe(2);
    });

    it('hands the first run’s result to every caller of one name, in one execution; a task without steps never reads them', async () => {
      let runs = 0;
      const t = defineTask({
        type: 'same-name',
        execute: async (ctx: TaskContext) => {
          const slow = () => new Promise<number>((resolve) => setTimeout(() => resolve(++runs), 20));
          const [x, y] = await Promise.all([ctx.step('once', slow), ctx.step('once', slow)]);
          const z = await ctx.step('once', slow);
          return { status: 'SUCCESS' as const, result: { x, y, z } };
        },
      });
      const plain = defineTask({ type: 'no-steps', execute: async () => undefined });
      const counted = instrumented(env.store);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t, plain], ...options }));
      const client = createClient({ store: env.store, tasks: [t, plain] });
      const { task } = await client.submit(t, {});
      for (let i = 0; i < 5; i++) await client.submit(plain, {});
      worker.start();
      await waitFor(async () => (await env.store.countByStatus({ scope: G })).SUCCESS === 6, 'every task to succeed');
      await worker.stop();
      expect((await env.store.getTask({ id: task.id, scope: G }))!.result).toEqual({ x: 1, y: 1, z: 1 });
      expect(counted.calls).toEqual({ listSteps: 1, recordStep: 1 });
    });

    it('a bound broken fails the task at once with a stable code (name, result size, steps per task)', async () => {
      const badName = defineTask({ type: 'bad-name', maxAttempts: 3, execute: async (ctx: TaskContext) => void (await ctx.step(' padded', () => 1)) });
      const longName = defineTask({ type: 'long-name', maxAttempts: 3, execute: async (ctx: TaskContext) => void (await ctx.step('x'.repeat(201), () => 1)) });
      const big = defineTask({ type: 'big-result', maxAttempts: 3, execute: async (ctx: TaskContext) => void (await ctx.step('big', () => 'y'.repeat(100))) });
      const cyclic = defineTask({
        type: 'cyclic-result',
        maxAttempts: 3,
        execute: async (ctx: TaskContext) =>
          void (await ctx.step('cycle', () => {
            const o: Record<string, unknown> = {};
            o.self = o;
            return o;
          })),
      });
      const many = defineTask({
        type: 'many-steps',
        maxAttempts: 3,
        execute: async (ctx: TaskContext) => {
          for (let i = 0; i < 3; i++) await ctx.step(`s${i}`, () => i);
        },
      });
      const tasks = [badName, longName, big, cyclic, many];
      const worker = env.track(createWorker({ store: env.store, tasks, ...options, maxStepResultBytes: 50, maxStepsPerTask: 2 }));
      const client = createClient({ store: env.store, tasks });
      const ids = new Map<string, string>();
      for (const t of tasks) ids.set(t.type, (await client.submit(t, {})).task.id);
      worker.start();
      await waitFor(async () => (await env.store.countByStatus({ scope: G })).FAILED === tasks.length, 'every task to fail');
      await worker.stop();
      const codes: Record<string, [string | null, number]> = {};
      for (const [type, id] of ids) {
        const task = (await env.store.getTask({ id, scope: G }))!;
        codes[type] = [task.lastErrorCode, task.attemptCount];
      }
      expect(codes).toEqual({
        'bad-name': ['STEP_NAME_INVALID', 1],
        'long-name': ['STEP_NAME_INVALID', 1],
        'big-result': ['STEP_RESULT_TOO_LARGE', 1],
        'cyclic-result': ['STEP_RESULT_NOT_SERIALIZABLE', 1],
        'many-steps': ['STEP_LIMIT_EXCEEDED', 1],
      });
      // The steps within the bound were recorded; the one past it was not.
      expect((await env.store.listSteps({ taskId: ids.get('many-steps')! })).map((s) => s.name)).toEqual(['s0', 's1']);
    });

    it('a record the store refuses is a lost lease: ctx.step throws LEASE_LOST, the handler’s signal fires, nothing more is written', async () => {
      const seen: unknown[] = [];
      let signalled = false;
      const t = defineTask({
        type: 'refused',
        execute: async (ctx: TaskContext) => {
          await ctx.step('first', () => 1);
          try {
            await ctx.step('second', () => 2);
          } catch (error) {
            seen.push(error);
            signalled = ctx.signal.aborted;
            throw error;
          }
        },
      });
      const counted = instrumented(env.store, (name) => name === 'second');
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const lost: string[] = [];
      worker.on('leaseLost', ({ reason }) => lost.push(reason));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(() => seen.length > 0, 'the refused step');
      expect(seen[0]).toBeInstanceOf(TaskAbortedError);
      expect((seen[0] as TaskAbortedError).code).toBe('LEASE_LOST');
      expect(signalled).toBe(true);
      expect(lost).toEqual(['write']);
      await worker.stop();
      // The worker wrote no outcome for the attempt it gave up: the task is still the lease's (RUNNING) or back in the queue.
      expect((await env.store.listSteps({ taskId: task.id })).map((s) => s.name)).toEqual(['first']);
      expect((await env.store.listAttempts({ taskId: task.id }))[0]!.outcome).not.toBe('SUCCESS');
    });

    it('a graceful stop in the middle of step 2 hands the task back: the next worker replays step 1 and runs steps 2 and 3', async () => {
      const runs: string[] = [];
      let inStep2!: () => void;
      const reached = new Promise<void>((resolve) => (inStep2 = resolve));
      const t = defineTask({
        type: 'handed-back',
        maxAttempts: 1,
        execute: async (ctx: TaskContext) => {
          await ctx.step('s1', () => runs.push(`s1@${ctx.attempt}`));
          await ctx.step('s2', async () => {
            runs.push(`s2@${ctx.attempt}`);
            if (ctx.attempt > 1) return;
            inStep2();
            await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
          });
          await ctx.step('s3', () => runs.push(`s3@${ctx.attempt}`));
        },
      });
      const first = env.track(createWorker({ store: env.store, tasks: [t], ...options, shutdownGraceMs: 100 }));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      first.start();
      await reached;
      await first.stop();
      expect(await env.store.getTask({ id: task.id, scope: G })).toMatchObject({ status: 'QUEUED', attemptCount: 1 });
      const second = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      second.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the second worker to finish it');
      await second.stop();
      // A hand-back spends no attempt (maxAttempts 1 still let it run again) and keeps the cycle's steps.
      expect(runs).toEqual(['s1@1', 's2@1', 's2@2', 's3@2']);
      expect((await env.store.listSteps({ taskId: task.id })).map((s) => [s.name, s.attempt])).toEqual([
        ['s1', 1],
        ['s2', 2],
        ['s3', 2],
      ]);
      expect((await env.store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['RELEASED', 'SUCCESS']);
    });

    it('an operator’s retry of a FAILED task starts a new cycle: every step runs again', async () => {
      const runs: string[] = [];
      let fail = true;
      const t = defineTask({
        type: 'fresh-cycle',
        maxAttempts: 1,
        execute: async (ctx: TaskContext) => {
          await ctx.step('a', () => runs.push(`a@${ctx.attempt}`));
          if (fail) throw new Error('no');
        },
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'FAILED', 'the task to fail');
      fail = false;
      await client.retry(task.id);
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the retried task to succeed');
      await worker.stop();
      expect(runs).toEqual(['a@1', 'a@2']);
      expect((await env.store.listSteps({ taskId: task.id })).map((s) => [s.cycle, s.name, s.attempt])).toEqual([
        [1, 'a', 1],
        [0, 'a', 2],
      ]);
    });
  });
}
