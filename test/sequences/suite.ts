/**
 * Sequences on any store (issue 27): tasks of one key run one at a time in
 * submit order, a retrying head blocks only its own key, a dead-lettered
 * head blocks (or, under SKIP, does not) until replayed or skipped, operator
 * actions on waiting tasks keep the order, and keys take fair turns. Each
 * dialect runs it from test/sequences/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, type AnyTaskDefinition } from '../../src/core/definition.js';
import { ErrorCode, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const ENDED = ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'];

async function tasksOf(store: Store, ids: readonly string[]): Promise<Task[]> {
  return Promise.all(ids.map(async (id) => (await store.getTask({ id, scope: G }))!));
}

async function statuses(store: Store, ids: readonly string[]): Promise<string[]> {
  return (await tasksOf(store, ids)).map((t) => t.status);
}

/** A handler that records, per key, when each task starts and ends, and whether another task of its key was running. */
function recorder(type: string, options: { fail?: (payload: Step, attempt: number) => boolean; maxAttempts?: number } = {}) {
  const running = new Map<string, number>();
  const starts: Step[] = [];
  const overlaps: string[] = [];
  let gate: Promise<void> = Promise.resolve();
  const definition = defineTask<Step>({
    type,
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
    execute: async (ctx, step) => {
      if ((running.get(step.key) ?? 0) > 0) overlaps.push(`${step.key}#${step.n}`);
      running.set(step.key, (running.get(step.key) ?? 0) + 1);
      starts.push(step);
      try {
        await gate;
        // Yield a few turns so that a second task of the key, were it claimable, would start meanwhile.
        for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
        if (options.fail?.(step, ctx.attempt)) throw new Error(`step ${step.key}#${step.n} fails (attempt ${ctx.attempt})`);
      } finally {
        running.set(step.key, running.get(step.key)! - 1);
      }
    },
  });
  return {
    definition,
    starts,
    overlaps,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      return open;
    },
  };
}

interface Step {
  key: string;
  n: number;
}

