/**
 * The operator-action history on every dialect: a change made with an actor
 * leaves one row per task it changed, written with the change; a change that
 * does not apply (wrong status, another owner's task, a repeat) leaves none;
 * dead-letter replay and archive are recorded on their task; cleanup deletes
 * a purged task's rows with it.
 */
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { ActionRecordInput, Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { claimParams, FAILURE, leaseOf, newTask, useStore } from './fixtures.js';

const G = Scope.global();
const OPS = { id: 'token:0190-ops', name: 'token:ops-laptop' };
const by = (action: ActionRecordInput['action'], detail?: string): ActionRecordInput => ({ action, actor: OPS, ...(detail ? { detail } : {}) });

export function runActionConformance(factory: StoreFactory): void {
  describe(`Store operator actions: ${factory.dialect}`, () => {
    const current = useStore(factory);
    const insert = async (overrides: Parameters<typeof newTask>[0] = {}): Promise<Task> =>
      (await current.store.insertTasks({ tasks: [newTask(overrides)] }))[0]!.task;
    const actions = (store: Store, taskId: string) => store.listTaskActions({ taskId });

    it('records one action per task a change moved, with the status before and after, the actor and the database time', async () => {
      const { store } = current;
      await insert();
      const [running] = await store.claimTasks(claimParams({ limit: 1 }));
      const waiting = await insert({ owner: 'alice' });
      const results = await store.changeStatus({
        ids: [waiting.id, waiting.id, running!.id, 'missing'],
        scope: G,
        from: ['QUEUED'],
        to: 'PAUSED',
        record: by('PAUSE'),
      });
      // (A repeated id's second answer differs by dialect; its action is written once everywhere.)
      expect([results[0], results[2], results[3]].map((r) => r!.applied)).toEqual([true, false, false]);
      const [paused, ...more] = await actions(store, waiting.id);
      expect(more).toEqual([]);
      expect(paused).toEqual({
        taskId: waiting.id,
        action: 'PAUSE',
        fromStatus: 'QUEUED',
        toStatus: 'PAUSED',
        actor: OPS.id,
        actorName: OPS.name,
        detail: null,
        at: expect.any(Date),
      });
      const task = await store.getTask({ id: waiting.id, scope: G });
      expect(Math.abs(paused!.at.getTime() - task!.updatedAt.getTime())).toBeLessThan(1000);
      // A task the change did not move has nothing recorded.
      expect(await actions(store, running!.id)).toEqual([]);

      const at = new Date((await store.now()).getTime() + 3_600_000);
      await store.changeStatus({ ids: [waiting.id], scope: G, from: ['PAUSED'], to: 'PAUSED', availableAt: at, record: by('RESCHEDULE', at.toISOString()) });
      await store.changeStatus({ ids: [waiting.id], scope: G, from: ['PAUSED'], to: 'QUEUED', record: { action: 'RESUME', actor: { id: 'cli:ana' } } });
      const history = await actions(store, waiting.id);
      expect(history.map((a) => [a.action, a.fromStatus, a.toStatus, a.actor, a.actorName, a.detail])).toEqual([
        ['RESUME', 'PAUSED', 'QUEUED', 'cli:ana', null, null],
        ['RESCHEDULE', 'PAUSED', 'PAUSED', OPS.id, OPS.name, at.toISOString()],
        ['PAUSE', 'QUEUED', 'PAUSED', OPS.id, OPS.name, null],
      ]);
      expect(await store.listTaskActions({ taskId: waiting.id, limit: 1 })).toEqual([history[0]]);
    });

    it('records nothing for a change that does not apply, is out of scope, or comes without an actor', async () => {
      const { store } = current;
      const task = await insert({ owner: 'alice' });
      expect(await store.changeStatus({ ids: [task.id], scope: G, from: ['PAUSED'], to: 'QUEUED', record: by('RESUME') })).toEqual([
        { id: task.id, applied: false, status: 'QUEUED' },
      ]);
      expect(await store.changeStatus({ ids: [task.id], scope: Scope.owner('bob'), from: ['QUEUED'], to: 'PAUSED', record: by('PAUSE') })).toEqual([
        { id: task.id, applied: false, status: null },
      ]);
      await store.changeStatus({ ids: [task.id], scope: G, from: ['QUEUED'], to: 'PAUSED' });
      expect(await actions(store, task.id)).toEqual([]);
      await store.changeStatus({ ids: [task.id], scope: Scope.owner('alice'), from: ['PAUSED'], to: 'CANCELLED', record: by('CANCEL') });
      expect((await actions(store, task.id)).map((a) => [a.action, a.fromStatus, a.toStatus])).toEqual([['CANCEL', 'PAUSED', 'CANCELLED']]);
    });

    it('records a dead letter\u2019s replay and archive on its task, once', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: [newTask(), newTask(), newTask()] });
      const tasks = await store.claimTasks(claimParams({ limit: 3 }));
      await store.finishAttempts({
        outcomes: tasks.map((t) => ({ kind: 'FAILED' as const, lease: leaseOf(t), failure: { ...FAILURE, retryable: false }, progress: null })),
      });
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      const [replayed, archived, silent] = letters;
      expect(await store.replayDeadLetters({ ids: [replayed!.id, replayed!.id], scope: G, actor: OPS })).toMatchObject([{ outcome: 'REPLAYED' }, {}]);
      expect(await store.replayDeadLetters({ ids: [replayed!.id], scope: G, actor: OPS })).toMatchObject([{ outcome: 'ALREADY_REPLAYED' }]);
      expect(await store.archiveDeadLetters({ ids: [archived!.id, archived!.id], scope: G, actor: OPS })).toBe(1);
      expect(await store.archiveDeadLetters({ ids: [archived!.id], scope: G, actor: OPS })).toBe(0);
      expect(await store.archiveDeadLetters({ ids: [silent!.id], scope: G })).toBe(1);
      const rows = async (taskId: string) => (await actions(store, taskId)).map((a) => [a.action, a.fromStatus, a.toStatus, a.actor, a.actorName, a.detail]);
      expect(await rows(replayed!.originalTaskId)).toEqual([['REPLAY', 'FAILED', 'QUEUED', OPS.id, OPS.name, replayed!.id]]);
      expect(await rows(archived!.originalTaskId)).toEqual([['ARCHIVE', null, null, OPS.id, OPS.name, archived!.id]]);
      expect(await rows(silent!.originalTaskId)).toEqual([]);
    });

    it('deletes a purged task\u2019s actions with it, and keeps the others\u2019', async () => {
      const { store } = current;
      const doomed = await insert();
      const kept = await insert();
      for (const task of [doomed, kept]) await store.changeStatus({ ids: [task.id], scope: G, from: ['QUEUED'], to: 'PAUSED', record: by('PAUSE') });
      await store.changeStatus({ ids: [doomed.id], scope: G, from: ['PAUSED'], to: 'CANCELLED', record: by('CANCEL') });
      const later = new Date((await store.now()).getTime() + 60_000);
      expect(await store.purgeTerminalTasks({ finishedBefore: later, batchSize: 10 })).toMatchObject({ tasks: 1 });
      expect(await actions(store, doomed.id)).toEqual([]);
      expect((await actions(store, kept.id)).map((a) => a.action)).toEqual(['PAUSE']);
    });
  });
}
