/**
 * Middleware on any store (issue 28): the order of use() around submits and
 * executions, what a middleware may change (requests, payload, result), a
 * short-circuit by a typed error (nothing written) or by an answer of its own
 * (the handler never runs), and the contract errors. Each dialect runs it
 * from test/middleware/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { Middleware } from '../../src/client/middleware.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { TaskFailure, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { StandardSchemaV1 } from '../../src/core/standard-schema.js';
import type { Task } from '../../src/core/task.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();

/** A schema that wants { n: number } and nothing else. */
const numbered: StandardSchemaV1<unknown, { n: number }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) =>
      typeof value === 'object' && value !== null && typeof (value as { n?: unknown }).n === 'number' && Object.keys(value).length === 1
        ? { value: value as { n: number } }
        : { issues: [{ message: 'wants exactly { n: number }' }] },
  },
};

/** A middleware that writes what it sees into `trail`, around both sides. */
function tracer(name: string, trail: string[]): Middleware {
  return {
    name,
    async submit(call, next) {
      trail.push(`${name}>submit(${call.via},${call.requests.length})`);
      const results = await next(call.requests);
      trail.push(`${name}<submit`);
      return results;
    },
    async execute(call, next) {
      trail.push(`${name}>execute(${JSON.stringify(call.payload)})`);
      const result = await next(call.payload);
      trail.push(`${name}<execute`);
      return result;
    },
  };
}

