/**
 * The store contract beyond the data path, on every dialect: typed errors
 * (closed store, missing schema), empty input, capabilities, and the
 * wake-ups each write owes its subscribers.
 */
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { StoreMethod } from '../../src/store/base.js';
import { scheduleStoreOf } from '../../src/store/schedules.js';
import { tokenStoreOf } from '../../src/store/tokens.js';
import type { Store, StoreEvent } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, leaseOf, newTask, useStore } from './fixtures.js';

const G = Scope.global();
const LEASE = { taskId: 'no-such-task', workerId: 'w1', attempt: 1, token: 't' };
const PROGRESS = { total: 1, processed: 0, succeeded: 0, failed: 0, skipped: 0, message: null };

/** One call of every method of the contract (the compiler checks none is missing). */
const EVERY_CALL: { [M in StoreMethod]: (store: Store) => unknown } = {
  migrate: (s) => s.migrate(),
  now: (s) => s.now(),
  schemaVersion: (s) => s.schemaVersion(),
  payloadLimit: (s) => s.payloadLimit(),
  explainClaim: (s) => s.explainClaim({ taskType: 'alpha' }),
  explainListTasks: (s) => s.explainListTasks({ scope: G, limit: 10 }),
  subscribe: (s) => s.subscribe(() => undefined),
  insertTasks: (s) => s.insertTasks({ tasks: [newTask()] }),
  insertFlow: (s) => s.insertFlow({ tasks: [newTask()], edges: [] }),
  listDependencies: (s) => s.listDependencies({ taskId: 'x', scope: G }),
  getFlow: (s) => s.getFlow({ flowId: 'x', scope: G, limit: 10 }),
  awaitChildren: (s) => s.awaitChildren({ lease: LEASE, children: [], onFailure: 'CANCEL' }),
  getTask: (s) => s.getTask({ id: 'x', scope: G }),
  watchOutcome: (s) => s.watchOutcome({ taskId: 'x', listener: () => undefined }),
  listTasks: (s) => s.listTasks({ scope: G, limit: 10 }),
  countByStatus: (s) => s.countByStatus({ scope: G }),
  countTasks: (s) => s.countTasks({ scope: G }),
  changeStatus: (s) => s.changeStatus({ ids: ['x'], scope: G, from: ['QUEUED'], to: 'PAUSED' }),
  editTask: (s) => s.editTask({ id: 'x', scope: G, from: ['QUEUED'], changes: { priority: 1 }, record: { action: 'EDIT', actor: { id: 'test' } } }),
  claimTasks: (s) => s.claimTasks(claimParams()),
  renewLeases: (s) => s.renewLeases({ leases: [LEASE], leaseMs: 1000 }),
  saveProgress: (s) => s.saveProgress({ lease: LEASE, progress: PROGRESS }),
  finishAttempts: (s) => s.finishAttempts({ outcomes: [{ kind: 'CANCELLED', lease: LEASE, progress: null }] }),
  finishAndClaim: (s) => s.finishAndClaim({ outcomes: [{ kind: 'CANCELLED', lease: LEASE, progress: null }], claim: claimParams() }),
  releaseTasks: (s) => s.releaseTasks({ leases: [LEASE] }),
  recordStep: (s) => s.recordStep({ lease: LEASE, name: 'a', resultJson: null }),
  listSteps: (s) => s.listSteps({ taskId: 'x' }),
  appendTaskLogs: (s) => s.appendTaskLogs({ lease: LEASE, lines: [], bufferDropped: 0, final: true, maxLinesPerAttempt: 10, maxLinesPerTask: 10 }),
  listTaskLogs: (s) => s.listTaskLogs({ taskId: 'x', limit: 10 }),
  rateWindows: (s) => s.rateWindows({ scopes: [{ scopeKey: 'GLOBAL', periodMs: 1000 }] }),
  listRateStarts: (s) => s.listRateStarts({ withinMs: 1000 }),
  recover: (s) => s.recover({ batchSize: 10 }),
  listAttempts: (s) => s.listAttempts({ taskId: 'x' }),
  listTaskActions: (s) => s.listTaskActions({ taskId: 'x' }),
  listFailures: (s) => s.listFailures({ taskId: 'x' }),
  listDeadLetters: (s) => s.listDeadLetters({ scope: G, limit: 10 }),
  countDeadLetters: (s) => s.countDeadLetters({ scope: G }),
  replayDeadLetters: (s) => s.replayDeadLetters({ ids: ['x'], scope: G }),
  archiveDeadLetters: (s) => s.archiveDeadLetters({ ids: ['x'], scope: G }),
  savePolicy: (s) =>
    s.savePolicy({ policy: { policyKey: 'GLOBAL', taskType: null, maxConcurrency: 5, maxAttempts: null, retryBaseDelayMs: null, enabled: true } }),
  listPolicies: (s) => s.listPolicies(),
  listSequences: (s) => s.listSequences({ scope: G, limit: 10 }),
  skipSequenceHead: (s) => s.skipSequenceHead({ key: 'k' }),
  releaseSequences: (s) => s.releaseSequences({ keys: ['k'] }),
  setSequencePolicy: (s) => s.setSequencePolicy({ key: 'k', onDeadLetter: 'SKIP' }),
  deletePolicy: (s) => s.deletePolicy({ policyKey: 'GLOBAL' }),
  purgeTerminalTasks: (s) => s.purgeTerminalTasks({ finishedBefore: new Date(), batchSize: 10 }),
  purgeDeadLetters: (s) => s.purgeDeadLetters({ archivedBefore: new Date(), batchSize: 10 }),
  registerWorker: (s) => s.registerWorker({ worker: { workerId: 'w1', host: 'h', pid: 1, taskTypes: ['alpha'], concurrency: 1 } }),
  unregisterWorker: (s) => s.unregisterWorker({ workerId: 'w1' }),
  listWorkers: (s) => s.listWorkers({ seenWithinMs: 1000 }),
  leasedCounts: (s) => s.leasedCounts(),
  analysisData: (s) => s.analysisData({ taskType: 'alpha', since: new Date(0), sampleLimit: 10 }),
  publishEvent: (s) => s.publishEvent({ event: 'e', build: () => [newTask()] }),
  saveSubscription: (s) => s.saveSubscription({ subscription: { event: 'e', taskType: 'alpha', priority: null, maxAttempts: null } }),
  deleteSubscription: (s) => s.deleteSubscription({ event: 'e', taskType: 'alpha' }),
  listSubscriptions: (s) => s.listSubscriptions({}),
};

