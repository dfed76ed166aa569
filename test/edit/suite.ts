/**
 * Editing a waiting task (client.edit, issue 29) on every store: each field,
 * the status kept, the conflict when a worker claimed it first (the status is
 * the fence), refusals that leave the row as it was, owner scope, the
 * optimistic check, the EDIT row in the task's actions, and an encrypted
 * type's payload kept encrypted. Each dialect runs it from test/edit/<dialect>.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { isEncrypted, payloadEncryption } from '../../src/client/encryption.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { StandardSchemaV1 } from '../../src/core/standard-schema.js';
import type { Task } from '../../src/core/task.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const HOUR = 3_600_000;
const OPS = { id: 'token:0190-ops', name: 'token:ops-laptop' };

interface Order {
  order: number;
}
const orderSchema: StandardSchemaV1<unknown, Order> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (v) =>
      typeof v === 'object' && v !== null && Number.isInteger((v as Order).order) ? { value: v as Order } : { issues: [{ message: 'wants an order number' }] },
  },
};
const order = defineTask<Order>({ type: 'edit.order', schema: orderSchema });

export function runEditSuite(factory: StoreFactory): void {
  describe(`editing a waiting task on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    const client = (): TaskLeaseClient => createClient({ store: env.store, tasks: [order], actor: OPS });
    const read = async (id: string): Promise<Task> => (await env.store.getTask({ id, scope: G }))!;
    const waiting = async (options: { owner?: string } = {}): Promise<Task> =>
      (await client().submit(order, { order: 41 }, { delayMs: HOUR, maxAttempts: 3, ...options })).task;

    it('changes each field, keeps the status, and moves updatedAt', async () => {
      const task = await waiting();
      const now = await env.store.now();
      const availableAt = new Date(now.getTime() + 2 * HOUR);
      const deadlineAt = new Date(now.getTime() + 5 * HOUR);
      const edited = await client().edit(task.id, { payload: { order: 42 }, priority: 7, availableAt, deadlineAt, maxAttempts: 9 });
      expect(edited).toMatchObject({ status: 'QUEUED', payload: { order: 42 }, priority: 7, availableAt, deadlineAt, maxAttempts: 9 });
      expect(await read(task.id)).toMatchObject({ payload: { order: 42 }, priority: 7, availableAt, deadlineAt, maxAttempts: 9 });
      expect(edited.updatedAt.getTime()).toBeGreaterThan(task.updatedAt.getTime());
      // One field at a time leaves the others as they are; a null deadline removes it.
      expect(await client().edit(task.id, { deadlineAt: null })).toMatchObject({ deadlineAt: null, priority: 7, payload: { order: 42 } });
      expect(await client().edit(task.id, { priority: -3 })).toMatchObject({ priority: -3, maxAttempts: 9, availableAt });
    });

    it('edits PAUSED (it stays paused) and BLOCKED tasks', async () => {
      const task = await waiting();
      await client().pause(task.id);
      expect(await client().edit(task.id, { priority: 5 })).toMatchObject({ status: 'PAUSED', priority: 5 });
      const flow = await client().submitFlow({
        nodes: [
          { key: 'a', type: order.type, payload: { order: 1 }, delayMs: HOUR },
          { key: 'b', type: order.type, payload: { order: 2 }, dependsOn: ['a'] },
        ],
      });
      const child = flow.tasks.b!;
      expect(child.status).toBe('BLOCKED');
      expect(await client().edit(child.id, { payload: { order: 3 } })).toMatchObject({ status: 'BLOCKED', payload: { order: 3 }, pendingParents: 1 });
    });

    it('edits a RETRY_WAIT task (it stays RETRY_WAIT): payload, its retry time, its max attempts', async () => {
      const task = await waiting();
      await client().reschedule(task.id, { availableAt: await env.store.now() });
      const [claimed] = await env.store.claimTasks({
        workerId: 'w1',
        taskTypes: [order.type],
        limit: 1,
        leaseMs: 30_000,
        globalConcurrency: 100,
        typeConcurrency: 100,
      });
      const lease = { taskId: claimed!.id, workerId: 'w1', attempt: claimed!.attemptCount, token: claimed!.leaseToken! };
      const failure = { errorCode: 'BAD_SKU', message: 'no such sku', traceId: null, retryable: true };
      await env.store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease, failure, retryDelayMs: HOUR, progress: null }] });
      expect((await read(task.id)).status).toBe('RETRY_WAIT');
      const now = await env.store.now();
      expect(await client().edit(task.id, { payload: { order: 44 }, availableAt: now, maxAttempts: 1 })).toMatchObject({
        status: 'RETRY_WAIT',
        payload: { order: 44 },
        availableAt: now,
        maxAttempts: 1,
      });
    });

    it('answers INVALID_TRANSITION for a task a worker claimed first, and changes nothing', async () => {
      const task = await waiting();
      await client().reschedule(task.id, { availableAt: await env.store.now() });
      const [claimed] = await env.store.claimTasks({
        workerId: 'w1',
        taskTypes: [order.type],
        limit: 1,
        leaseMs: 30_000,
        globalConcurrency: 100,
        typeConcurrency: 100,
      });
      expect(claimed?.id).toBe(task.id);
      await expect(client().edit(task.id, { priority: 9 })).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
      // The store's own answer when the claim lands between the client's read and its write: the UPDATE's status check.
      const record = { action: 'EDIT' as const, actor: OPS, detail: 'priority' };
      const late = await env.store.editTask({ id: task.id, scope: G, from: ['QUEUED', 'RETRY_WAIT', 'PAUSED', 'BLOCKED'], changes: { priority: 9 }, record });
      expect(late).toEqual({ id: task.id, applied: false, status: 'RUNNING' });
      expect(await read(task.id)).toMatchObject({ status: 'RUNNING', priority: 0, leaseOwner: 'w1' });
      expect((await client().actions(task.id)).map((a) => a.action)).toEqual(['RESCHEDULE']);
    });

    it('runs the edited payload when a worker claims it', async () => {
      const seen: Order[] = [];
      const handled = defineTask<Order>({
        type: order.type,
        schema: orderSchema,
        execute: async (_ctx, payload) => {
          seen.push(payload);
          return TaskResult.success();
        },
      });
      const task = await waiting();
      env.track(createWorker({ store: env.store, tasks: [handled], ...FAST_WORKER })).start();
      await client().edit(task.id, { payload: { order: 43 }, availableAt: await env.store.now() });
      await waitFor(async () => (await read(task.id)).status === 'SUCCESS', `task ${task.id} to succeed`);
      expect(seen).toEqual([{ order: 43 }]);
    });

    it('refuses a payload its schema rejects, unknown fields and bad values, leaving the row as it was', async () => {
      const task = await waiting();
      const before = await read(task.id);
      const small = createClient({ store: env.store, tasks: [order], maxPayloadBytes: 100 });
      const refusals: [() => Promise<unknown>, string][] = [
        [() => client().edit(task.id, { payload: { order: 'x' } }), 'PAYLOAD_INVALID'],
        [() => client().edit(task.id, { priority: 2, status: 'QUEUED' } as never), 'INVALID_OPTIONS'],
        [() => client().edit(task.id, {}), 'VALIDATION'],
        [() => client().edit(task.id, { priority: 1001 }), 'VALIDATION'],
        [() => client().edit(task.id, { maxAttempts: 0 }), 'VALIDATION'],
        [() => client().edit(task.id, { deadlineAt: new Date(Date.now() - 1000) }), 'VALIDATION'],
        [() => client().edit(task.id, { availableAt: new Date(Number.NaN) }), 'VALIDATION'],
        [() => small.edit(task.id, { payload: { order: 1, pad: 'x'.repeat(200) } }), 'PAYLOAD_TOO_LARGE'],
        [() => client().edit(task.id, { priority: 1 }, { expect: { updatedAt: 'yesterday' } } as never), 'VALIDATION'],
      ];
      for (const [refused, code] of refusals) await expect(refused()).rejects.toMatchObject({ code });
      expect(await read(task.id)).toEqual(before);
      expect(await client().actions(task.id)).toEqual([]);
      // A finished task is not waiting.
      await client().requestCancellation(task.id);
      await expect(client().edit(task.id, { priority: 1 })).rejects.toMatchObject({ code: 'INVALID_TRANSITION' });
    });

    it("an owner scope edits its own tasks; another owner's task is NOT_FOUND and unchanged", async () => {
      const alices = await waiting({ owner: 'alice' });
      const bobs = await waiting({ owner: 'bob' });
      expect(await client().edit(alices.id, { priority: 4 }, { scope: Scope.owner('alice') })).toMatchObject({ priority: 4 });
      await expect(client().edit(bobs.id, { priority: 4 }, { scope: Scope.owner('alice') })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      const record = { action: 'EDIT' as const, actor: OPS };
      expect(await env.store.editTask({ id: bobs.id, scope: Scope.owner('alice'), from: ['QUEUED'], changes: { priority: 4 }, record })).toEqual({
        id: bobs.id,
        applied: false,
        status: null,
      });
      expect((await read(bobs.id)).priority).toBe(0);
      expect(await client().actions(bobs.id)).toEqual([]);
    });

    it('with expect.updatedAt, an edit made meanwhile by someone else answers TASK_CHANGED and is not overwritten', async () => {
      const task = await waiting();
      const first = await client().edit(task.id, { priority: 1 }, { expect: { updatedAt: task.updatedAt } });
      // An edit moves updatedAt forward by a millisecond at least, however soon it follows the last change.
      expect(first.updatedAt.getTime()).toBeGreaterThan(task.updatedAt.getTime());
      await expect(client().edit(task.id, { priority: 2 }, { expect: { updatedAt: task.updatedAt } })).rejects.toMatchObject({ code: 'TASK_CHANGED' });
      expect((await read(task.id)).priority).toBe(1);
      expect(await client().edit(task.id, { priority: 2 }, { expect: { updatedAt: first.updatedAt } })).toMatchObject({ priority: 2 });
    });

    it('records EDIT with the actor and the fields changed, never their values', async () => {
      const task = await waiting();
      await client().edit(task.id, { maxAttempts: 5, payload: { order: 777_001 } }, { actor: { id: 'jwt:ada', name: 'Ada' } });
      const [edit, ...rest] = await client().actions(task.id);
      expect(rest).toEqual([]);
      expect(edit).toMatchObject({
        action: 'EDIT',
        fromStatus: 'QUEUED',
        toStatus: 'QUEUED',
        actor: 'jwt:ada',
        actorName: 'Ada',
        detail: 'payload,maxAttempts',
      });
      expect(JSON.stringify(edit)).not.toContain('777001');
    });

    it("keeps an encrypted type's payload encrypted, and refuses to replace it in clear", async () => {
      const encryption = payloadEncryption({ keys: { k1: randomBytes(32) }, types: [order.type] });
      const sealing = createClient({ store: env.store, tasks: [order], middleware: [encryption] });
      const { task } = await sealing.submit(order, { order: 1 }, { delayMs: HOUR });
      const edited = await sealing.edit(task.id, { payload: { order: 555_123 } });
      expect(isEncrypted(edited.payload)).toBe(true);
      expect(JSON.stringify(edited)).not.toContain('555123');
      expect(sealing.reveal(edited).payload).toEqual({ order: 555_123 });
      // A client without the type's middleware would write it in clear: refused, nothing changed.
      await expect(client().edit(task.id, { payload: { order: 2 } })).rejects.toMatchObject({ code: 'PAYLOAD_NOT_SEALED' });
      expect(sealing.reveal(await read(task.id)).payload).toEqual({ order: 555_123 });
      // Its other fields need no key.
      expect(await client().edit(task.id, { priority: 3 })).toMatchObject({ priority: 3 });
    });
  });
}