export function runSequenceSuite(factory: StoreFactory): void {
  describe(`sequences on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    function start(tasks: AnyTaskDefinition[], options: Record<string, unknown> = {}) {
      return env.track(createWorker({ store: env.store, tasks, ...FAST_WORKER, ...options })).start();
    }

    async function submitSteps(client: ReturnType<typeof createClient>, type: string, keys: readonly string[], perKey: number): Promise<Task[]> {
      const requests = [];
      for (let n = 1; n <= perKey; n += 1) for (const key of keys) requests.push({ type, payload: { key, n }, sequenceKey: key });
      return (await client.submitMany(requests)).map((r) => r.task);
    }

    it('runs the tasks of a key one at a time in submit order, across two workers at full concurrency', async () => {
      const steps = recorder('seq.order');
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const submitted = await submitSteps(client, 'seq.order', ['a', 'b', 'c', 'd'], 6);
      // The first of each key runs; the rest wait, numbered in submit order.
      expect(submitted.filter((t) => t.status === 'QUEUED').map((t) => (t.payload as Step).n)).toEqual([1, 1, 1, 1]);
      expect(submitted.filter((t) => t.sequenceKey === 'b').map((t) => [t.sequenceSeq, t.status])).toEqual([
        [1, 'QUEUED'],
        [2, 'BLOCKED'],
        [3, 'BLOCKED'],
        [4, 'BLOCKED'],
        [5, 'BLOCKED'],
        [6, 'BLOCKED'],
      ]);
      // One more, alone: numbered after the batch.
      const late = await client.submit('seq.order', { key: 'a', n: 7 }, { sequenceKey: 'a' });
      expect([late.task.sequenceSeq, late.task.status]).toEqual([7, 'BLOCKED']);
      await start([steps.definition]);
      await start([steps.definition]);
      const ids = [...submitted.map((t) => t.id), late.task.id];
      await waitFor(async () => (await statuses(env.store, ids)).every((s) => s === 'SUCCESS'), 'every step to succeed', 30_000);
      expect(steps.overlaps).toEqual([]);
      for (const key of ['a', 'b', 'c', 'd']) {
        const order = steps.starts.filter((s) => s.key === key).map((s) => s.n);
        expect(order).toEqual(key === 'a' ? [1, 2, 3, 4, 5, 6, 7] : [1, 2, 3, 4, 5, 6]);
      }
      expect(await client.sequences.list()).toEqual([]);
    });

    it('a retrying head blocks only its own key; the next task runs once it succeeds', async () => {
      const steps = recorder('seq.retry', { fail: (s, attempt) => s.key === 'slow' && s.n === 1 && attempt < 3, maxAttempts: 5 });
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const submitted = await submitSteps(client, 'seq.retry', ['slow', 'fast'], 3);
      await start([steps.definition]);
      await waitFor(
        async () =>
          (
            await statuses(
              env.store,
              submitted.map((t) => t.id),
            )
          ).every((s) => s === 'SUCCESS'),
        'every step to succeed',
        30_000,
      );
      const slow = steps.starts.filter((s) => s.key === 'slow').map((s) => s.n);
      expect(slow).toEqual([1, 1, 1, 2, 3]);
      expect(steps.starts.filter((s) => s.key === 'fast').map((s) => s.n)).toEqual([1, 2, 3]);
      expect(steps.overlaps).toEqual([]);
    });

    it('a dead-lettered head blocks its key (BLOCK): listed as blocked; a replay runs it again first, a skip lets the next run', async () => {
      let failHead = true;
      const steps = recorder('seq.dead', { fail: (s) => failHead && s.n === 1, maxAttempts: 1 });
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const submitted = await submitSteps(client, 'seq.dead', ['replayed', 'skipped'], 3);
      const byKey = (key: string) => submitted.filter((t) => t.sequenceKey === key).map((t) => t.id);
      await start([steps.definition]);
      await waitFor(
        async () =>
          (
            await statuses(
              env.store,
              submitted.map((t) => t.id),
            )
          ).filter((s) => s === 'FAILED').length === 2,
        'both heads dead-lettered',
      );
      expect(await statuses(env.store, byKey('replayed'))).toEqual(['FAILED', 'BLOCKED', 'BLOCKED']);
      const blocked = await client.sequences.list({ blockedOnly: true });
      expect(blocked.map((s) => [s.sequenceKey, s.head?.status, s.waiting, s.blocked, s.onDeadLetter])).toEqual([
        ['replayed', 'FAILED', 2, true, 'BLOCK'],
        ['skipped', 'FAILED', 2, true, 'BLOCK'],
      ]);
      expect(blocked[0]!.head!.id).toBe(byKey('replayed')[0]);
      failHead = false;
      // Replay: the head runs again (still the head), then the rest in order.
      const [letter] = (await client.deadLetters.list()).filter((l) => l.originalTaskId === byKey('replayed')[0]);
      await client.deadLetters.replay(letter!.id);
      await waitFor(async () => (await statuses(env.store, byKey('replayed'))).every((s) => s === 'SUCCESS'), 'the replayed key to drain');
      expect(steps.starts.filter((s) => s.key === 'replayed').map((s) => s.n)).toEqual([1, 1, 2, 3]);
      // Skip: the head stays a dead letter, the next runs.
      expect(await statuses(env.store, byKey('skipped'))).toEqual(['FAILED', 'BLOCKED', 'BLOCKED']);
      expect(await client.sequences.skip('skipped')).toEqual({ skipped: byKey('skipped')[0] });
      await waitFor(async () => (await statuses(env.store, byKey('skipped'))).join() === 'FAILED,SUCCESS,SUCCESS', 'the skipped key to drain');
      expect(await client.sequences.skip('skipped')).toEqual({ skipped: null });
      // A task submitted behind a skipped dead letter runs at once.
      const after = await client.submit('seq.dead', { key: 'skipped', n: 4 }, { sequenceKey: 'skipped' });
      expect(after.task.status).toBe('QUEUED');
      expect(steps.overlaps).toEqual([]);
    });

    it('under SKIP a dead-lettered head lets the next task run; a policy turned to SKIP behind one releases at once', async () => {
      const steps = recorder('seq.skip', { fail: (s) => s.n === 1, maxAttempts: 1 });
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      // One after another: submits made at once take the key in whichever order their locks are granted.
      const skipping: { task: { id: string } }[] = [];
      const blocking: { task: { id: string } }[] = [];
      for (const n of [1, 2]) skipping.push(await client.submit('seq.skip', { key: 'k1', n }, { sequenceKey: 'k1', sequenceOnDeadLetter: 'SKIP' }));
      for (const n of [1, 2]) blocking.push(await client.submit('seq.skip', { key: 'k2', n }, { sequenceKey: 'k2' }));
      await start([steps.definition]);
      await waitFor(
        async () =>
          (
            await statuses(
              env.store,
              skipping.map((r) => r.task.id),
            )
          ).join() === 'FAILED,SUCCESS',
        'k1 to go past its dead letter',
      );
      await waitFor(
        async () =>
          (
            await statuses(
              env.store,
              blocking.map((r) => r.task.id),
            )
          ).join() === 'FAILED,BLOCKED',
        'k2 to block',
      );
      expect((await client.sequences.get('k2')).onDeadLetter).toBe('BLOCK');
      await client.sequences.setPolicy('k2', 'SKIP');
      await waitFor(
        async () =>
          (
            await statuses(
              env.store,
              blocking.map((r) => r.task.id),
            )
          ).join() === 'FAILED,SUCCESS',
        'k2 to go on',
      );
      await expect(client.sequences.setPolicy('no-such-key', 'SKIP')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    });

    it('operator actions keep the order: a cancelled waiting task releases nothing, a paused one holds its turn', async () => {
      const steps = recorder('seq.ops');
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const open = steps.hold();
      const tasks = (await submitSteps(client, 'seq.ops', ['k'], 4)).map((t) => t.id);
      const worker = await start([steps.definition]);
      await waitFor(async () => (await statuses(env.store, tasks))[0] === 'RUNNING', 'the head to run');
      await client.requestCancellation(tasks[1]!); // waiting: cancelled at once, nothing released
      await client.pause(tasks[2]!); // waiting: paused, keeps its turn
      expect(await statuses(env.store, tasks)).toEqual(['RUNNING', 'CANCELLED', 'PAUSED', 'BLOCKED']);
      open();
      await waitFor(async () => (await statuses(env.store, tasks))[0] === 'SUCCESS', 'the head to end');
      // The paused task is the key's head now: the last one still waits behind it.
      const key = await client.sequences.get('k');
      expect([key.head?.id, key.head?.status, key.waiting, key.blocked]).toEqual([tasks[2], 'PAUSED', 1, true]);
      expect((await statuses(env.store, tasks))[3]).toBe('BLOCKED');
      await client.resume(tasks[2]!);
      await waitFor(async () => (await statuses(env.store, tasks)).join() === 'SUCCESS,CANCELLED,SUCCESS,SUCCESS', 'the key to drain');
      expect(steps.starts.map((s) => s.n)).toEqual([1, 3, 4]);
      // Cancelling the head itself lets the next one run.
      const open2 = steps.hold();
      const more = (await submitSteps(client, 'seq.ops', ['k'], 2)).map((t) => t.id);
      await waitFor(async () => (await statuses(env.store, more))[0] === 'RUNNING', 'the new head to run');
      await client.requestCancellation(more[0]!);
      open2();
      await waitFor(async () => (await statuses(env.store, more))[1] === 'SUCCESS', 'the next to run after the cancel');
      await worker.stop();
    });

    it('keys take fair turns: a released task queues behind the heads already waiting', async () => {
      const steps = recorder('seq.fair');
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const hot = await submitSteps(client, 'seq.fair', ['hot'], 12);
      const cold = await submitSteps(client, 'seq.fair', ['c1', 'c2', 'c3', 'c4'], 1);
      // One task at a time in the whole type: a released hot task competes with the cold heads.
      await start([steps.definition], { typeConcurrency: 1, globalConcurrency: 1 });
      const ids = [...hot, ...cold].map((t) => t.id);
      await waitFor(async () => (await statuses(env.store, ids)).every((s) => s === 'SUCCESS'), 'every task to succeed', 30_000);
      const order = steps.starts.map((s) => s.key);
      // Every cold key started before the hot key's third task: not after its twelve.
      const thirdHot = order.indexOf('hot', order.indexOf('hot', order.indexOf('hot') + 1) + 1);
      for (const key of ['c1', 'c2', 'c3', 'c4']) expect(order.indexOf(key)).toBeLessThan(thirdHot);
    });

    it('an idempotent resubmit answers the existing task and leaves the key running', async () => {
      const steps = recorder('seq.idem');
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      const first = await client.submit('seq.idem', { key: 'k', n: 1 }, { sequenceKey: 'k', idempotencyKey: 'one' });
      const again = await client.submit('seq.idem', { key: 'k', n: 1 }, { sequenceKey: 'k', idempotencyKey: 'one' });
      const second = await client.submit('seq.idem', { key: 'k', n: 2 }, { sequenceKey: 'k' });
      expect([again.created, again.task.id]).toEqual([false, first.task.id]);
      expect(second.task.status).toBe('BLOCKED');
      await start([steps.definition]);
      await waitFor(async () => (await statuses(env.store, [first.task.id, second.task.id])).every((s) => s === 'SUCCESS'), 'both to run');
      expect(steps.starts.map((s) => s.n)).toEqual([1, 2]);
    });

    it('refuses a sequence key with a unique option, in a flow, or a policy without a key; diagnose names the head', async () => {
      const steps = recorder('seq.bad');
      const client = createClient({ store: env.store, tasks: [steps.definition] });
      await expect(client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceKey: 'k', unique: { key: 'u' } })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceOnDeadLetter: 'SKIP' })).rejects.toMatchObject({ field: 'sequenceOnDeadLetter' });
      await expect(client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceKey: 'k', sequenceOnDeadLetter: 'LATER' as 'SKIP' })).rejects.toMatchObject({
        field: 'sequenceOnDeadLetter',
      });
      await expect(client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceKey: 'x'.repeat(256) })).rejects.toMatchObject({ field: 'sequenceKey' });
      const parent = await client.submit('seq.bad', { key: 'p', n: 1 });
      await expect(client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceKey: 'k', dependsOn: [parent.task.id] })).rejects.toMatchObject({
        field: 'sequenceKey',
      });
      expect((await client.list()).tasks).toHaveLength(1);
      const head = await client.submit('seq.bad', { key: 'k', n: 1 }, { sequenceKey: 'k' });
      const waiting = await client.submit('seq.bad', { key: 'k', n: 2 }, { sequenceKey: 'k' });
      const diagnosis = await client.diagnose(waiting.task.id);
      expect(diagnosis.causes[0]!.code).toBe('WAITING_IN_SEQUENCE');
      expect(diagnosis.verdict).toContain(head.task.id);
      expect(ENDED).not.toContain(waiting.task.status);
    });
  });
}
