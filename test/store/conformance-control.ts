/**
 * Control operations on every dialect: dead letters (replay, archive,
 * count), policies (disable, cap, delete), cleanup, the worker registry,
 * leased counts and analysis data.
 */
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { PolicyInput } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { claimParams, FAILURE, leaseOf, newTask, useStore } from './fixtures.js';

const G = Scope.global();

function typePolicy(overrides: Partial<PolicyInput>): PolicyInput {
  return { policyKey: 'TYPE:alpha', taskType: 'alpha', maxConcurrency: null, maxAttempts: null, retryBaseDelayMs: null, enabled: true, ...overrides };
}

export function runControlConformance(factory: StoreFactory): void {
  describe(`Store control: ${factory.dialect}`, () => {
    const current = useStore(factory);

    /** Inserts and claims `n` tasks, then fails them for good: each leaves a dead letter. */
    const failForGood = async (n: number): Promise<Task[]> => {
      const { store } = current;
      await store.insertTasks({ tasks: Array.from({ length: n }, () => newTask()) });
      const tasks = await store.claimTasks(claimParams({ limit: n }));
      await store.finishAttempts({
        outcomes: tasks.map((t) => ({ kind: 'FAILED' as const, lease: leaseOf(t), failure: { ...FAILURE, retryable: false }, progress: null })),
      });
      return tasks;
    };

    it('replays a dead letter once: its task runs again in a fresh attempt cycle', async () => {
      const { store } = current;
      const [task] = await failForGood(1);
      const [letter] = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(await store.countDeadLetters({ scope: G })).toBe(1);
      const replay = await store.replayDeadLetters({ ids: [letter!.id, 'missing'], scope: G });
      expect(replay).toEqual([
        { id: letter!.id, outcome: 'REPLAYED', taskId: task!.id },
        { id: 'missing', outcome: 'NOT_FOUND', taskId: null },
      ]);
      expect(await store.getTask({ id: task!.id, scope: G })).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1, finishedAt: null });
      expect(await store.replayDeadLetters({ ids: [letter!.id], scope: G })).toEqual([{ id: letter!.id, outcome: 'ALREADY_REPLAYED', taskId: task!.id }]);
      expect(await store.countDeadLetters({ scope: G })).toBe(0);
      const [again] = await store.claimTasks(claimParams());
      expect(again).toMatchObject({ id: task!.id, attemptCount: 2 });
    });

    it('archives dead letters out of the queue, and replays no archived one', async () => {
      const { store } = current;
      await failForGood(2);
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(await store.archiveDeadLetters({ ids: [letters[0]!.id], scope: Scope.owner('someone-else') })).toBe(0);
      expect(await store.archiveDeadLetters({ ids: [letters[0]!.id], scope: G })).toBe(1);
      expect(await store.archiveDeadLetters({ ids: [letters[0]!.id], scope: G })).toBe(0);
      expect(await store.countDeadLetters({ scope: G })).toBe(1);
      expect(await store.replayDeadLetters({ ids: [letters[0]!.id], scope: G })).toEqual([{ id: letters[0]!.id, outcome: 'ARCHIVED', taskId: null }]);
    });

    it('applies policies at the next claim: disabled types wait, caps bind, deleted policies stop applying', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: Array.from({ length: 4 }, () => newTask()) });
      await store.savePolicy({ policy: typePolicy({ enabled: false }) });
      expect(await store.claimTasks(claimParams())).toEqual([]);
      const saved = await store.savePolicy({ policy: typePolicy({ maxConcurrency: 1 }) });
      expect(saved).toMatchObject({ policyKey: 'TYPE:alpha', maxConcurrency: 1, enabled: true });
      expect((await store.listPolicies()).map((p) => [p.policyKey, p.maxConcurrency])).toEqual([['TYPE:alpha', 1]]);
      expect(await store.claimTasks(claimParams())).toHaveLength(1);
      expect(await store.leasedCounts()).toEqual({ alpha: 1 });
      expect(await store.deletePolicy({ policyKey: 'TYPE:alpha' })).toBe(true);
      expect(await store.deletePolicy({ policyKey: 'TYPE:alpha' })).toBe(false);
      expect(await store.claimTasks(claimParams())).toHaveLength(3);
      expect(await store.leasedCounts()).toEqual({ alpha: 4 });
    });

    it('purges finished tasks with their history, archiving their dead letters, and leaves the rest', async () => {
      const { store } = current;
      const [failed] = await failForGood(1);
      await store.insertTasks({ tasks: [newTask(), newTask()] });
      const [done] = await store.claimTasks(claimParams({ limit: 1 }));
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(done!), artifactId: null, resultJson: null, progress: null }] });
      const later = new Date((await store.now()).getTime() + 60_000);
      const result = await store.purgeTerminalTasks({ finishedBefore: later, batchSize: 10 });
      expect(result).toEqual({ tasks: 2, attempts: 2, failures: 1, deadLettersArchived: 1 });
      expect(await store.getTask({ id: failed!.id, scope: G })).toBeNull();
      expect(await store.getTask({ id: done!.id, scope: G })).toBeNull();
      expect((await store.countByStatus({ scope: G })).QUEUED).toBe(1);
      expect(await store.countDeadLetters({ scope: G })).toBe(0);
      expect(await store.listDeadLetters({ scope: G, limit: 10 })).toHaveLength(1);
    });

    it('deletes dead letters archived before the retention, in batches, and never an unarchived one', async () => {
      const { store } = current;
      await failForGood(3);
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      const kept = letters[0]!;
      expect(await store.archiveDeadLetters({ ids: letters.slice(1).map((l) => l.id), scope: G })).toBe(2);
      const now = (await store.now()).getTime();
      expect(await store.purgeDeadLetters({ archivedBefore: new Date(now - 60_000), batchSize: 10 })).toBe(0);
      const later = new Date(now + 60_000);
      expect(await store.purgeDeadLetters({ archivedBefore: later, batchSize: 1 })).toBe(1);
      expect(await store.purgeDeadLetters({ archivedBefore: later, batchSize: 10 })).toBe(1);
      expect(await store.purgeDeadLetters({ archivedBefore: later, batchSize: 10 })).toBe(0);
      expect((await store.listDeadLetters({ scope: G, limit: 10 })).map((l) => l.id)).toEqual([kept.id]);
      expect(await store.countDeadLetters({ scope: G })).toBe(1);
    });

    it('lists dead letters moved within a time window: from inclusive, to exclusive', async () => {
      const { store } = current;
      await failForGood(2);
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      const movedAt = letters.map((l) => l.movedAt.getTime());
      const first = Math.min(...movedAt);
      const last = Math.max(...movedAt);
      const window = (movedAfter: number | null, movedBefore: number | null) =>
        store
          .listDeadLetters({
            scope: G,
            limit: 10,
            movedAfter: movedAfter === null ? null : new Date(movedAfter),
            movedBefore: movedBefore === null ? null : new Date(movedBefore),
          })
          .then((found) => found.map((l) => l.id).sort());
      const all = letters.map((l) => l.id).sort();
      expect(await window(first, null)).toEqual(all);
      expect(await window(first - 60_000, last + 1)).toEqual(all);
      expect(await window(last + 1, null)).toEqual([]);
      expect(await window(null, first)).toEqual([]);
      expect(await window(first - 60_000, first - 1)).toEqual([]);
      const newest = letters
        .filter((l) => l.movedAt.getTime() === last)
        .map((l) => l.id)
        .sort();
      expect(await window(last, last + 1)).toEqual(newest);
    });

    it('keeps a registry of live workers', async () => {
      const { store } = current;
      const worker = { workerId: 'w-7', host: 'host-a', pid: 42, taskTypes: ['alpha', 'beta'], concurrency: 3 };
      await store.registerWorker({ worker });
      await store.registerWorker({ worker: { ...worker, concurrency: 4 } });
      const [seen, ...others] = await store.listWorkers({ seenWithinMs: 60_000 });
      expect(others).toEqual([]);
      expect(seen).toMatchObject({ ...worker, concurrency: 4 });
      await store.unregisterWorker({ workerId: 'w-7' });
      expect(await store.listWorkers({ seenWithinMs: 60_000 })).toEqual([]);
    });

    it('gives analysis data: statuses, finished attempts and failure counts of a type', async () => {
      const { store } = current;
      const since = new Date((await store.now()).getTime() - 60_000);
      await failForGood(2);
      expect((await store.analysisData({ taskType: 'alpha', since, sampleLimit: 10 })).oldestWaitingSince).toBeNull();
      const [waiting] = await store.insertTasks({ tasks: [newTask()] });
      await store.insertTasks({ tasks: [newTask({ delayMs: 3_600_000 })] }); // delayed: not waiting yet
      const data = await store.analysisData({ taskType: 'alpha', since, sampleLimit: 10 });
      expect(data.statusCounts).toMatchObject({ FAILED: 2, QUEUED: 2, RUNNING: 0 });
      expect(data.attempts).toHaveLength(2);
      expect(data.attempts[0]).toMatchObject({ attempt: 1 });
      expect(data.failureCounts).toEqual([{ errorCode: 'BOOM', count: 2 }]);
      // the oldest due QUEUED task, whenever it was created (a window of the last minute does not hide it)
      expect(data.oldestWaitingSince).toEqual(waiting!.task.availableAt);
      const later = await store.analysisData({ taskType: 'alpha', since: new Date(Date.now() + 3_600_000), sampleLimit: 10 });
      expect(later.oldestWaitingSince).toEqual(waiting!.task.availableAt);
    });
  });
}
