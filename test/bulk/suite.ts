/**
 * Bulk operations by filter (client.bulk, issue 29) on every store: the dry
 * run counts what the action would touch and writes nothing; each action over
 * a filter (type, status, owner, error code, payload, time window, ids);
 * progress and the audit row; the timeline row per task; tasks created after
 * the start left out; owner scope; cancel; a runner that hands back and one
 * that dies (its lease expires), resumed from the saved cursor with nothing
 * changed twice; a lost lease fences the old runner's progress.
 * Each dialect runs it from test/bulk/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { TaskStatus } from '../../src/core/status.js';
import { bulkStoreOf } from '../../src/store/bulk.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const HOUR = 3_600_000;
const OPS = { id: 'token:0190-ops', name: 'token:ops-laptop' };

const failing = defineTask<{ order: number; code: string }>({
  type: 'bulk.charge',
  maxAttempts: 1,
  execute: async (_ctx, payload) => {
    throw new TaskFailure(`card declined for order ${payload.order}`, { code: payload.code, retryable: false });
  },
});

const idle = defineTask<Record<string, unknown>>({ type: 'bulk.idle' });
const TASKS = [failing, idle];

async function statuses(store: Store, ids: string[]): Promise<TaskStatus[]> {
  return Promise.all(ids.map(async (id) => (await store.getTask({ id, scope: G }))!.status));
}

/** Submits `n` charges that fail at once with `code`; resolves with their ids once all are FAILED. */
async function failedCharges(
  store: Store,
  client: TaskLeaseClient,
  codes: string[],
  track: <W extends { stop(): Promise<void> }>(w: W) => W,
): Promise<string[]> {
  const results = await client.submitMany(codes.map((code, order) => ({ type: failing.type, payload: { order, code } })));
  const ids = results.map((r) => r.task.id);
  const worker = track(createWorker({ store, tasks: [failing], ...FAST_WORKER }));
  worker.start();
  await waitFor(async () => (await statuses(store, ids)).every((s) => s === 'FAILED'), 'the charges to fail');
  await worker.stop();
  return ids;
}