export function runMiddlewareSuite(factory: StoreFactory): void {
  describe(`middleware on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    async function finished(id: string): Promise<Task> {
      return waitFor(async () => {
        const task = await env.store.getTask({ id, scope: G });
        return task && ['SUCCESS', 'FAILED', 'CANCELLED'].includes(task.status) ? task : null;
      }, `task ${id} to end`);
    }

    it('runs in use() order around submits and executions: the first used is the outermost', async () => {
      const trail: string[] = [];
      const type = defineTask<{ n: number }>({
        type: 'mw.order',
        schema: numbered,
        execute: async (_ctx, payload) => {
          trail.push(`handler(${payload.n})`);
          return TaskResult.success({ result: { n: payload.n } });
        },
      });
      const client = createClient({ store: env.store, tasks: [type], middleware: [tracer('a', trail)] }).use(tracer('b', trail));
      const { task } = await client.submit(type, { n: 1 });
      expect(trail.splice(0)).toEqual(['a>submit(submit,1)', 'b>submit(submit,1)', 'b<submit', 'a<submit']);
      env.track(createWorker({ store: env.store, tasks: [type], ...FAST_WORKER, middleware: [tracer('a', trail)] }).use(tracer('b', trail))).start();
      expect((await finished(task.id)).status).toBe('SUCCESS');
      expect(trail).toEqual(['a>execute({"n":1})', 'b>execute({"n":1})', 'handler(1)', 'b<execute', 'a<execute']);
    });

    it('changes the requests (owner from the tenant) and the results; what it passes on is checked again', async () => {
      const type = defineTask<{ n: number }>({ type: 'mw.owner', schema: numbered, execute: async () => undefined });
      let tenant = 'acme';
      const stamp: Middleware = {
        name: 'tenant',
        submit: async (call, next) => {
          const results = await next(call.requests.map((r) => ({ ...r, owner: tenant })));
          return results.map((r) => ({ ...r, task: { ...r.task, traceId: 'seen-by-middleware' } }));
        },
      };
      const client = createClient({ store: env.store, tasks: [type] }).use(stamp);
      const one = await client.submit(type, { n: 1 });
      expect(one.task.traceId).toBe('seen-by-middleware');
      expect((await env.store.getTask({ id: one.task.id, scope: G }))!.owner).toBe('acme');
      // submitMany and submitFlow pass through it too.
      const many = await client.submitMany([
        { type: 'mw.owner', payload: { n: 2 } },
        { type: 'mw.owner', payload: { n: 3 } },
      ]);
      const flow = await client.submitFlow({ nodes: [{ key: 'x', type: 'mw.owner', payload: { n: 4 } }] });
      for (const id of [...many.map((r) => r.task.id), flow.tasks.x!.id]) expect((await env.store.getTask({ id, scope: G }))!.owner).toBe('acme');
      // An owner the middleware makes is a request like any other: one of 300 characters is refused, nothing written.
      tenant = 'x'.repeat(300);
      await expect(client.submit(type, { n: 5 })).rejects.toBeInstanceOf(ValidationError);
      expect((await env.store.listTasks({ scope: G, limit: 100 })).tasks).toHaveLength(4);
    });

    it('the schema sees the payload as given: a middleware may add what the schema would refuse', async () => {
      const type = defineTask<{ n: number }>({ type: 'mw.schema', schema: numbered, execute: async () => undefined });
      const tagged: Middleware = {
        name: 'tag',
        submit: (call, next) => next(call.requests.map((r) => ({ ...r, payload: { ...(r.payload as object), tag: 1 } }))),
      };
      const client = createClient({ store: env.store, tasks: [type] }).use(tagged);
      const { task } = await client.submit(type, { n: 1 });
      expect(task.payload).toEqual({ n: 1, tag: 1 });
      // The schema still refuses a bad payload as given, before the middleware runs.
      await expect(client.submit(type, { n: 'one' } as never)).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });
    });

    it('short-circuits a submit with a typed error: nothing of the batch is written', async () => {
      const type = defineTask({ type: 'mw.refuse', execute: async () => undefined });
      const quota: Middleware = {
        name: 'quota',
        submit: async (call, next) => {
          if (call.requests.length > 2) throw new ValidationError(`at most 2 tasks a call, got ${call.requests.length}`, 'requests', 'QUOTA_EXCEEDED');
          return next(call.requests);
        },
      };
      const client = createClient({ store: env.store, tasks: [type] }).use(quota);
      const requests = [1, 2, 3].map((n) => ({ type: 'mw.refuse', payload: { n } }));
      await expect(client.submitMany(requests)).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
      expect((await env.store.listTasks({ scope: G, limit: 10 })).tasks).toEqual([]);
      expect(await client.submitMany(requests.slice(0, 2))).toHaveLength(2);
    });

    it('an execute middleware changes the payload and the result, or answers itself (the handler does not run)', async () => {
      const ran: number[] = [];
      const type = defineTask<{ n: number }>({
        type: 'mw.exec',
        execute: async (_ctx, payload) => {
          ran.push(payload.n);
          return TaskResult.success({ result: { doubled: payload.n * 2 } });
        },
      });
      const cache: Middleware = {
        name: 'cache',
        execute: async (call, next) => {
          const { n } = call.payload as { n: number };
          if (n === 7) return TaskResult.success({ result: { cached: true } }); // no next: the handler never runs
          const result = (await next({ n: n + 1 })) as TaskResult;
          return { ...result, result: { ...(result.result as object), wrapped: true } };
        },
      };
      const client = createClient({ store: env.store, tasks: [type] });
      const plain = await client.submit(type, { n: 1 });
      const cached = await client.submit(type, { n: 7 });
      env.track(createWorker({ store: env.store, tasks: [type], ...FAST_WORKER }).use(cache)).start();
      expect((await finished(plain.task.id)).result).toEqual({ doubled: 4, wrapped: true });
      expect((await finished(cached.task.id)).result).toEqual({ cached: true });
      expect(ran).toEqual([2]);
    });

    it('a batch type: a task the middleware answers itself leaves the batch; the rest reach executeBatch with their changed payloads', async () => {
      const calls: number[][] = [];
      const type = defineTask<{ n: number }>({
        type: 'mw.batch',
        batch: { maxSize: 10, maxWaitMs: 200 },
        executeBatch: async (_ctx, items) => {
          calls.push(items.map((i) => i.payload.n).sort((a, b) => a - b));
          return items.map((i) => ({ status: 'SUCCESS' as const, result: { n: i.payload.n } }));
        },
      });
      const skipOdd: Middleware = {
        name: 'skip-odd',
        execute: async (call, next) => {
          const { n } = call.payload as { n: number };
          return n % 2 === 1 ? TaskResult.success({ result: { skipped: n } }) : next({ n: n * 10 });
        },
      };
      const client = createClient({ store: env.store, tasks: [type] });
      const submitted = await client.submitMany([1, 2, 3, 4].map((n) => ({ type: 'mw.batch', payload: { n } })));
      env.track(createWorker({ store: env.store, tasks: [type], ...FAST_WORKER, concurrency: 10, middleware: [skipOdd] })).start();
      const results = await Promise.all(submitted.map(async (r) => (await finished(r.task.id)).result));
      expect(results).toEqual([{ skipped: 1 }, { n: 20 }, { skipped: 3 }, { n: 40 }]);
      expect(calls.flat().sort((a, b) => a - b)).toEqual([20, 40]);
    });

    it('a typed failure thrown by an execute middleware fails the attempt with its code (not retried when it says so)', async () => {
      const ran: number[] = [];
      const type = defineTask<{ n: number }>({ type: 'mw.deny', maxAttempts: 3, execute: async (_ctx, p) => void ran.push(p.n) });
      const deny: Middleware = {
        name: 'deny',
        execute: async () => {
          throw new TaskFailure('tenant suspended', { code: 'TENANT_SUSPENDED', retryable: false });
        },
      };
      const client = createClient({ store: env.store, tasks: [type] });
      const { task } = await client.submit(type, { n: 1 });
      env.track(createWorker({ store: env.store, tasks: [type], ...FAST_WORKER, middleware: [deny] })).start();
      const done = await finished(task.id);
      expect([done.status, done.lastErrorCode, done.attemptCount]).toEqual(['FAILED', 'TENANT_SUSPENDED', 1]);
      expect(ran).toEqual([]);
    });

    it('refuses a middleware that breaks its contract, with a stable code', async () => {
      const type = defineTask({ type: 'mw.contract', execute: async () => undefined });
      const client = createClient({ store: env.store, tasks: [type] });
      expect(() => client.use({ name: 'empty' } as Middleware)).toThrow(expect.objectContaining({ code: 'MIDDLEWARE_INVALID' }));
      expect(() => client.use({ submit: async () => [] } as unknown as Middleware)).toThrow(expect.objectContaining({ code: 'MIDDLEWARE_INVALID' }));
      const twice = createClient({ store: env.store, tasks: [type] }).use({
        name: 'twice',
        submit: async (call, next) => {
          await next(call.requests);
          return next(call.requests);
        },
      });
      await expect(twice.submit(type, {})).rejects.toMatchObject({ code: 'MIDDLEWARE_NEXT_TWICE' });
      const dropper = createClient({ store: env.store, tasks: [type] }).use({ name: 'dropper', submit: (call, next) => next(call.requests.slice(1)) });
      await expect(
        dropper.submitMany([
          { type: 'mw.contract', payload: 1 },
          { type: 'mw.contract', payload: 2 },
        ]),
      ).rejects.toMatchObject({
        code: 'MIDDLEWARE_CHANGED_REQUESTS',
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [type], ...FAST_WORKER }));
      worker.start();
      expect(() => worker.use({ name: 'late', execute: (call, next) => next(call.payload) })).toThrow(expect.objectContaining({ code: 'INVALID_STATE' }));
    });
  });
}