/** Subscribes and waits until the store hears its server (PostgreSQL's LISTEN; the others at once), then forgets what came before. */
async function listen(store: Store): Promise<{ events: StoreEvent[]; off: () => void }> {
  const events: StoreEvent[] = [];
  const off = store.subscribe((event) => events.push(event));
  await waitFor(() => (store as { listening?: boolean }).listening !== false, 'the store to listen');
  events.length = 0;
  return { events, off };
}

/** Calls `call` and answers the error it threw or rejected with. */
async function failureOf(call: () => unknown): Promise<{ code?: unknown; message?: unknown }> {
  try {
    await call();
  } catch (error) {
    return error as { code?: unknown; message?: unknown };
  }
  throw new Error('expected the call to fail');
}

export function runContractConformance(factory: StoreFactory): void {
  describe(`Store contract: ${factory.dialect}`, () => {
    const current = useStore(factory);

    it('answers every call on a closed store with STORE_CLOSED, and close() again is a no-op', async () => {
      const { store } = current;
      await store.close();
      await store.close();
      for (const [method, call] of Object.entries(EVERY_CALL)) {
        const error = await failureOf(() => call(store));
        expect({ method, code: error.code }).toEqual({ method, code: ErrorCode.STORE_CLOSED });
        expect(error.message).toContain(`${method}()`);
      }
    });

    it('answers the token and schedule stores on a closed store with STORE_CLOSED, like the store itself', async () => {
      const { store } = current;
      const [tokens, schedules] = [await tokenStoreOf(store), await scheduleStoreOf(store)];
      await store.close();
      for (const [method, call] of [
        ['listTokens', () => tokens.listTokens()],
        ['findTokenByHash', () => tokens.findTokenByHash({ tokenHash: 'x' })],
        ['listSchedules', () => schedules.listSchedules()],
        ['getSchedule', () => schedules.getSchedule({ key: 'x' })],
      ] as const) {
        const error = await failureOf(call);
        expect({ method, code: error.code }).toEqual({ method, code: ErrorCode.STORE_CLOSED });
        expect(error.message).toContain(`${method}()`);
      }
    });

    it('answers calls on a database never migrated with SCHEMA_NOT_MIGRATED, saying to run migrate()', async () => {
      const { store, dispose } = await factory.openUnmigrated();
      try {
        expect(await store.schemaVersion()).toBe(0);
        for (const method of ['insertTasks', 'getTask', 'claimTasks', 'finishAttempts', 'recover', 'listPolicies'] as const) {
          const error = await failureOf(() => EVERY_CALL[method](store));
          expect({ method, code: error.code }).toEqual({ method, code: ErrorCode.SCHEMA_NOT_MIGRATED });
          expect(error.message).toMatch(/store\.migrate\(\).*tasklease migrate/);
        }
        // the token and schedule stores too (they answered the driver's "no such table" before)
        for (const call of [async () => (await tokenStoreOf(store)).listTokens(), async () => (await scheduleStoreOf(store)).listSchedules()]) {
          const error = await failureOf(call);
          expect(error.code).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
          expect(error.message).toMatch(/store\.migrate\(\).*tasklease migrate/);
        }
        await store.migrate();
        expect(await store.getTask({ id: 'x', scope: G })).toBeNull();
      } finally {
        await dispose();
      }
    });

    it('answers empty input at once', async () => {
      const { store } = current;
      expect(await store.insertTasks({ tasks: [] })).toEqual([]);
      expect(await store.claimTasks(claimParams({ limit: 0 }))).toEqual([]);
      expect(await store.claimTasks(claimParams({ taskTypes: [] }))).toEqual([]);
      expect(await store.renewLeases({ leases: [], leaseMs: 1000 })).toEqual({ renewed: [], cancelRequested: [], lost: [] });
      expect(await store.finishAttempts({ outcomes: [] })).toEqual({ applied: [], deadLetters: [] });
      expect(await store.releaseTasks({ leases: [] })).toBe(0);
      expect(await store.changeStatus({ ids: [], scope: G, from: ['QUEUED'], to: 'PAUSED' })).toEqual([]);
      expect(await store.replayDeadLetters({ ids: [], scope: G })).toEqual([]);
      expect(await store.archiveDeadLetters({ ids: [], scope: G })).toBe(0);
    });

    it('states its capabilities, and finishAndClaim works whatever they say', async () => {
      const { store } = current;
      expect(typeof store.capabilities.finishAndClaim).toBe('boolean');
      expect(typeof store.capabilities.transactionalSubmit).toBe('boolean');
      expect(store.capabilities.transactionalComplete).toBe(store.dialect !== 'sqlite');
      await store.insertTasks({ tasks: [newTask(), newTask(), newTask()] });
      const [first, second] = await store.claimTasks(claimParams({ limit: 2 }));
      const { applied, deadLetters, claimed } = await store.finishAndClaim({
        outcomes: [
          { kind: 'SUCCESS', lease: leaseOf(first!), artifactId: null, resultJson: null, progress: null },
          { kind: 'FAILED', lease: leaseOf(second!), failure: { errorCode: 'BOOM', message: 'gone', traceId: null, retryable: false }, progress: null },
        ],
        claim: claimParams({ limit: 5 }),
      });
      expect(applied).toEqual([true, true]);
      const [letter, ...more] = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(more).toEqual([]);
      expect(deadLetters).toEqual([{ taskId: second!.id, deadLetterId: letter!.id }]);
      expect(claimed).toHaveLength(1);
    });

    it('tells subscribers the types of a submit (its own wake-up, not a connect-time one)', async () => {
      const { store } = current;
      const { events, off } = await listen(store);
      await store.insertTasks({ tasks: [newTask({ taskType: 'beta' })] });
      await waitFor(() => events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('beta')), 'a submitted event naming beta');
      off();
    });

    it('wakes subscribers when tasks are handed back, and tells them of cancel requests', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: [newTask(), newTask()] });
      const [handedBack, running] = await store.claimTasks(claimParams({ limit: 2 }));
      const { events, off } = await listen(store);
      expect(await store.releaseTasks({ leases: [leaseOf(handedBack!)] })).toBe(1);
      await waitFor(() => events.some((e) => e.kind === 'submitted'), 'a wake-up after releaseTasks');
      await store.changeStatus({ ids: [running!.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      await waitFor(() => events.some((e) => e.kind === 'cancelRequested' && e.taskIds.includes(running!.id)), 'a cancel request event');
      off();
    });

    it('observes only transitions of the table, and sees the common ones', async () => {
      const { store } = current;
      await store.insertTasks({ tasks: [newTask(), newTask()] });
      const [a, b] = await store.claimTasks(claimParams({ limit: 2 }));
      await store.finishAttempts({
        outcomes: [
          { kind: 'RETRY', lease: leaseOf(a!), failure: { errorCode: 'X', message: 'x', traceId: null, retryable: true }, retryDelayMs: 0, progress: null },
        ],
      });
      await store.changeStatus({ ids: [b!.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(b!), artifactId: null, resultJson: null, progress: null }] });
      await waitFor(async () => (await store.claimTasks(claimParams()))[0], 'the retry to be claimed again');
      const seen = current.transitions.map((t) => `${t.from}→${t.to}`);
      expect(seen).toEqual([
        'QUEUED→RUNNING',
        'QUEUED→RUNNING',
        'RUNNING→RETRY_WAIT',
        'RUNNING→CANCEL_REQUESTED',
        'CANCEL_REQUESTED→SUCCESS',
        'RETRY_WAIT→RUNNING',
      ]);
      expect(current.transitions.every((t) => t.allowed)).toBe(true);
    });
  });
}
