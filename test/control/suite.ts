/**
 * The control plane (issue: policies, operations, dead letters, scope,
 * cleanup, diagnostics) on any store. Each dialect runs it from
 * test/control/<dialect>.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { stats } from '../../src/client/analyze.js';
import { NotFoundError, TaskFailure, ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { defineTask, type AnyTaskDefinition } from '../../src/core/definition.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';

const FAST: Partial<WorkerOptions> = {
  pollIntervalMs: 20,
  heartbeatIntervalMs: 50,
  leaseMs: 5000,
  recoveryIntervalMs: 100,
  cancelCheckIntervalMs: 0,
  retry: { baseDelayMs: 10, maxDelayMs: 50, jitter: 0 },
  shutdownGraceMs: 2000,
  shutdownAbortWaitMs: 500,
  globalConcurrency: 1000,
  typeConcurrency: 1000,
};
const G = Scope.global();

export function runControlSuite(factory: StoreFactory): void {
  describe(`control plane on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    beforeEach(() => {
      store = env.store;
    });
    const worker = (tasks: AnyTaskDefinition[], options: Partial<WorkerOptions> = {}): Worker => {
      const w = createWorker({ store, tasks, ...FAST, ...options });
      env.track(w);
      return w;
    };
    const statusOf = async (id: string): Promise<Task> => (await store.getTask({ id, scope: G }))!;
    const countRunning = async (type: string) => (await store.countByStatus({ scope: G, taskType: type })).RUNNING;

    it('a per-type limit lowered from 5 to 2 while tasks run holds at the next claims, without a restart', async () => {
      const releases: (() => void)[] = [];
      let peakAfterChange = 0;
      let changed = false;
      const t = defineTask({
        type: 'limited',
        execute: async () => {
          if (changed) peakAfterChange = Math.max(peakAfterChange, await countRunning('limited'));
          await new Promise<void>((resolve) => releases.push(resolve));
        },
      });
      const client = createClient({ store, tasks: [t] });
      await client.policies.update('limited', { maxConcurrency: 5 });
      await client.submitMany(Array.from({ length: 12 }, () => ({ type: 'limited', payload: {} })));
      const w = worker([t], { concurrency: 10 });
      w.start();
      await waitFor(() => releases.length === 5, 'five running');
      await client.policies.update('limited', { maxConcurrency: 2 });
      changed = true;
      // Finish tasks one by one: no new claim while RUNNING ≥ 2.
      for (let done = 0; done < 12; done++) {
        await waitFor(() => releases.length > 0, 'a running task to release');
        expect(await countRunning('limited')).toBeLessThanOrEqual(done < 3 ? 5 - done : 2);
        releases.shift()!();
        await waitFor(async () => (await store.countByStatus({ scope: G, taskType: 'limited' })).SUCCESS === done + 1, `${done + 1} done`);
      }
      expect(peakAfterChange).toBeLessThanOrEqual(2);
    });

    it("an owner's limit set through the client holds while a worker runs, and the other owner's tasks start at once", async () => {
      const releases: (() => void)[] = [];
      const t = defineTask({ type: 'tenant', execute: () => new Promise<void>((resolve) => releases.push(resolve)) });
      const client = createClient({ store, tasks: [t] });
      await client.policies.update({ owner: 'big' }, { maxConcurrency: 3 });
      expect(await client.policies.get({ owner: 'big' })).toMatchObject({ policyKey: 'OWNER:big', taskType: null, maxConcurrency: 3 });
      await expect(client.policies.update({ owner: 'big' }, { maxAttempts: 3 })).rejects.toBeInstanceOf(ValidationError);
      await expect(client.policies.update({ owner: '' }, { maxConcurrency: 3 })).rejects.toBeInstanceOf(ValidationError);
      await client.submitMany(Array.from({ length: 20 }, () => ({ type: 'tenant', payload: {}, owner: 'big' })));
      await client.submitMany(Array.from({ length: 2 }, () => ({ type: 'tenant', payload: {}, owner: 'small' })));
      const running = async (owner: string) => (await store.countByStatus({ scope: Scope.owner(owner) })).RUNNING;
      worker([t], { concurrency: 10 }).start();
      await waitFor(async () => (await running('small')) === 2 && (await running('big')) === 3, "small's two and big's three running");
      await client.policies.update({ owner: 'big' }, { maxConcurrency: 1 });
      for (let done = 0; done < 22; done++) {
        await waitFor(() => releases.length > 0, 'a running task to release');
        // Lowered from 3 to 1: as the three finish, no new claim for big until it is under 1.
        expect(await running('big')).toBeLessThanOrEqual(done < 5 ? 3 : 1);
        releases.shift()!();
        await waitFor(async () => (await store.countByStatus({ scope: G, taskType: 'tenant' })).SUCCESS === done + 1, `${done + 1} done`);
      }
      expect(await client.policies.reset({ owner: 'big' })).toBe(true);
    });

    it('disabling a type stops its claims; enabling it resumes them', async () => {
      const t = defineTask({ type: 'switchable', execute: () => undefined });
      const marker = defineTask({ type: 'marker', execute: () => undefined });
      const client = createClient({ store, tasks: [t, marker] });
      await client.policies.update('switchable', { enabled: false });
      const { task } = await client.submit(t, {});
      worker([t, marker]).start();
      const { task: m } = await client.submit(marker, {});
      await waitFor(async () => (await statusOf(m.id)).status === 'SUCCESS', 'marker done');
      const claims = await store.claimTasks({
        workerId: 'probe',
        taskTypes: ['switchable'],
        limit: 1,
        leaseMs: 1000,
        globalConcurrency: 10,
        typeConcurrency: 10,
      });
      expect(claims).toEqual([]);
      expect((await statusOf(task.id)).status).toBe('QUEUED');
      await client.policies.update('switchable', { enabled: true });
      await waitFor(async () => (await statusOf(task.id)).status === 'SUCCESS', 'switchable done after enabling');
    });

    it('a global policy caps every type together', async () => {
      const client = createClient({ store, tasks: [defineTask({ type: 'a' }), defineTask({ type: 'b' })] });
      await client.policies.update(null, { maxConcurrency: 3 });
      await client.submitMany(Array.from({ length: 4 }, (_, i) => ({ type: i % 2 ? 'a' : 'b', payload: {} })));
      const claimed = await store.claimTasks({
        workerId: 'p',
        taskTypes: ['a', 'b'],
        limit: 10,
        leaseMs: 10_000,
        globalConcurrency: 100,
        typeConcurrency: 100,
      });
      expect(claimed).toHaveLength(3);
    });

    it('policy maxAttempts applies to new submits; retryBaseDelayMs to retry decisions', async () => {
      let calls = 0;
      const t = defineTask({
        type: 'policied',
        execute: () => {
          calls += 1;
          throw new Error('no');
        },
      });
      const client = createClient({ store, tasks: [t] });
      await client.policies.update('policied', { maxAttempts: 2, retryBaseDelayMs: 5 });
      const { task } = await client.submit(t, {});
      expect(task.maxAttempts).toBe(2);
      const w = worker([t], { retry: { baseDelayMs: 60_000, maxDelayMs: 60_000, jitter: 0 } });
      const delays: number[] = [];
      w.on('retryScheduled', (e) => delays.push(e.retryDelayMs));
      w.start();
      await waitFor(async () => (await statusOf(task.id)).status === 'FAILED', 'failed after 2 attempts');
      expect(calls).toBe(2);
      expect(delays).toEqual([5]);
      expect((await client.policies.list()).map((p) => p.policyKey)).toEqual(['TYPE:policied']);
      expect(await client.policies.reset('policied')).toBe(true);
      expect(await client.policies.get('policied')).toBeNull();
    });

    it('rejects bad policies with a clear error and changes nothing', async () => {
      const client = createClient({ store, tasks: [] });
      await expect(client.policies.update('t', { maxConcurrency: 0 })).rejects.toThrow(/maxConcurrency/);
      await expect(client.policies.update('t', { maxConcurrency: -3 })).rejects.toThrow(ValidationError);
      await expect(client.policies.update('t', { maxAttempts: 1.5 })).rejects.toThrow(/maxAttempts/);
      await expect(client.policies.update('t', { colour: 'red' } as never)).rejects.toThrow(/colour/);
      await expect(client.policies.update('', { enabled: false })).rejects.toThrow(ValidationError);
      expect(await client.policies.list()).toEqual([]);
    });

    it('NUL characters alike on every store: a name holding one is refused, a run-time message keeps U+FFFD in its place', async () => {
      const NUL = 'a\u0000b';
      const failing = defineTask({
        type: 'nul.fail',
        maxAttempts: 1,
        execute: (ctx) => {
          ctx.reportProgress({ total: 1, processed: 0, message: `half${NUL}` });
          throw new TaskFailure(`boom${NUL}`, { code: 'NUL_TEST', retryable: false });
        },
      });
      const client = createClient({ store, tasks: [failing] });
      const refusals = [
        ['owner', async () => client.submit(failing, {}, { owner: NUL })],
        ['idempotencyKey', async () => client.submit(failing, {}, { idempotencyKey: NUL })],
        ['traceId', async () => client.submit(failing, {}, { traceId: NUL })],
        ['owner', async () => client.list({ owner: NUL })],
        ['owner', async () => client.list({ scope: Scope.owner(NUL) })],
        ['owner', async () => client.policies.update({ owner: NUL }, { maxConcurrency: 2 })],
        ['owner', async () => client.schedules.save({ key: 'nul', taskType: 'nul.fail', cron: '0 0 1 1 *', enabled: false, owner: NUL })],
        ['name', async () => client.tokens.create({ name: NUL, role: 'admin' })],
        ['owner', async () => client.tokens.create({ name: 'nul', role: 'user', owner: NUL })],
      ] as const;
      for (const [field, call] of refusals) await expect(call()).rejects.toMatchObject({ code: 'VALIDATION', field, message: expect.stringMatching(/NUL/) });
      expect((await client.list({ limit: 1000 })).tasks).toEqual([]);
      // A payload keeps it: JSON carries it as an escape on every store.
      const { task: kept } = await client.submit(failing, { s: NUL }, { delayMs: 3_600_000 });
      expect((await client.get(kept.id))!.payload).toEqual({ s: NUL });
      await client.requestCancellation(kept.id);
      const { task } = await client.submit(failing, {});
      const w = worker([failing], { progressFlushIntervalMs: 0, progressFlushThreshold: 1 });
      w.start();
      await waitFor(async () => (await statusOf(task.id)).status === 'FAILED', 'the NUL task FAILED');
      expect((await statusOf(task.id)).progress?.message).toBe('half' + 'a\uFFFDb');
      const [letter] = await client.deadLetters.list({ taskType: 'nul.fail' });
      expect(letter!.errorMessage).toBe('boom' + 'a\uFFFDb');
    });

    it('cancels many, saying why the others were not cancelled', async () => {
      const started = new Set<string>();
      const t = defineTask({
        type: 'bulk',
        execute: (ctx) =>
          new Promise((_, reject) => {
            started.add(ctx.taskId);
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
          }),
      });
      const done = defineTask({ type: 'done', execute: () => undefined });
      const client = createClient({ store, tasks: [t, done] });
      const w = worker([t, done], { concurrency: 2 });
      const { task: finished } = await client.submit(done, {});
      w.start();
      await waitFor(async () => (await statusOf(finished.id)).status === 'SUCCESS', 'done task');
      const running = await client.submitMany([
        { type: 'bulk', payload: {} },
        { type: 'bulk', payload: {} },
      ]);
      await waitFor(() => started.size === 2, 'two running');
      const queued = await client.submitMany([
        { type: 'bulk', payload: {} },
        { type: 'bulk', payload: {} },
      ]);
      const ids = [...running, ...queued].map((r) => r.task.id);
      const result = await client.cancelMany([...ids, finished.id, 'no-such-id']);
      expect(result.cancelled).toBe(2);
      expect(result.cancelRequested).toBe(2);
      expect(result.notCancelled).toEqual([
        { id: finished.id, reason: 'SUCCESS' },
        { id: 'no-such-id', reason: 'NOT_FOUND' },
      ]);
      for (const id of ids) await waitFor(async () => (await statusOf(id)).status === 'CANCELLED', 'cancelled');
      await expect(client.cancelMany(Array.from({ length: 100_000 }, (_, i) => `id-${i}`))).rejects.toThrow(/at most 1000/);
    });

    it('retries a FAILED task now with a fresh attempt cycle; reschedules a waiting one', async () => {
      let fail = true;
      const t = defineTask({
        type: 'fixable',
        execute: () => {
          if (fail) throw new TaskFailure('broken', { retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      const w = worker([t]);
      w.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 1 });
      await waitFor(async () => (await statusOf(task.id)).status === 'FAILED', 'failed');
      fail = false;
      await client.retry(task.id);
      await waitFor(async () => (await statusOf(task.id)).status === 'SUCCESS', 'succeeded after retry');
      expect(await statusOf(task.id)).toMatchObject({ attemptCount: 2, attemptBase: 1 });
      await expect(client.retry(task.id)).rejects.toThrow(/SUCCESS/);

      const { task: later } = await client.submit(t, {}, { delayMs: 3_600_000 });
      await client.reschedule(later.id, { delayMs: 0 });
      await waitFor(async () => (await statusOf(later.id)).status === 'SUCCESS', 'rescheduled task ran');
    });

    it('replays one and a batch of dead letters; they run again and keep the link', async () => {
      let healthy = false;
      const t = defineTask({
        type: 'dlq',
        execute: () => {
          if (!healthy) throw new TaskFailure('downstream down', { code: 'DOWN', retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      const w = worker([t]);
      w.start();
      const submitted = await client.submitMany(Array.from({ length: 3 }, () => ({ type: 'dlq', payload: {} })));
      const ids = submitted.map((s) => s.task.id);
      await waitFor(async () => (await client.deadLetters.size()) === 3, 'three dead letters');
      const letters = await client.deadLetters.list({ taskType: 'dlq' });
      expect(letters.map((l) => l.originalTaskId).sort()).toEqual([...ids].sort());
      healthy = true;
      const one = await client.deadLetters.replay(letters[0]!.id);
      expect(one).toEqual({ id: letters[0]!.id, outcome: 'REPLAYED', taskId: letters[0]!.originalTaskId });
      const batch = await client.deadLetters.replayBatch([letters[0]!.id, letters[1]!.id, letters[2]!.id, 'missing']);
      expect(batch.replayed).toBe(2);
      expect(batch.results.map((r) => r.outcome)).toEqual(['ALREADY_REPLAYED', 'REPLAYED', 'REPLAYED', 'NOT_FOUND']);
      for (const id of ids) await waitFor(async () => (await statusOf(id)).status === 'SUCCESS', 'replayed task succeeded');
      expect(await client.deadLetters.size()).toBe(0);
      const after = await client.deadLetters.list();
      for (const letter of after) {
        expect(letter.replayTaskId).toBe(letter.originalTaskId);
        expect(letter.replayedAt).toBeInstanceOf(Date);
      }
      await expect(client.deadLetters.replayBatch(Array.from({ length: 100_000 }, (_, i) => `dl-${i}`))).rejects.toThrow(/at most 1000/);
    });

    it('archives dead letters that cannot be fixed', async () => {
      const t = defineTask({
        type: 'hopeless',
        execute: () => {
          throw new TaskFailure('no', { retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      worker([t]).start();
      await client.submitMany([
        { type: 'hopeless', payload: {} },
        { type: 'hopeless', payload: {} },
      ]);
      await waitFor(async () => (await client.deadLetters.size()) === 2, 'two dead letters');
      const letters = await client.deadLetters.list();
      expect(await client.deadLetters.archive([letters[0]!.id])).toBe(1);
      expect(await client.deadLetters.archive([letters[0]!.id])).toBe(0);
      expect(await client.deadLetters.size()).toBe(1);
      expect((await client.deadLetters.replay(letters[0]!.id)).outcome).toBe('ARCHIVED');
    });

    it('cleans archived dead letters older than the retention in batches, never waiting ones', async () => {
      const t = defineTask({
        type: 'doomed',
        execute: () => {
          throw new TaskFailure('no', { retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      worker([t]).start();
      await client.submitMany(Array.from({ length: 4 }, () => ({ type: 'doomed', payload: {} })));
      await waitFor(async () => (await client.deadLetters.size()) === 4, 'four dead letters');
      const letters = await client.deadLetters.list();
      expect(await client.deadLetters.archive(letters.slice(1).map((l) => l.id))).toBe(3);
      expect(await client.deadLetters.clean({ retentionDays: 1 })).toEqual({ deleted: 0, batches: 1 });
      await expect(client.deadLetters.clean({ retentionDays: -1 })).rejects.toThrow(/retentionDays/);
      await expect(client.deadLetters.clean({})).rejects.toThrow(/exactly one of retentionDays or archivedBefore/);
      await expect(client.deadLetters.clean({ retentionDays: 0, batchSize: 0 })).rejects.toThrow(/batchSize/);
      const seen: number[] = [];
      const archivedBefore = new Date((await store.now()).getTime() + 60_000);
      expect(await client.deadLetters.clean({ archivedBefore, batchSize: 2, onBatch: (n) => seen.push(n) })).toEqual({ deleted: 3, batches: 2 });
      expect(seen).toEqual([2, 3]);
      expect((await client.deadLetters.list()).map((l) => l.id)).toEqual([letters[0]!.id]);
      expect(await client.deadLetters.size()).toBe(1);
    });

    it('an owner gets not-found for another owner\u2019s task on get, cancel, pause, retry, diagnose and dead letters', async () => {
      const t = defineTask({
        type: 'private',
        execute: () => {
          throw new TaskFailure('x', { retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      const { task: bobs } = await client.submit(t, {}, { owner: 'bob' });
      const { task: bobsFailed } = await client.submit(t, {}, { owner: 'bob' });
      await client.pause(bobs.id);
      worker([t]).start();
      await waitFor(async () => (await statusOf(bobsFailed.id)).status === 'FAILED', 'bob\u2019s task failed');
      const alice = { scope: Scope.owner('alice') };
      expect(await client.get(bobs.id, alice)).toBeNull();
      await expect(client.requestCancellation(bobs.id, alice)).rejects.toThrow(NotFoundError);
      await expect(client.pause(bobs.id, alice)).rejects.toThrow(NotFoundError);
      await expect(client.resume(bobs.id, alice)).rejects.toThrow(NotFoundError);
      await expect(client.retry(bobsFailed.id, alice)).rejects.toThrow(NotFoundError);
      await expect(client.diagnose(bobs.id, alice)).rejects.toThrow(NotFoundError);
      await expect(client.attempts(bobsFailed.id, alice)).rejects.toThrow(NotFoundError);
      // the same answer as for an id that does not exist at all
      await expect(client.pause('no-such-task', alice)).rejects.toThrow(NotFoundError);
      expect((await client.cancelMany([bobs.id], alice)).notCancelled).toEqual([{ id: bobs.id, reason: 'NOT_FOUND' }]);
      expect(await client.deadLetters.list(alice)).toEqual([]);
      expect(await client.deadLetters.size(alice)).toBe(0);
      const [letter] = await client.deadLetters.list();
      expect((await client.deadLetters.replay(letter!.id, alice)).outcome).toBe('NOT_FOUND');
      expect((await client.list(alice)).tasks).toEqual([]);
      expect((await statusOf(bobs.id)).status).toBe('PAUSED');
      const bob = { scope: Scope.owner('bob') };
      expect((await client.get(bobs.id, bob))!.id).toBe(bobs.id);
    });

    it('cleanup deletes only terminal tasks older than the cut-off, in batches, archiving their dead letters', async () => {
      const t = defineTask({
        type: 'old',
        execute: (ctx, p: { fail?: boolean }) => {
          if (p.fail) throw new TaskFailure('x', { retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      const w = worker([t]);
      w.start();
      const finished = await client.submitMany(Array.from({ length: 7 }, (_, i) => ({ type: 'old', payload: { fail: i === 0 } })));
      for (const f of finished) await waitFor(async () => ['SUCCESS', 'FAILED'].includes((await statusOf(f.task.id)).status), 'finished');
      await w.stop();
      const { task: waiting } = await client.submit(t, {}, { delayMs: 3_600_000 });
      const cutoff = new Date((await store.now()).getTime() + 1);
      await waitFor(async () => (await store.now()).getTime() > cutoff.getTime(), 'cut-off to pass');
      const { task: fresh } = await client.submit(t, {});
      await client.cancelMany([fresh.id]); // terminal, but finished after the cut-off
      await expect(client.cleanup({ retentionDays: 0 })).rejects.toThrow(/retentionDays/);
      const result = await client.cleanup({ finishedBefore: cutoff, batchSize: 3 });
      expect(result).toEqual({ tasks: 7, attempts: 7, failures: 1, deadLettersArchived: 1 });
      expect(await statusOf(waiting.id)).toBeDefined();
      expect((await statusOf(fresh.id)).status).toBe('CANCELLED');
      for (const f of finished) expect(await store.getTask({ id: f.task.id, scope: G })).toBeNull();
      expect(await client.deadLetters.size()).toBe(0);
      expect((await client.deadLetters.list())[0]!.archivedAt).toBeInstanceOf(Date);
      expect(await client.cleanup({ retentionDays: 1 })).toEqual({ tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0 });
    });

    it('diagnose names the cause for each stuck case', async () => {
      const blocker = defineTask({
        type: 'blocker',
        execute: (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      });
      const orphan = defineTask({ type: 'orphan' });
      const client = createClient({ store, tasks: [blocker, orphan], globalConcurrency: 20, typeConcurrency: 1 });
      const verdict = async (id: string) => (await client.diagnose(id)).causes.map((c) => c.code);

      const { task: noWorker } = await client.submit(orphan, {});
      expect(await verdict(noWorker.id)).toContain('NO_WORKER');

      const w = worker([blocker], { typeConcurrency: 1, recoveryIntervalMs: 0 }); // this test drives recovery itself
      w.start();
      await waitFor(async () => (await store.listWorkers({ seenWithinMs: 60_000 })).length === 1, 'worker registered', 30_000);
      const { task: running } = await client.submit(blocker, {});
      await waitFor(async () => (await statusOf(running.id)).status === 'RUNNING', 'blocker running', 30_000);
      const d = await client.diagnose(running.id);
      expect(d.lease.status).toBe('ACTIVE');
      expect(d.lease.remainingSeconds).toBeGreaterThan(0);
      expect(d.causes[0]!.code).toBe('RUNNING');

      const { task: typeFull } = await client.submit(blocker, {});
      expect(await verdict(typeFull.id)).toEqual(['TYPE_LIMIT_FULL']);
      await client.policies.update(null, { maxConcurrency: 1 });
      expect(await verdict(typeFull.id)).toEqual(['GLOBAL_LIMIT_FULL', 'TYPE_LIMIT_FULL']);
      await client.policies.reset(null);

      const { task: later } = await client.submit(blocker, {}, { delayMs: 3_600_000 });
      expect(await verdict(later.id)).toContain('NOT_YET_AVAILABLE');
      await client.pause(later.id);
      expect(await verdict(later.id)).toEqual(['PAUSED']);

      const { task: soon } = await client.submit(orphan, {}, { deadlineAt: new Date(Date.now() + 150) });
      await waitFor(async () => (await store.now()).getTime() > soon.deadlineAt!.getTime(), 'deadline to pass', 30_000);
      expect((await client.diagnose(soon.id)).causes[0]!.code).toBe('PAST_DEADLINE');

      await client.policies.update('blocker', { enabled: false });
      expect(await verdict(typeFull.id)).toContain('POLICY_DISABLED');
      await client.policies.reset('blocker');

      // An owner at its limit: its running task fills it, its next one waits (the type's limit is raised out of the way).
      await client.policies.update('blocker', { maxConcurrency: 5 });
      await client.policies.update({ owner: 'acme' }, { maxConcurrency: 1 });
      const { task: acmeRunning } = await client.submit(blocker, {}, { owner: 'acme' });
      await waitFor(async () => (await statusOf(acmeRunning.id)).status === 'RUNNING', 'acme task running', 30_000);
      const { task: acmeWaiting } = await client.submit(orphan, {}, { owner: 'acme' });
      expect(await verdict(acmeWaiting.id)).toEqual(['NO_WORKER', 'OWNER_LIMIT_FULL']);
      await client.policies.update({ owner: 'acme' }, { enabled: false });
      expect(await verdict(acmeWaiting.id)).toEqual(['NO_WORKER', 'POLICY_DISABLED']);
      await client.policies.reset({ owner: 'acme' });
      expect(await verdict(acmeWaiting.id)).toEqual(['NO_WORKER']);
      await client.policies.reset('blocker');

      const { task: expiring } = await client.submit(orphan, {}, { maxAttempts: 5 });
      for (let i = 0; i < 2; i++) {
        await store.claimTasks({ workerId: 'flaky-host', taskTypes: ['orphan'], limit: 10, leaseMs: 100, globalConcurrency: 100, typeConcurrency: 100 });
        await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued > 0, 'lease expiry', 30_000);
      }
      const e = await client.diagnose(expiring.id);
      expect(e.causes[0]!.code).toBe('LEASE_EXPIRING_REPEATEDLY');
      expect(e.causes[0]!.message).toMatch(/quarantined: a worker runs it alone/); // two leases lost (issue 11, B3)
      expect(e.attempts.map((a) => a.outcome)).toEqual(['LEASE_EXPIRED', 'LEASE_EXPIRED']);
      expect(e.failures.map((f) => f.errorCode)).toEqual(['LEASE_EXPIRED', 'LEASE_EXPIRED']);
      expect(e.lease.status).toBe('NO_LEASE');
      expect(e.verdict).toMatch(/lease/);
    });

    it('analyze figures match a hand-computed fixture', async () => {
      const durations = [10, 20, 30, 40, 400];
      const t = defineTask({
        type: 'measured',
        execute: async (ctx, p: { ms: number; fail?: string }) => {
          await new Promise((resolve) => setTimeout(resolve, p.ms));
          if (p.fail) throw new TaskFailure('x', { code: p.fail, retryable: false });
        },
      });
      const client = createClient({ store, tasks: [t] });
      worker([t], { concurrency: 5 }).start();
      const submitted = await client.submitMany([
        ...durations.map((ms) => ({ type: 'measured', payload: { ms } })),
        { type: 'measured', payload: { ms: 1, fail: 'E_ONE' } },
        { type: 'measured', payload: { ms: 1, fail: 'E_TWO' } },
        { type: 'measured', payload: { ms: 1, fail: 'E_TWO' } },
      ]);
      for (const s of submitted) await waitFor(async () => ['SUCCESS', 'FAILED'].includes((await statusOf(s.task.id)).status), 'done');
      const analysis = await client.analyze('measured', 1);
      expect(analysis.statusCounts).toMatchObject({ SUCCESS: 5, FAILED: 3 });
      // hand-computed from the attempt rows the store wrote
      const attempts = (await Promise.all(submitted.map((s) => store.listAttempts({ taskId: s.task.id })))).flat();
      const exec = attempts.map((a) => a.finishedAt!.getTime() - a.startedAt.getTime());
      const expected = stats(exec)!;
      expect(analysis.execution).toEqual(expected);
      expect(analysis.execution!.count).toBe(8);
      expect(analysis.execution!.maxMs).toBeGreaterThanOrEqual(400);
      expect(analysis.execution!.p95Ms).toBe(analysis.execution!.maxMs); // nearest rank of 8 samples
      expect(analysis.queueWait!.count).toBe(8);
      expect(analysis.failures).toEqual([
        { errorCode: 'E_TWO', count: 2, share: 2 / 3 },
        { errorCode: 'E_ONE', count: 1, share: 1 / 3 },
      ]);
      await expect(client.analyze('measured', 0)).rejects.toThrow(/hours/);
    });

    it('queue wait counts from when a task became due: a deliberate delay is not waiting', async () => {
      const t = defineTask({ type: 'delayed', execute: () => undefined });
      const client = createClient({ store, tasks: [t] });
      worker([t], { pollIntervalMs: 50 }).start();
      const delayMs = 2000;
      const { task } = await client.submit(t, {}, { delayMs });
      await waitFor(async () => (await statusOf(task.id)).status === 'SUCCESS', 'the delayed task to run', 30_000);
      const [attempt] = await store.listAttempts({ taskId: task.id });
      // it started after its delay…
      expect(attempt!.startedAt.getTime() - task.createdAt.getTime()).toBeGreaterThanOrEqual(delayMs);
      // …but waited only from then on (a worker polling every 50 ms): the delay is not queue wait
      const analysis = await client.analyze('delayed', 1);
      expect(analysis.queueWait!.count).toBe(1);
      expect(analysis.queueWait!.maxMs).toBeLessThan(delayMs);
      expect(analysis.queueWait!.maxMs).toBe(Math.max(0, attempt!.startedAt.getTime() - task.availableAt.getTime()));
    });
  });
}
