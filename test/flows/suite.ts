/**
 * Flows on any store (issue 26): a dependent never starts before its parents'
 * success is committed; a parent's failure does what the edge says to every
 * descendant; fan-out and fan-in from a handler; whole-flow operations; owner
 * scope; the fence (a stale lease's outcome releases nothing). Each dialect
 * runs it from test/flows/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, TaskResult, type AnyTaskDefinition } from '../../src/core/definition.js';
import { ErrorCode, NotFoundError, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();

async function statusOf(store: Store, id: string): Promise<Task['status'] | undefined> {
  return (await store.getTask({ id, scope: G }))?.status;
}

async function allEnded(store: Store, ids: readonly string[]): Promise<boolean> {
  const tasks = await Promise.all(ids.map((id) => store.getTask({ id, scope: G })));
  return tasks.every((t) => t && ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'].includes(t.status));
}

export function runFlowSuite(factory: StoreFactory): void {
  describe(`flows on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    function start(tasks: AnyTaskDefinition[], options: Record<string, unknown> = {}) {
      return env.track(createWorker({ store: env.store, tasks, ...FAST_WORKER, ...options })).start();
    }

    it('runs a diamond in order: each node starts only after its parents’ success is committed, and reads their results', async () => {
      const violations: string[] = [];
      const seen: Record<string, unknown> = {};
      const step = defineTask<{ name: string }>({
        type: 'flow.step',
        execute: async (ctx, { name }) => {
          const parents = await ctx.parents();
          for (const parent of parents) {
            const committed = await statusOf(env.store, parent.taskId);
            if (committed !== 'SUCCESS') violations.push(`${name} started while a parent was ${committed}`);
          }
          seen[name] = parents.map((p) => p.result).sort();
          return TaskResult.success({ result: name });
        },
      });
      const client = createClient({ store: env.store, tasks: [step] });
      const flow = await client.submitFlow({
        nodes: [
          { key: 'a', type: 'flow.step', payload: { name: 'a' } },
          { key: 'b', type: 'flow.step', payload: { name: 'b' }, dependsOn: ['a'] },
          { key: 'c', type: 'flow.step', payload: { name: 'c' }, dependsOn: ['a'] },
          { key: 'd', type: 'flow.step', payload: { name: 'd' }, dependsOn: ['b', 'c'] },
        ],
      });
      expect(flow.created).toBe(4);
      expect(flow.tasks.a!.status).toBe('QUEUED');
      expect([flow.tasks.b!.status, flow.tasks.c!.status, flow.tasks.d!.status]).toEqual(['BLOCKED', 'BLOCKED', 'BLOCKED']);
      expect(flow.tasks.d!.flowId).toBe(flow.flowId);
      expect((await env.store.countByStatus({ scope: G })).BLOCKED).toBe(3);
      await start([step]);
      const ids = Object.values(flow.tasks).map((t) => t.id);
      await waitFor(() => allEnded(env.store, ids), 'the diamond to end');
      const graph = await client.flow(flow.flowId);
      expect(graph.tasks.map((t) => t.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
      expect(graph.edges).toHaveLength(4);
      expect(graph.edges.every((e) => e.resolution === 'SUCCEEDED')).toBe(true);
      expect(violations).toEqual([]);
      expect(seen.d).toEqual(['b', 'c']);
      expect(seen.a).toEqual([]);
      const d = await client.dependencies(flow.tasks.d!.id);
      expect(d.parents.map((p) => p.task?.id).sort()).toEqual([flow.tasks.b!.id, flow.tasks.c!.id].sort());
      expect(d.children).toEqual([]);
    });

    it('a failed parent cancels its CANCEL descendants (PARENT_FAILED) and lets a CONTINUE child run', async () => {
      const ran: string[] = [];
      const job = defineTask<{ name: string; fail?: boolean }>({
        type: 'flow.job',
        maxAttempts: 1,
        execute: async (_ctx, { name, fail }) => {
          ran.push(name);
          if (fail) throw new Error('boom');
        },
      });
      const client = createClient({ store: env.store, tasks: [job] });
      const flow = await client.submitFlow({
        nodes: [
          { key: 'root', type: 'flow.job', payload: { name: 'root', fail: true } },
          { key: 'child', type: 'flow.job', payload: { name: 'child' }, dependsOn: ['root'] },
          { key: 'grandchild', type: 'flow.job', payload: { name: 'grandchild' }, dependsOn: ['child'] },
          { key: 'cleanup', type: 'flow.job', payload: { name: 'cleanup' }, dependsOn: [{ key: 'root', onParentFailure: 'CONTINUE' }] },
        ],
      });
      await start([job]);
      const ids = Object.values(flow.tasks).map((t) => t.id);
      await waitFor(() => allEnded(env.store, ids), 'the flow to end');
      const byKey = async (key: string) => (await env.store.getTask({ id: flow.tasks[key]!.id, scope: G }))!;
      expect((await byKey('root')).status).toBe('FAILED');
      expect(await byKey('child')).toMatchObject({ status: 'CANCELLED', lastErrorCode: ErrorCode.PARENT_FAILED, attemptCount: 0 });
      expect(await byKey('grandchild')).toMatchObject({ status: 'CANCELLED', lastErrorCode: ErrorCode.PARENT_FAILED, attemptCount: 0 });
      expect((await byKey('cleanup')).status).toBe('SUCCESS');
      expect(ran.sort()).toEqual(['cleanup', 'root']);
    });

    it('retryFlow runs the failed node again and revives the nodes its failure cancelled', async () => {
      let failures = 1;
      const job = defineTask<{ name: string }>({
        type: 'flow.retry',
        maxAttempts: 1,
        execute: async (_ctx, { name }) => {
          if (name === 'a' && failures-- > 0) throw new Error('first time');
        },
      });
      const client = createClient({ store: env.store, tasks: [job] });
      const flow = await client.submitFlow({
        nodes: [
          { key: 'a', type: 'flow.retry', payload: { name: 'a' } },
          { key: 'b', type: 'flow.retry', payload: { name: 'b' }, dependsOn: ['a'] },
          { key: 'c', type: 'flow.retry', payload: { name: 'c' }, dependsOn: ['b'] },
        ],
      });
      await start([job]);
      const ids = Object.values(flow.tasks).map((t) => t.id);
      await waitFor(() => allEnded(env.store, ids), 'the first run to end');
      expect(await statusOf(env.store, flow.tasks.c!.id)).toBe('CANCELLED');
      expect(await client.retryFlow(flow.flowId)).toBe(1);
      await waitFor(async () => (await statusOf(env.store, flow.tasks.c!.id)) === 'SUCCESS', 'the revived flow to end');
      const graph = await client.flow(flow.flowId);
      expect(graph.tasks.map((t) => t.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    });

    it('refuses a cycle, an unknown key, a self edge and a missing parent, writing nothing', async () => {
      const job = defineTask({ type: 'flow.idle' });
      const client = createClient({ store: env.store, tasks: [job] });
      const cycle = client.submitFlow({
        nodes: [
          { key: 'a', type: 'flow.idle', payload: {}, dependsOn: ['c'] },
          { key: 'b', type: 'flow.idle', payload: {}, dependsOn: ['a'] },
          { key: 'c', type: 'flow.idle', payload: {}, dependsOn: ['b'] },
          { key: 'd', type: 'flow.idle', payload: {} },
        ],
      });
      await expect(cycle).rejects.toMatchObject({ code: ErrorCode.FLOW_CYCLE, field: 'dependsOn' });
      await expect(client.submitFlow({ nodes: [{ key: 'a', type: 'flow.idle', payload: {}, dependsOn: ['a'] }] })).rejects.toMatchObject({
        code: ErrorCode.FLOW_CYCLE,
      });
      await expect(client.submitFlow({ nodes: [{ key: 'a', type: 'flow.idle', payload: {}, dependsOn: ['zz'] }] })).rejects.toBeInstanceOf(ValidationError);
      await expect(
        client.submitFlow({
          nodes: [
            { key: 'a', type: 'flow.idle', payload: {} },
            { key: 'a', type: 'flow.idle', payload: {} },
          ],
        }),
      ).rejects.toMatchObject({ field: 'key' });
      await expect(client.submit(job, {}, { dependsOn: ['01890000-0000-7000-8000-000000000000'] })).rejects.toBeInstanceOf(NotFoundError);
      expect((await env.store.listTasks({ scope: G, limit: 10 })).tasks).toEqual([]);
    });

    it('a submit with dependsOn waits for an existing task and joins its flow', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const parent = defineTask({ type: 'flow.parent', execute: async () => gate.then(() => TaskResult.success({ result: 7 })) });
      const child = defineTask({ type: 'flow.child', execute: async (ctx) => TaskResult.success({ result: (await ctx.parents())[0]!.result }) });
      const client = createClient({ store: env.store, tasks: [parent, child] });
      const { task: p } = await client.submit(parent, {});
      await start([parent, child]);
      await waitFor(async () => (await statusOf(env.store, p.id)) === 'RUNNING', 'the parent to run');
      const { task: c } = await client.submit(child, {}, { dependsOn: [p.id] });
      expect(c.status).toBe('BLOCKED');
      expect(c.flowId).toBe(p.id);
      expect((await env.store.getTask({ id: p.id, scope: G }))!.flowId).toBe(p.id);
      release();
      await waitFor(async () => (await env.store.getTask({ id: c.id, scope: G }))?.status === 'SUCCESS', 'the child to run');
      expect((await env.store.getTask({ id: c.id, scope: G }))!.result).toBe(7);
      // A parent that has ended already releases a new child at once.
      const { task: late } = await client.submit(child, {}, { dependsOn: [p.id] });
      expect(late.status).toBe('QUEUED');
    });

    it('children submitted with dependsOn while their parent ends are all released: none misses the end', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const parent = defineTask({ type: 'flow.racing-parent', execute: async () => gate.then(() => TaskResult.success({})) });
      const child = defineTask({ type: 'flow.racing-child', execute: () => TaskResult.success({}) });
      const client = createClient({ store: env.store, tasks: [parent, child] });
      const { task: p } = await client.submit(parent, {});
      await start([parent, child]);
      await waitFor(async () => (await statusOf(env.store, p.id)) === 'RUNNING', 'the parent to run');
      // Submits race the parent's outcome: each child must either see it ended or be seen by its settle.
      const children: Promise<{ task: Task }>[] = [];
      for (let i = 0; i < 40; i += 1) {
        if (i === 10) release();
        children.push(client.submit(child, {}, { dependsOn: [p.id] }));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const ids = (await Promise.all(children)).map((r) => r.task.id);
      await waitFor(async () => (await Promise.all(ids.map((id) => statusOf(env.store, id)))).every((s) => s === 'SUCCESS'), 'every child to run', 20_000);
    });

    it('fans out from a handler and fans in: the parent waits holding no lease, then runs again and reads its children', async () => {
      const runs: number[] = [];
      const part = defineTask<{ n: number }>({ type: 'flow.part', execute: async (_ctx, { n }) => TaskResult.success({ result: n * n }) });
      const parent = defineTask<{ parts: number }>({
        type: 'flow.fan',
        maxAttempts: 1,
        execute: async (ctx, { parts }) => {
          const children = await ctx.children();
          runs.push(children.length);
          if (children.length === 0) {
            return TaskResult.awaitChildren(Array.from({ length: parts }, (_, n) => ({ type: 'flow.part', payload: { n } })));
          }
          return TaskResult.success({ result: children.reduce((sum, c) => sum + Number(c.result), 0) });
        },
      });
      const client = createClient({ store: env.store, tasks: [parent, part] });
      const { task } = await client.submit(parent, { parts: 5 });
      await start([parent, part]);
      const done = await waitFor(async () => {
        const t = await env.store.getTask({ id: task.id, scope: G });
        return t?.status === 'SUCCESS' ? t : null;
      }, 'the fan-in');
      expect(done.result).toBe(0 + 1 + 4 + 9 + 16);
      expect(runs).toEqual([0, 5]);
      // The wait cost no attempt (maxAttempts 1, two runs), and the flow is the parent's.
      expect(done.attemptCount - done.attemptBase).toBe(1);
      const graph = await client.flow(task.id);
      expect(graph.tasks).toHaveLength(6);
      const attempts = await env.store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => a.outcome)).toEqual(['AWAITING', 'SUCCESS']);
    });

    it('cancelFlow ends every waiting node; pauseFlow and resumeFlow keep blocked nodes waiting for their parents', async () => {
      const job = defineTask({ type: 'flow.held' });
      const client = createClient({ store: env.store, tasks: [job] });
      const flow = await client.submitFlow({
        nodes: [
          { key: 'a', type: 'flow.held', payload: {} },
          { key: 'b', type: 'flow.held', payload: {}, dependsOn: ['a'] },
        ],
      });
      expect(await client.pauseFlow(flow.flowId)).toBe(2);
      expect(await statusOf(env.store, flow.tasks.b!.id)).toBe('PAUSED');
      expect(await client.resumeFlow(flow.flowId)).toBe(2);
      expect(await statusOf(env.store, flow.tasks.a!.id)).toBe('QUEUED');
      expect(await statusOf(env.store, flow.tasks.b!.id)).toBe('BLOCKED');
      const cancelled = await client.cancelFlow(flow.flowId);
      expect(cancelled).toMatchObject({ cancelled: 2, cancelRequested: 0 });
      expect((await client.flow(flow.flowId)).counts).toEqual({ CANCELLED: 2 });
    });

    it('obeys owner scope: another owner sees no flow and cannot depend on its tasks', async () => {
      const job = defineTask({ type: 'flow.owned' });
      const client = createClient({ store: env.store, tasks: [job] });
      const flow = await client.submitFlow({ nodes: [{ key: 'a', type: 'flow.owned', payload: {}, owner: 'alice' }] });
      await expect(client.flow(flow.flowId, { scope: Scope.owner('bob') })).rejects.toBeInstanceOf(NotFoundError);
      expect((await client.flow(flow.flowId, { scope: Scope.owner('alice') })).tasks).toHaveLength(1);
      await expect(client.submit(job, {}, { owner: 'bob', dependsOn: [flow.tasks.a!.id], scope: Scope.owner('bob') })).rejects.toBeInstanceOf(NotFoundError);
    });

    it('is fenced: a stale lease’s success releases no child; the lease holder’s does, in its own write', async () => {
      const client = createClient({ store: env.store, tasks: [defineTask({ type: 'flow.fence' })] });
      const flow = await client.submitFlow({
        nodes: [
          { key: 'a', type: 'flow.fence', payload: {} },
          { key: 'b', type: 'flow.fence', payload: {}, dependsOn: ['a'] },
        ],
      });
      const claimParams = { workerId: 'w1', taskTypes: ['flow.fence'], limit: 10, leaseMs: 60_000, globalConcurrency: 100, typeConcurrency: 100 };
      const [claimed] = await env.store.claimTasks(claimParams);
      expect(claimed!.id).toBe(flow.tasks.a!.id);
      const lease = { taskId: claimed!.id, workerId: 'w1', attempt: claimed!.attemptCount, token: claimed!.leaseToken! };
      const stale = { kind: 'SUCCESS' as const, lease: { ...lease, token: 'stale' }, artifactId: null, resultJson: null, progress: null };
      expect((await env.store.finishAttempts({ outcomes: [stale] })).applied).toEqual([false]);
      expect(await statusOf(env.store, flow.tasks.b!.id)).toBe('BLOCKED');
      const done = await env.store.finishAttempts({ outcomes: [{ ...stale, lease }] });
      expect(done.applied).toEqual([true]);
      expect(await statusOf(env.store, flow.tasks.b!.id)).toBe('QUEUED');
      // A stale fan-out writes nothing either.
      const [b] = await env.store.claimTasks(claimParams);
      const bLease = { taskId: b!.id, workerId: 'w1', attempt: b!.attemptCount, token: 'stale' };
      const fan = await env.store.awaitChildren({ lease: bLease, children: [], onFailure: 'CANCEL' });
      expect(fan.applied).toBe(false);
      expect(await statusOf(env.store, b!.id)).toBe('RUNNING');
    });

    it('a blocked node holds no slot: a type limit of 1 still runs a queued task beside a thousand blocked ones', async () => {
      const job = defineTask({ type: 'flow.limit', execute: async () => undefined });
      const client = createClient({ store: env.store, tasks: [job] });
      const nodes = [{ key: 'gate', type: 'flow.limit', payload: {}, delayMs: 3_600_000 }];
      for (let i = 0; i < 1000; i += 1) nodes.push({ key: `n${i}`, type: 'flow.limit', payload: {}, dependsOn: ['gate'] } as never);
      await client.submitFlow({ nodes });
      const { task } = await client.submit(job, {});
      await start([job], { typeConcurrency: 1 });
      await waitFor(async () => (await statusOf(env.store, task.id)) === 'SUCCESS', 'the free task to run');
      expect((await env.store.countByStatus({ scope: G })).BLOCKED).toBe(1000);
    });
  });
}
