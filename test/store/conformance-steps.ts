/**
 * Durable steps on every dialect (rules/steps.ts): a step is recorded under
 * its lease's fence and listed back; a stale, expired or foreign lease records
 * nothing; a name is recorded once per cycle; retries keep the cycle, an
 * operator's retry and a dead-letter replay end it; cleanup deletes a purged
 * task's steps.
 */
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, FAILURE, leaseOf, newTask, useStore } from './fixtures.js';

const G = Scope.global();

export function runStepConformance(factory: StoreFactory): void {
  describe(`Store durable steps: ${factory.dialect}`, () => {
    const current = useStore(factory);
    const insert = async (overrides: Parameters<typeof newTask>[0] = {}): Promise<Task> =>
      (await current.store.insertTasks({ tasks: [newTask(overrides)] }))[0]!.task;
    const claimOne = async (overrides: Parameters<typeof claimParams>[0] = {}): Promise<Task> => {
      const [task] = await current.store.claimTasks(claimParams({ limit: 1, ...overrides }));
      expect(task).toBeDefined();
      return task!;
    };
    const names = async (taskId: string, currentCycleOnly = true) =>
      (await current.store.listSteps({ taskId, currentCycleOnly })).map((s) => [s.cycle, s.name, s.resultJson, s.attempt]);

    it('records steps under the lease and lists them in the order recorded, verbatim', async () => {
      const { store } = current;
      await insert();
      const task = await claimOne();
      const odd = "o'brien; DROP TABLE x; -- \u00e9\u4e2d\ud83d\ude00";
      expect(await store.recordStep({ lease: leaseOf(task), name: 'charge', resultJson: '{"id":"ch_1","amount":12.5}' })).toBe(true);
      expect(await store.recordStep({ lease: leaseOf(task), name: odd, resultJson: JSON.stringify({ t: odd, nul: '\u0000' }) })).toBe(true);
      expect(await store.recordStep({ lease: leaseOf(task), name: 'Charge', resultJson: null })).toBe(true);
      const steps = await store.listSteps({ taskId: task.id });
      expect(steps.map((s) => s.name).sort()).toEqual(['Charge', 'charge', odd].sort());
      const charge = steps.find((s) => s.name === 'charge')!;
      expect(charge).toMatchObject({ taskId: task.id, cycle: 0, resultJson: '{"id":"ch_1","amount":12.5}', attempt: 1, workerId: 'w1' });
      expect(charge.recordedAt).toBeInstanceOf(Date);
      expect(Math.abs(charge.recordedAt.getTime() - (await store.now()).getTime())).toBeLessThan(60_000);
      expect(JSON.parse(steps.find((s) => s.name === odd)!.resultJson!)).toEqual({ t: odd, nul: '\u0000' });
      expect(steps.find((s) => s.name === 'Charge')!.resultJson).toBeNull();
      expect(await store.listSteps({ taskId: (await insert()).id })).toEqual([]);
    });

    it('records a name once per cycle: a second record keeps the first result', async () => {
      const { store } = current;
      await insert();
      const task = await claimOne();
      expect(await store.recordStep({ lease: leaseOf(task), name: 'a', resultJson: '1' })).toBe(true);
      expect(await store.recordStep({ lease: leaseOf(task), name: 'a', resultJson: '2' })).toBe(true);
      expect(await names(task.id)).toEqual([[0, 'a', '1', 1]]);
    });

    it('refuses a stale lease (reclaimed by another worker), a foreign token and an expired lease nobody swept', async () => {
      const { store } = current;
      await insert();
      const stale = await claimOne({ workerId: 'zombie', leaseMs: 150 });
      expect(await store.recordStep({ lease: leaseOf(stale), name: 'before', resultJson: '0' })).toBe(true);
      // Expired by the database clock, not swept yet: a step is work during the attempt, like progress.
      const progress = { total: 1, processed: 0, succeeded: 0, failed: 0, skipped: 0, message: null };
      await waitFor(async () => !(await store.saveProgress({ lease: leaseOf(stale), progress })), 'the lease to expire');
      expect(await store.recordStep({ lease: leaseOf(stale), name: 'late', resultJson: '1' })).toBe(false);
      await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued === 1, 'expired lease to be requeued');
      const fresh = await claimOne({ workerId: 'healthy' });
      expect(await store.recordStep({ lease: leaseOf(stale), name: 'zombie', resultJson: '2' })).toBe(false);
      expect(await store.recordStep({ lease: { ...leaseOf(fresh), token: 'not-the-token' }, name: 'forged', resultJson: '3' })).toBe(false);
      expect(await store.recordStep({ lease: { ...leaseOf(fresh), workerId: 'zombie' }, name: 'forged', resultJson: '3' })).toBe(false);
      expect(await store.recordStep({ lease: leaseOf(fresh), name: 'after', resultJson: '4' })).toBe(true);
      expect(await names(fresh.id)).toEqual([
        [0, 'before', '0', 1],
        [0, 'after', '4', 2],
      ]);
      // A finished task takes no more steps.
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(fresh), artifactId: null, resultJson: null, progress: null }] });
      expect(await store.recordStep({ lease: leaseOf(fresh), name: 'done', resultJson: '5' })).toBe(false);
      expect((await names(fresh.id)).length).toBe(2);
    });

    it('keeps the cycle across retries and hand-backs; an operator retry and a dead-letter replay start a new one', async () => {
      const { store } = current;
      await insert({ maxAttempts: 2 });
      const first = await claimOne();
      expect(await store.recordStep({ lease: leaseOf(first), name: 'a', resultJson: '"A1"' })).toBe(true);
      await store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease: leaseOf(first), failure: FAILURE, retryDelayMs: 0, progress: null }] });
      const second = await claimOne();
      expect(second.attemptCount).toBe(2);
      expect(await names(second.id)).toEqual([[0, 'a', '"A1"', 1]]);
      expect(await store.recordStep({ lease: leaseOf(second), name: 'b', resultJson: '"B2"' })).toBe(true);
      await store.finishAttempts({ outcomes: [{ kind: 'RELEASED', lease: leaseOf(second), progress: null }] });
      const third = await claimOne();
      expect(await names(third.id)).toEqual([
        [0, 'a', '"A1"', 1],
        [0, 'b', '"B2"', 2],
      ]);
      const failed = await store.finishAttempts({ outcomes: [{ kind: 'FAILED', lease: leaseOf(third), failure: FAILURE, progress: null }] });
      expect(failed.deadLetters).toHaveLength(1);
      // An operator's retry: a new cycle; the old steps stay listed, under the attempt count the cycle ended at.
      const retried = await store.changeStatus({ ids: [third.id], scope: G, from: ['FAILED'], to: 'QUEUED', newCycle: true });
      expect(retried[0]!.applied).toBe(true);
      expect(await names(third.id)).toEqual([]);
      expect(await names(third.id, false)).toEqual([
        [3, 'a', '"A1"', 1],
        [3, 'b', '"B2"', 2],
      ]);
      const fourth = await claimOne();
      expect(await store.recordStep({ lease: leaseOf(fourth), name: 'a', resultJson: '"A4"' })).toBe(true);
      const again = await store.finishAttempts({ outcomes: [{ kind: 'FAILED', lease: leaseOf(fourth), failure: FAILURE, progress: null }] });
      // A dead letter's replay: another new cycle.
      expect((await store.replayDeadLetters({ ids: [again.deadLetters[0]!.deadLetterId], scope: G }))[0]!.outcome).toBe('REPLAYED');
      expect(await names(fourth.id)).toEqual([]);
      expect(await names(fourth.id, false)).toEqual([
        [3, 'a', '"A1"', 1],
        [3, 'b', '"B2"', 2],
        [4, 'a', '"A4"', 4],
      ]);
      // A status change without a new cycle (pause, resume) keeps the steps.
      const fifth = await claimOne();
      expect(await store.recordStep({ lease: leaseOf(fifth), name: 'c', resultJson: '5' })).toBe(true);
      await store.changeStatus({ ids: [fifth.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      expect(await names(fifth.id)).toEqual([[0, 'c', '5', 5]]);
    });

    it('cleanup deletes a purged task’s steps with it', async () => {
      const { store } = current;
      await insert();
      const done = await claimOne();
      await store.recordStep({ lease: leaseOf(done), name: 'a', resultJson: '1' });
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(done), artifactId: null, resultJson: null, progress: null }] });
      await insert();
      const live = await claimOne();
      await store.recordStep({ lease: leaseOf(live), name: 'a', resultJson: '2' });
      const purged = await store.purgeTerminalTasks({ finishedBefore: new Date((await store.now()).getTime() + 60_000), batchSize: 10 });
      expect(purged.tasks).toBe(1);
      expect(await store.listSteps({ taskId: done.id })).toEqual([]);
      expect(await names(live.id)).toEqual([[0, 'a', '2', 1]]);
    });
  });
}
