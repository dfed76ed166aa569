/**
 * Uniqueness windows (submit option `unique`) on any store: by state,
 * throttle (period), debounce, and many concurrent submits over the store's
 * connections. Each dialect runs it from test/client/unique-<dialect>.test.ts;
 * submits from several processes are in test/process/unique-*.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { UniqueConflictError, ValidationError } from '../../src/core/errors.js';
import { defineTask } from '../../src/core/definition.js';
import { uuidv7 } from '../../src/core/ids.js';
import { Scope } from '../../src/core/scope.js';
import type { NewTask } from '../../src/core/task.js';
import { statesMask } from '../../src/store/rules/unique.js';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';

const G = Scope.global();
const job = defineTask<{ v: number }>({ type: 'unique.job' });
const HOUR = 3_600_000;

export function runUniqueSuite(factory: StoreFactory): void {
  describe(`uniqueness windows on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    let client: TaskLeaseClient;
    beforeEach(() => {
      store = env.store;
      client = createClient({ store, tasks: [job] });
    });
    const total = async (): Promise<number> => Object.values(await store.countByStatus({ scope: G })).reduce((a, b) => a + b, 0);
    const claim = () => store.claimTasks({ workerId: 'w1', taskTypes: [job.type], limit: 10, leaseMs: 60_000, globalConcurrency: 100, typeConcurrency: 100 });

    it('rejects bad unique options with typed errors naming the field, writing nothing', async () => {
      const cases: [object, string][] = [
        [{ unique: { key: '' } }, 'unique.key'],
        [{ unique: { kee: 'a' } }, 'unique.kee'],
        [{ unique: { periodMs: 0 } }, 'unique.periodMs'],
        [{ unique: { debounceMs: 10, periodMs: 1000 } }, 'unique.debounceMs'],
        [{ unique: { debounceMs: 10 }, delayMs: 5 }, 'unique.debounceMs'],
        [{ unique: { states: ['QUEUED'] } }, 'unique.states'],
        [{ unique: { states: ['QUEUED', 'NOPE'] } }, 'unique.states'],
        [{ unique: { key: 'a' }, idempotencyKey: 'b' }, 'unique'],
        [{ unique: 'a' }, 'unique'],
      ];
      for (const [options, field] of cases) {
        const error = await client.submit(job, { v: 1 }, options).catch((e: unknown) => e);
        expect(error, JSON.stringify(options)).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).field, JSON.stringify(options)).toBe(field);
      }
      expect(await total()).toBe(0);
    });

    it('by state: one task per key while it is not finished; afterwards a submit makes a new one', async () => {
      const a = await client.submit(job, { v: 1 }, { unique: { key: 'k' }, delayMs: HOUR });
      const again = await client.submit(job, { v: 2 }, { unique: { key: 'k' } });
      expect(again).toMatchObject({ created: false, task: { id: a.task.id } });
      expect((await client.submit(job, { v: 1 }, { unique: { key: 'k' }, owner: 'bob' })).created).toBe(true);
      expect((await client.submit(job, { v: 1 }, { unique: { key: 'other' } })).created).toBe(true);
      expect(a.task.unique).toMatchObject({ held: true, beforeFirstRunOnly: false, states: ['QUEUED', 'RUNNING', 'RETRY_WAIT', 'PAUSED', 'CANCEL_REQUESTED'] });
      expect((await client.get(a.task.id))?.unique).toEqual(a.task.unique);
      await client.requestCancellation(a.task.id);
      expect((await client.get(a.task.id))?.unique).toMatchObject({ key: a.task.unique!.key, held: false });
      const after = await client.submit(job, { v: 3 }, { unique: { key: 'k' } });
      expect(after.created).toBe(true);
      expect(after.task.id).not.toBe(a.task.id);
      expect((await client.submit(job, { v: 1 })).task.unique).toBeNull();
    });

    it('by state: without a key, the payload is the key; a running task still holds it', async () => {
      const a = await client.submit(job, { v: 1 }, { unique: {} });
      expect(await claim()).toHaveLength(1);
      expect(await client.submit(job, { v: 1 }, { unique: {} })).toMatchObject({ created: false, task: { id: a.task.id, status: 'RUNNING' } });
      expect((await client.submit(job, { v: 2 }, { unique: {} })).created).toBe(true);
    });

    it('throttle: one task per window, finished or not; the next window makes a new one', async () => {
      const a = await client.submit(job, { v: 1 }, { unique: { key: 't', periodMs: HOUR } });
      await client.requestCancellation(a.task.id);
      expect(await client.submit(job, { v: 2 }, { unique: { key: 't', periodMs: HOUR } })).toMatchObject({ created: false, task: { id: a.task.id } });

      const first = await client.submit(job, { v: 1 }, { unique: { key: 's', periodMs: 1000 } });
      const boundary = (Math.floor(first.task.createdAt.getTime() / 1000) + 1) * 1000;
      await waitFor(async () => (await store.now()).getTime() >= boundary, 'the next one-second window of the database clock');
      const next = await client.submit(job, { v: 1 }, { unique: { key: 's', periodMs: 1000 } });
      expect(next.created).toBe(true);
      expect(next.task.id).not.toBe(first.task.id);
    });

    it('debounce: a later submit replaces the waiting task and pushes its start; once it runs, a new task is queued', async () => {
      const a = await client.submit(job, { v: 1 }, { unique: { key: 'd', debounceMs: HOUR } });
      expect(a.task.availableAt.getTime()).toBeGreaterThan(Date.now() + HOUR / 2);
      const b = await client.submit(job, { v: 2 }, { unique: { key: 'd', debounceMs: HOUR } });
      expect(b).toMatchObject({ created: false, task: { id: a.task.id, payload: { v: 2 } } });
      expect(b.task.availableAt.getTime()).toBeGreaterThanOrEqual(a.task.availableAt.getTime());
      const c = await client.submit(job, { v: 3 }, { unique: { key: 'd', debounceMs: HOUR } });
      expect(c).toMatchObject({ created: false, task: { id: a.task.id, payload: { v: 3 } } });
      expect(c.task.availableAt.getTime()).toBeGreaterThanOrEqual(a.task.availableAt.getTime());

      const now = await client.submit(job, { v: 1 }, { unique: { key: 'n', debounceMs: 0 } });
      expect((await claim()).map((t) => t.id)).toContain(now.task.id);
      const later = await client.submit(job, { v: 2 }, { unique: { key: 'n', debounceMs: 0 } });
      expect(later.created).toBe(true);
      expect((await store.getTask({ id: now.task.id, scope: G }))!.payload).toEqual({ v: 1 });
    });

    it('an operator retry of a failed task whose key another task holds now is refused with UNIQUE_CONFLICT, changing nothing', async () => {
      const a = await client.submit(job, { v: 1 }, { unique: { key: 'r' } });
      const [lease] = await claim();
      const failure = { errorCode: 'BOOM', message: 'boom', traceId: null, retryable: false };
      const lease1 = { taskId: lease!.id, workerId: 'w1', attempt: lease!.attemptCount, token: lease!.leaseToken! };
      expect((await store.finishAttempts({ outcomes: [{ kind: 'FAILED', lease: lease1, failure, progress: null }] })).applied).toEqual([true]);
      const b = await client.submit(job, { v: 2 }, { unique: { key: 'r' } });
      expect(b.created).toBe(true);
      const error = await client.retry(a.task.id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UniqueConflictError);
      expect((await store.getTask({ id: a.task.id, scope: G }))!.status).toBe('FAILED');
    });

    it('a batch mixing unique and plain tasks answers in input order', async () => {
      const results = await client.submitMany([
        { type: job.type, payload: { v: 1 }, unique: { key: 'm' } },
        { type: job.type, payload: { v: 2 } },
        { type: job.type, payload: { v: 3 }, unique: { key: 'm' } },
      ]);
      expect(results.map((r) => r.created)).toEqual([true, true, false]);
      expect(results[2]!.task.id).toBe(results[0]!.task.id);
      expect(results[1]!.task.payload).toEqual({ v: 2 });
      expect(await total()).toBe(2);
    });

    it('a batch with unique tasks is all or nothing: a failing task leaves none of the others', async () => {
      const { task: existing } = await client.submit(job, { v: 0 });
      const spec = (key: string) => ({
        key,
        states: statesMask(['QUEUED', 'RUNNING', 'RETRY_WAIT', 'PAUSED', 'CANCEL_REQUESTED']),
        periodMs: null,
        debounceMs: null,
      });
      const task = (id: string, key: string): NewTask => ({
        ...{ id, taskType: job.type, payloadJson: '{}', priority: 0, delayMs: 0, availableAt: null, deadlineAt: null, maxAttempts: 3 },
        ...{ owner: null, idempotencyKey: null, traceId: null, unique: spec(key) },
      });
      // The second task's id is taken: whatever the store answers, the first must not stay behind.
      await expect(store.insertTasks({ tasks: [task(uuidv7(), 'first'), task(existing.id, 'second')] })).rejects.toThrow();
      expect(await total()).toBe(1);
    });

    for (const [mode, unique] of [
      ['by state', { key: 'c' }],
      ['throttle', { key: 'c', periodMs: HOUR }],
      ['debounce', { key: 'c', debounceMs: HOUR }],
    ] as const) {
      it(`${mode}: 40 concurrent submits of one key make exactly one task`, async () => {
        const results = await Promise.all(Array.from({ length: 40 }, (_, i) => client.submit(job, { v: i }, { unique })));
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
        expect(await total()).toBe(1);
      });
    }
  });
}