export function runBulkSuite(factory: StoreFactory): void {
  describe(`bulk operations on ${factory.dialect}`, () => {
    const ctx = perTestStore(factory);

    it('a dry run counts what the action would touch (its statuses ∩ the filter) and shows a sample; nothing is written', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS });
      const ids = await failedCharges(ctx.store, client, ['CARD_DECLINED', 'CARD_DECLINED', 'FRAUD'], ctx.track);
      await client.submitMany([0, 1].map((n) => ({ type: failing.type, payload: { order: 100 + n, code: 'X' }, delayMs: HOUR })));
      const retry = await client.bulk.dryRun({ action: 'retry', filter: { taskType: failing.type, errorCode: 'CARD_DECLINED' } });
      expect(retry).toMatchObject({ action: 'retry', statuses: ['FAILED'], matched: 2 });
      expect(retry.sample.map((t) => t.id).sort()).toEqual(ids.slice(0, 2).sort());
      expect((await client.bulk.dryRun({ action: 'cancel', filter: { taskType: failing.type } })).matched).toBe(2); // the two waiting
      expect((await client.bulk.dryRun({ action: 'retry', filter: { payload: [{ path: 'order', equals: 2 }] } })).matched).toBe(1);
      expect((await client.bulk.dryRun({ action: 'delete', filter: { ids: [ids[0]!, ids[2]!] } })).matched).toBe(2);
      expect((await client.bulk.dryRun({ action: 'retry', filter: { createdAfter: new Date(Date.now() + HOUR) } })).matched).toBe(0);
      expect(await statuses(ctx.store, ids)).toEqual(['FAILED', 'FAILED', 'FAILED']);
      expect(await client.bulk.list()).toEqual([]);
      // A filter whose statuses the action never applies in is refused, not silently empty.
      await expect(client.bulk.dryRun({ action: 'resume', filter: { status: 'FAILED' } })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(client.bulk.dryRun({ action: 'explode' as never, filter: {} })).rejects.toMatchObject({ code: 'VALIDATION', field: 'action' });
      await expect(client.bulk.dryRun({ action: 'retry', filter: { colour: 'red' } as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      await expect(client.bulk.start({ action: 'reschedule', filter: {} })).rejects.toMatchObject({ code: 'VALIDATION', field: 'availableAt' });
    });

    it('retries the failed tasks of one error code in batches: progress, the audit row, a RETRY on each timeline; the others untouched', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS, actor: OPS });
      const codes = Array.from({ length: 7 }, (_, i) => (i < 5 ? 'CARD_DECLINED' : 'FRAUD'));
      const ids = await failedCharges(ctx.store, client, codes, ctx.track);
      const started = await client.bulk.start(
        { action: 'retry', filter: { taskType: failing.type, errorCode: 'CARD_DECLINED' } },
        { batchSize: 2, run: false },
      );
      expect(started).toMatchObject({ status: 'RUNNING', matched: 5, processed: 0, changed: 0, actor: OPS, owner: null, statuses: ['FAILED'] });
      expect(started.filter).toEqual({ taskType: failing.type, errorCode: 'CARD_DECLINED' });
      const seen: number[] = [];
      const ended = await client.bulk.run(started.id, { onProgress: (op) => void seen.push(op.processed) });
      expect(ended).toMatchObject({ status: 'SUCCEEDED', matched: 5, processed: 5, changed: 5, error: null });
      expect(ended.finishedAt).toBeInstanceOf(Date);
      expect(seen).toEqual([2, 4, 5, 5]); // three batches, then the end
      const after = await statuses(ctx.store, ids);
      expect(after.slice(0, 5).every((s) => s !== 'FAILED')).toBe(true);
      expect(after.slice(5)).toEqual(['FAILED', 'FAILED']);
      const actions = await client.actions(ids[0]!);
      expect(actions[0]).toMatchObject({ action: 'RETRY', actor: OPS.id, actorName: OPS.name, detail: `bulk ${started.id}` });
      expect((await client.bulk.list())[0]).toMatchObject({ id: started.id, status: 'SUCCEEDED', changed: 5 });
    });

    it('cancel, pause, resume and reschedule over a filter; a task that changed meanwhile is looked at, not changed', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS });
      const submitted = await client.submitMany(
        Array.from({ length: 6 }, (_, i) => ({ type: 'bulk.idle', payload: { i, region: i < 4 ? 'eu' : 'us' }, delayMs: HOUR })),
      );
      const ids = submitted.map((r) => r.task.id);
      const eu = { taskType: 'bulk.idle', payload: [{ path: 'region', equals: 'eu' }] };
      const paused = await client.bulk.run((await client.bulk.start({ action: 'pause', filter: eu }, { run: false })).id);
      expect(paused).toMatchObject({ status: 'SUCCEEDED', matched: 4, changed: 4 });
      expect(await statuses(ctx.store, ids)).toEqual(['PAUSED', 'PAUSED', 'PAUSED', 'PAUSED', 'QUEUED', 'QUEUED']);
      const at = new Date(Date.now() + 2 * HOUR);
      const moved = await client.bulk.run((await client.bulk.start({ action: 'reschedule', filter: eu, availableAt: at }, { run: false })).id);
      expect(moved).toMatchObject({ status: 'SUCCEEDED', changed: 4, availableAt: at.toISOString() });
      for (const id of ids.slice(0, 4)) {
        const task = (await client.get(id))!;
        expect([task.status, task.availableAt.getTime()]).toEqual(['PAUSED', at.getTime()]);
      }
      // One resumed by hand after the operation counted it: looked at, not changed again.
      const op = await client.bulk.start({ action: 'resume', filter: eu }, { run: false });
      await client.resume(ids[0]!);
      expect(await client.bulk.run(op.id)).toMatchObject({ matched: 4, processed: 3, changed: 3 });
      const cancelled = await client.bulk.run(
        (await client.bulk.start({ action: 'cancel', filter: { taskType: 'bulk.idle', ids: [ids[1]!, ids[4]!] } }, { run: false })).id,
      );
      expect(cancelled).toMatchObject({ matched: 2, changed: 2 });
      expect((await client.actions(ids[1]!))[0]).toMatchObject({ action: 'CANCEL', detail: `bulk ${cancelled.id}` });
      expect(await statuses(ctx.store, ids)).toEqual(['QUEUED', 'CANCELLED', 'QUEUED', 'QUEUED', 'CANCELLED', 'QUEUED']);
    });

    it('replays the dead letters and deletes ended tasks over a filter', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS });
      const ids = await failedCharges(ctx.store, client, ['GATEWAY', 'GATEWAY', 'FRAUD'], ctx.track);
      expect(await client.deadLetters.size()).toBe(3);
      const replay = await client.bulk.run((await client.bulk.start({ action: 'replay', filter: { errorCode: 'GATEWAY' } }, { run: false })).id);
      expect(replay).toMatchObject({ status: 'SUCCEEDED', matched: 2, changed: 2 });
      expect(await client.deadLetters.size()).toBe(1);
      expect((await statuses(ctx.store, ids)).slice(0, 2)).toEqual(['QUEUED', 'QUEUED']);
      expect((await client.actions(ids[0]!))[0]).toMatchObject({ action: 'REPLAY' });
      const removed = await client.bulk.run((await client.bulk.start({ action: 'delete', filter: { taskType: failing.type } }, { run: false })).id);
      expect(removed).toMatchObject({ status: 'SUCCEEDED', matched: 1, changed: 1 });
      expect(await client.get(ids[2]!)).toBeNull();
      expect(await client.get(ids[0]!)).not.toBeNull(); // QUEUED: not an ended task
    });

    it('leaves out tasks created after it started; a user’s operation sees and changes only its own tasks', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS });
      const mine = (await client.submitMany([0, 1, 2].map((i) => ({ type: 'bulk.idle', payload: { i }, owner: 'alice', delayMs: HOUR })))).map(
        (r) => r.task.id,
      );
      const theirs = (await client.submit('bulk.idle', {}, { owner: 'bob', delayMs: HOUR })).task.id;
      const alice = Scope.owner('alice');
      const op = await client.bulk.start({ action: 'pause', filter: {} }, { scope: alice, run: false });
      expect(op).toMatchObject({ owner: 'alice', matched: 3 });
      const late = (await client.submit('bulk.idle', {}, { owner: 'alice', delayMs: HOUR })).task.id;
      expect(await client.bulk.run(op.id, { scope: alice })).toMatchObject({ status: 'SUCCEEDED', changed: 3 });
      expect(await statuses(ctx.store, [...mine, theirs, late])).toEqual(['PAUSED', 'PAUSED', 'PAUSED', 'QUEUED', 'QUEUED']);
      // Another owner's view: no such operation.
      expect(await client.bulk.get(op.id, { scope: Scope.owner('bob') })).toBeNull();
      expect(await client.bulk.list({ scope: Scope.owner('bob') })).toEqual([]);
      await expect(client.bulk.cancel(op.id, { scope: Scope.owner('bob') })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await client.bulk.get(op.id)).toMatchObject({ owner: 'alice' });
    });

    it('a cancel stops a running operation after its batch: it ends CANCELLED, what it changed stays', async () => {
      const client = createClient({ store: ctx.store, tasks: TASKS });
      await client.submitMany(Array.from({ length: 6 }, (_, i) => ({ type: 'bulk.idle', payload: { i }, delayMs: HOUR })));
      const op = await client.bulk.start({ action: 'pause', filter: { taskType: 'bulk.idle' } }, { batchSize: 2, run: false });
      const ended = await client.bulk.run(op.id, {
        onProgress: async (progress) => {
          if (progress.processed === 2) await client.bulk.cancel(op.id);
        },
      });
      expect(ended.status).toBe('CANCELLED');
      expect(ended.cancelRequested).toBe(true);
      expect(ended).toMatchObject({ processed: 2, changed: 2 });
      const counts = await ctx.store.countByStatus({ scope: G, taskType: 'bulk.idle' });
      expect(counts.PAUSED).toBe(ended.changed);
      // An operation nobody runs (run: false) is ended by the cancel itself.
      const idle = await client.bulk.start({ action: 'pause', filter: { taskType: 'bulk.idle' } }, { run: false });
      expect(await client.bulk.cancel(idle.id)).toMatchObject({ status: 'CANCELLED', processed: 0 });
      // Cleanup removes ended operations past the retention with the tasks; a running one stays.
      const open = await client.bulk.start({ action: 'pause', filter: { taskType: 'bulk.idle' } }, { run: false });
      const cleaned = await client.cleanup({ finishedBefore: new Date(Date.now() + 60_000) });
      expect(cleaned.bulkOperations).toBe(2);
      expect((await client.bulk.list()).map((o) => o.id)).toEqual([open.id]);
    });

    it('resumes from the saved cursor: a runner that hands back, and one that died (its lease expires); nothing changes twice', async () => {
      const first = createClient({ store: ctx.store, tasks: TASKS, bulkLeaseMs: 1000 });
      const second = createClient({ store: ctx.store, tasks: TASKS, bulkLeaseMs: 1000 });
      const ids = (await first.submitMany(Array.from({ length: 9 }, (_, i) => ({ type: 'bulk.idle', payload: { i }, delayMs: HOUR })))).map((r) => r.task.id);
      const op = await first.bulk.start({ action: 'pause', filter: { taskType: 'bulk.idle' } }, { batchSize: 2, run: false });
      // The first runner stops after its second batch and hands the operation back.
      const stop = new AbortController();
      const handedBack = await first.bulk.run(op.id, { signal: stop.signal, onProgress: (p) => (p.processed >= 4 ? stop.abort() : undefined) });
      expect(handedBack).toMatchObject({ status: 'RUNNING', processed: 4 });
      expect(await second.bulk.resumeAbandoned()).toEqual([op.id]);
      expect(await second.bulk.get(op.id)).toMatchObject({ status: 'SUCCEEDED', processed: 9, changed: 9 });
      for (const id of ids) expect((await second.actions(id)).filter((a) => a.action === 'PAUSE')).toHaveLength(1);

      // A runner that dies holding the lease: nobody resumes it before the lease expires; then the next runner does.
      const again = await first.bulk.start({ action: 'resume', filter: { taskType: 'bulk.idle' } }, { batchSize: 4, run: false });
      const bulk = await bulkStoreOf(ctx.store);
      expect(await bulk.acquire({ id: again.id, leaseOwner: 'dead-runner', leaseMs: 1000 })).toBe(true);
      expect(await second.bulk.resumeAbandoned()).toEqual([]);
      await waitFor(async () => (await second.bulk.resumeAbandoned()).includes(again.id), 'the dead runner’s lease to expire and the operation to resume');
      expect(await second.bulk.get(again.id)).toMatchObject({ status: 'SUCCEEDED', changed: 9 });
      // The dead runner, back, is fenced: its progress is refused.
      expect(await bulk.saveProgress({ id: again.id, leaseOwner: 'dead-runner', leaseMs: 1000, cursorId: null, processed: 1, changed: 1 })).toBe(false);
      expect(await second.bulk.get(again.id)).toMatchObject({ processed: 9, changed: 9 });
    });
  });
}
