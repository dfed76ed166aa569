/**
 * The Store conformance suite: every dialect runs it from its own test file
 * (test/store/<dialect>.test.ts). Each test gets a fresh, empty database.
 * Time-dependent cases use short leases and wait on conditions judged by the
 * store's own clock, so they hold on a database clock too.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Lease, NewTask, Task } from '../../src/core/task.js';
import type { ClaimParams } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { runActionConformance } from './conformance-actions.js';
import { runContractConformance } from './conformance-contract.js';
import { runControlConformance } from './conformance-control.js';
import { runEventConformance } from './conformance-events.js';
import { runOwnerConformance } from './conformance-owners.js';
import { runPlanConformance } from './conformance-plan.js';
import { runStepConformance } from './conformance-steps.js';
import { runTransferConformance } from './conformance-transfer.js';
import { claimParams, FAILURE, leaseOf, newTask, useStore } from './fixtures.js';

const G = Scope.global();

export function runStoreConformance(factory: StoreFactory): void {
  describe(`Store conformance: ${factory.dialect}`, () => {
    const current = useStore(factory);
    let store = current.store;
    beforeEach(() => {
      store = current.store;
    });

    const insert = async (overrides: Partial<NewTask> = {}): Promise<Task> => (await store.insertTasks({ tasks: [newTask(overrides)] }))[0]!.task;
    const claimOne = async (overrides: Partial<ClaimParams> = {}): Promise<Task> => {
      const [task] = await store.claimTasks(claimParams({ limit: 1, ...overrides }));
      expect(task).toBeDefined();
      return task!;
    };

    it('migrate is idempotent', async () => {
      await store.migrate();
      await store.migrate();
      expect((await store.countByStatus({ scope: G })).QUEUED).toBe(0);
    });

    it('stores a task and reads it back verbatim', async () => {
      const payload = { text: "o'brien; DROP TABLE x; -- a$$b \u00e9\u4e2d\ud83d\ude00", nested: [1, { two: 2.5, nil: null, t: true }] };
      const created = await insert({ payloadJson: JSON.stringify(payload), owner: 'alice', priority: 7, traceId: 'tr', maxAttempts: 5 });
      const read = await store.getTask({ id: created.id, scope: G });
      expect(read).toMatchObject({
        id: created.id,
        taskType: 'alpha',
        status: 'QUEUED',
        priority: 7,
        owner: 'alice',
        traceId: 'tr',
        maxAttempts: 5,
        attemptCount: 0,
        attemptBase: 0,
        leaseExpiries: 0,
        leaseOwner: null,
        leaseToken: null,
        progress: null,
        result: null,
      });
      expect(read!.payload).toEqual(payload);
      expect(read!.createdAt).toBeInstanceOf(Date);
      const dbNow = await store.now();
      expect(Math.abs(read!.availableAt.getTime() - dbNow.getTime())).toBeLessThan(5000);
    });

    it('answers an insert with the task exactly as a read of it gives, keyed or not', async () => {
      const at = new Date(Date.now() + 3_600_000);
      const deadline = new Date(Date.now() + 7_200_000);
      const results = await store.insertTasks({
        tasks: [newTask({}), newTask({ delayMs: 90_000, priority: -3 }), newTask({ availableAt: at, deadlineAt: deadline, owner: 'o' })],
      });
      const keyed = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'same-as-read', delayMs: 1_500 })] });
      for (const { task, created } of [...results, ...keyed]) {
        expect(created).toBe(true);
        expect(await store.getTask({ id: task.id, scope: G })).toEqual(task);
      }
      expect(results[2]!.task.availableAt.getTime()).toBe(at.getTime());
      expect(results[1]!.task.availableAt.getTime() - results[1]!.task.createdAt.getTime()).toBe(90_000);
    });

    it('returns the existing task for the same type, owner and idempotency key', async () => {
      const first = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'k1', owner: 'alice' })] });
      const again = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'k1', owner: 'alice', payloadJson: '{"n":2}' })] });
      expect(first[0]!.created).toBe(true);
      expect(again[0]!.created).toBe(false);
      expect(again[0]!.task.id).toBe(first[0]!.task.id);
      const otherOwner = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'k1', owner: 'bob' })] });
      const otherType = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'k1', owner: 'alice', taskType: 'beta' })] });
      expect(otherOwner[0]!.created).toBe(true);
      expect(otherType[0]!.created).toBe(true);
      const noOwner = await store.insertTasks({ tasks: [newTask({ idempotencyKey: 'k2' }), newTask({ idempotencyKey: 'k2' })] });
      expect(noOwner[1]!.task.id).toBe(noOwner[0]!.task.id);
      expect((await store.countByStatus({ scope: G })).QUEUED).toBe(4);
    });

    it('hides other owners\u2019 tasks behind the scope', async () => {
      const mine = await insert({ owner: 'alice' });
      const theirs = await insert({ owner: 'bob' });
      const alice = Scope.owner('alice');
      expect(await store.getTask({ id: mine.id, scope: alice })).not.toBeNull();
      expect(await store.getTask({ id: theirs.id, scope: alice })).toBeNull();
      const page = await store.listTasks({ scope: alice, limit: 10 });
      expect(page.tasks.map((t) => t.id)).toEqual([mine.id]);
      const change = await store.changeStatus({ ids: [theirs.id], scope: alice, from: ['QUEUED'], to: 'PAUSED' });
      expect(change).toEqual([{ id: theirs.id, applied: false, status: null }]);
      expect((await store.getTask({ id: theirs.id, scope: G }))!.status).toBe('QUEUED');
    });

    it('lists newest first with filters and cursor paging', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await insert({ taskType: i % 2 ? 'beta' : 'alpha' })).id);
      const first = await store.listTasks({ scope: G, limit: 2 });
      expect(first.tasks.map((t) => t.id)).toEqual([ids[4], ids[3]]);
      const second = await store.listTasks({ scope: G, limit: 2, cursor: first.nextCursor });
      expect(second.tasks.map((t) => t.id)).toEqual([ids[2], ids[1]]);
      const last = await store.listTasks({ scope: G, limit: 2, cursor: second.nextCursor });
      expect(last.tasks.map((t) => t.id)).toEqual([ids[0]]);
      expect(last.nextCursor).toBeNull();
      const betas = await store.listTasks({ scope: G, limit: 10, taskType: 'beta' });
      expect(betas.tasks.map((t) => t.id)).toEqual([ids[3], ids[1]]);
      const running = await store.listTasks({ scope: G, limit: 10, status: ['RUNNING'] });
      expect(running.tasks).toEqual([]);
    });

    it('finds tasks by exact idempotency key across types, inside the scope only', async () => {
      const alpha = await insert({ idempotencyKey: 'order-7', owner: 'alice' });
      const beta = await insert({ idempotencyKey: 'order-7', owner: 'alice', taskType: 'beta' });
      const bobs = await insert({ idempotencyKey: 'order-7', owner: 'bob' });
      await insert({ idempotencyKey: 'order-70', owner: 'alice' });
      await insert({ owner: 'alice' });
      const all = await store.listTasks({ scope: G, limit: 10, idempotencyKey: 'order-7' });
      expect(all.tasks.map((t) => t.id)).toEqual([bobs.id, beta.id, alpha.id]);
      const alices = await store.listTasks({ scope: Scope.owner('alice'), limit: 10, idempotencyKey: 'order-7' });
      expect(alices.tasks.map((t) => t.id)).toEqual([beta.id, alpha.id]);
      const narrowed = await store.listTasks({ scope: G, limit: 10, idempotencyKey: 'order-7', taskType: 'beta' });
      expect(narrowed.tasks.map((t) => t.id)).toEqual([beta.id]);
      expect((await store.listTasks({ scope: G, limit: 10, idempotencyKey: 'order' })).tasks).toEqual([]);
    });

    it('claims by priority desc, then available_at, then create time', async () => {
      const past = new Date((await store.now()).getTime() - 60_000);
      const low = await insert({ priority: 0 });
      const highLater = await insert({ priority: 5 });
      const highEarlier = await insert({ priority: 5, availableAt: past });
      const lowSecond = await insert({ priority: 0 });
      const claimed = await store.claimTasks(claimParams({ limit: 10 }));
      expect(claimed.map((t) => t.id)).toEqual([highEarlier.id, highLater.id, low.id, lowSecond.id]);
      for (const task of claimed) {
        expect(task).toMatchObject({ status: 'RUNNING', leaseOwner: 'w1', attemptCount: 1 });
        expect(task.leaseUntil!.getTime()).toBeGreaterThan(Date.now());
      }
    });

    it('claims only due tasks of the asked types, never past their deadline', async () => {
      const delayed = await insert({ delayMs: 60_000 });
      const otherType = await insert({ taskType: 'gamma' });
      const due = await insert({ deadlineAt: new Date(Date.now() + 60_000) });
      const expiring = await insert({ deadlineAt: new Date(Date.now() + 200) });
      await waitFor(async () => (await store.now()).getTime() > expiring.deadlineAt!.getTime(), 'deadline to pass');
      const claimed = await store.claimTasks(claimParams({ limit: 10 }));
      expect(claimed.map((t) => t.id)).toEqual([due.id]);
      for (const id of [delayed.id, otherType.id, expiring.id]) expect((await store.getTask({ id, scope: G }))!.status).toBe('QUEUED');
    });

    it('never leases more than the type and global limits', async () => {
      for (let i = 0; i < 6; i++) await insert({ taskType: 'alpha' });
      for (let i = 0; i < 6; i++) await insert({ taskType: 'beta' });
      const first = await store.claimTasks(claimParams({ taskTypes: ['alpha', 'beta'], limit: 100, typeConcurrency: 2, globalConcurrency: 3 }));
      expect(first).toHaveLength(3);
      const again = await store.claimTasks(claimParams({ workerId: 'w2', taskTypes: ['alpha', 'beta'], limit: 100, typeConcurrency: 2, globalConcurrency: 3 }));
      expect(again).toHaveLength(0);
      const wider = await store.claimTasks(
        claimParams({ workerId: 'w2', taskTypes: ['alpha', 'beta'], limit: 100, typeConcurrency: 2, globalConcurrency: 10 }),
      );
      expect(wider).toHaveLength(1);
      const counts = await store.countByStatus({ scope: G, taskType: 'alpha' });
      expect(counts.RUNNING).toBe(2);
    });

    it('renews held leases and reports cancel requests and lost leases', async () => {
      await insert();
      await insert();
      const [a, b] = await store.claimTasks(claimParams({ limit: 2, leaseMs: 5_000 }));
      await store.changeStatus({ ids: [b!.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      const stranger: Lease = { ...leaseOf(a!), workerId: 'w-other' };
      const result = await store.renewLeases({ leases: [leaseOf(a!), leaseOf(b!), stranger], leaseMs: 60_000 });
      expect(result.renewed).toEqual([a!.id]);
      expect(result.cancelRequested).toEqual([b!.id]);
      expect(result.lost).toEqual([a!.id]);
      const renewed = await store.getTask({ id: a!.id, scope: G });
      expect(renewed!.leaseUntil!.getTime()).toBeGreaterThan(a!.leaseUntil!.getTime() + 30_000);
    });

    it('fences a worker whose lease expired and was reclaimed: it can write nothing', async () => {
      await insert();
      const stale = await claimOne({ workerId: 'zombie', leaseMs: 150 });
      await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued === 1, 'expired lease to be requeued');
      const fresh = await claimOne({ workerId: 'healthy' });
      expect(fresh.attemptCount).toBe(2);
      const zombie = leaseOf(stale);
      expect(await store.saveProgress({ lease: zombie, progress: { total: 1, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: null } })).toBe(false);
      expect(await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: zombie, artifactId: 'x', resultJson: null, progress: null }] })).toEqual({
        applied: [false],
        deadLetters: [],
      });
      expect(await store.finishAttempts({ outcomes: [{ kind: 'FAILED', lease: zombie, failure: FAILURE, progress: null }] })).toEqual({
        applied: [false],
        deadLetters: [],
      });
      expect((await store.renewLeases({ leases: [zombie], leaseMs: 60_000 })).lost).toEqual([stale.id]);
      expect(await store.releaseTasks({ leases: [zombie] })).toBe(0);
      const now = await store.getTask({ id: stale.id, scope: G });
      expect(now).toMatchObject({ status: 'RUNNING', leaseOwner: 'healthy', attemptCount: 2, progress: null, artifactId: null });
      expect(await store.listDeadLetters({ scope: G, limit: 10 })).toEqual([]);
      const attempts = await store.listAttempts({ taskId: stale.id });
      expect(attempts.map((a) => [a.attempt, a.workerId, a.outcome])).toEqual([
        [1, 'zombie', 'LEASE_EXPIRED'],
        [2, 'healthy', null],
      ]);
      const failures = await store.listFailures({ taskId: stale.id });
      expect(failures.map((f) => f.errorCode)).toEqual(['LEASE_EXPIRED']);
    });

    it('fences by the claim\u2019s lease token: a lease with the same owner and attempt number but another token changes nothing', async () => {
      await insert();
      // Two claims by one owner with one attempt number (a lost claim commit whose retry claims again): only the
      // token tells the two leases apart.
      const second = await claimOne({ workerId: 'w1' });
      expect(second.leaseToken).toMatch(/^[0-9a-f]{16}$/);
      const otherToken = second.leaseToken === '0000000000000000' ? '0000000000000001' : '0000000000000000';
      const first = { ...second, leaseToken: otherToken };
      const stale: Lease = leaseOf(first);
      const progress = { total: 1, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: null };
      expect(await store.saveProgress({ lease: stale, progress })).toBe(false);
      expect(await store.renewLeases({ leases: [stale], leaseMs: 60_000 })).toEqual({ renewed: [], cancelRequested: [], lost: [first.id] });
      expect(
        (await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: stale, artifactId: 'x', resultJson: null, progress: null }] })).applied,
      ).toEqual([false]);
      expect(await store.releaseTasks({ leases: [stale] })).toBe(0);
      expect(await store.getTask({ id: first.id, scope: G })).toMatchObject({
        status: 'RUNNING',
        leaseToken: second.leaseToken,
        artifactId: null,
        progress: null,
      });
      // The holder's own writes pass.
      expect((await store.renewLeases({ leases: [leaseOf(second)], leaseMs: 60_000 })).renewed).toEqual([first.id]);
      expect(await store.saveProgress({ lease: leaseOf(second), progress })).toBe(true);
      expect(
        (await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(second), artifactId: 'y', resultJson: null, progress: null }] })).applied,
      ).toEqual([true]);
      expect(await store.getTask({ id: first.id, scope: G })).toMatchObject({ status: 'SUCCESS', artifactId: 'y', leaseOwner: null, leaseToken: null });
    });

    it('writes outcomes and claims into the slots they freed, in one call; a stale outcome keeps nothing', async () => {
      for (let i = 0; i < 4; i++) await insert();
      const limited = claimParams({ limit: 10, typeConcurrency: 2 });
      const [a, b] = await store.claimTasks(limited);
      expect(await store.claimTasks(limited)).toEqual([]); // the limit binds
      const result = await store.finishAndClaim({
        outcomes: [
          { kind: 'SUCCESS', lease: leaseOf(a!), artifactId: null, resultJson: null, progress: null },
          { kind: 'SUCCESS', lease: { ...leaseOf(b!), token: 'stale' }, artifactId: null, resultJson: null, progress: null },
        ],
        claim: limited,
      });
      expect(result.applied).toEqual([true, false]);
      expect(result.claimed).toHaveLength(1);
      expect(result.claimed[0]).toMatchObject({ status: 'RUNNING', leaseOwner: 'w1', attemptCount: 1 });
      expect((await store.getTask({ id: a!.id, scope: G }))!.status).toBe('SUCCESS');
      expect((await store.getTask({ id: b!.id, scope: G }))!.status).toBe('RUNNING');
    });

    it('renews no expired lease, even one nobody swept: lost, and nothing changes; its outcome still ends it', async () => {
      await insert();
      const task = await claimOne({ leaseMs: 150 });
      await waitFor(async () => (await store.now()).getTime() > task.leaseUntil!.getTime(), 'the lease to pass by the database clock');
      const before = await store.getTask({ id: task.id, scope: G });
      expect(await store.renewLeases({ leases: [leaseOf(task)], leaseMs: 60_000 })).toEqual({ renewed: [], cancelRequested: [], lost: [task.id] });
      const progress = { total: 2, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: null };
      expect(await store.saveProgress({ lease: leaseOf(task), progress })).toBe(false);
      expect(await store.getTask({ id: task.id, scope: G })).toEqual(before);
      // An outcome ends the attempt: it may still close an expired lease no sweep took (rules/leases.ts).
      const outcome = { kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: null, progress: null } as const;
      expect((await store.finishAttempts({ outcomes: [outcome] })).applied).toEqual([true]);
      expect((await store.getTask({ id: task.id, scope: G }))!.status).toBe('SUCCESS');
    });

    it('writes success with result, artifact and final progress', async () => {
      await insert();
      const task = await claimOne();
      const progress = { total: 10, processed: 10, succeeded: 9, failed: 1, skipped: 0, message: 'done' };
      const {
        applied: [applied],
      } = await store.finishAttempts({
        outcomes: [{ kind: 'PARTIAL_SUCCESS', lease: leaseOf(task), artifactId: 'file-7', resultJson: JSON.stringify({ rows: 9 }), progress }],
      });
      expect(applied).toBe(true);
      const done = await store.getTask({ id: task.id, scope: G });
      expect(done).toMatchObject({ status: 'PARTIAL_SUCCESS', artifactId: 'file-7', result: { rows: 9 }, progress, leaseOwner: null });
      expect(done!.finishedAt).toBeInstanceOf(Date);
      const [attempt] = await store.listAttempts({ taskId: task.id });
      expect(attempt).toMatchObject({ attempt: 1, workerId: 'w1', outcome: 'PARTIAL_SUCCESS' });
      expect(attempt!.finishedAt).toBeInstanceOf(Date);
    });

    it('writes many outcomes in one call, each fenced on its own', async () => {
      for (let i = 0; i < 4; i++) await insert();
      const tasks = await store.claimTasks(claimParams({ limit: 4 }));
      const bogus: Lease = { ...leaseOf(tasks[3]!), attempt: 99 };
      const results = await store.finishAttempts({
        outcomes: [
          { kind: 'SUCCESS', lease: leaseOf(tasks[0]!), artifactId: null, resultJson: null, progress: null },
          { kind: 'RETRY', lease: leaseOf(tasks[1]!), failure: FAILURE, retryDelayMs: 60_000, progress: null },
          { kind: 'FAILED', lease: leaseOf(tasks[2]!), failure: { ...FAILURE, retryable: false }, progress: null },
          { kind: 'CANCELLED', lease: bogus, progress: null },
        ],
      });
      expect(results.applied).toEqual([true, true, true, false]);
      const [s, r, f, c] = await Promise.all(tasks.map((t) => store.getTask({ id: t.id, scope: G })));
      expect(s!.status).toBe('SUCCESS');
      expect(r).toMatchObject({ status: 'RETRY_WAIT', lastErrorCode: 'BOOM', leaseOwner: null });
      expect(r!.availableAt.getTime()).toBeGreaterThan((await store.now()).getTime() + 50_000);
      expect(f).toMatchObject({ status: 'FAILED', lastErrorCode: 'BOOM' });
      expect(c!.status).toBe('RUNNING');
      const [failure] = await store.listFailures({ taskId: tasks[1]!.id });
      expect(failure).toMatchObject({ attempt: 1, errorCode: 'BOOM', message: 'it broke', traceId: 'trace-1', retryable: true });
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(letters).toHaveLength(1);
      // the write names the dead letter it made: the worker's deadLettered event and log line carry it
      expect(results.deadLetters).toEqual([{ taskId: tasks[2]!.id, deadLetterId: letters[0]!.id }]);
      expect(letters[0]).toMatchObject({ originalTaskId: tasks[2]!.id, taskType: 'alpha', errorCode: 'BOOM', payload: { n: 1 }, attemptCount: 1 });
    });

    it('ends a task with a cancel request CANCELLED whatever failure, hand-back or snooze its worker writes', async () => {
      for (let i = 0; i < 4; i++) await insert();
      const tasks = await store.claimTasks(claimParams({ limit: 4 }));
      await store.changeStatus({ ids: tasks.map((t) => t.id), scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      const [retry, failed, released, snoozed] = tasks.map(leaseOf);
      const results = await store.finishAttempts({
        outcomes: [
          { kind: 'RETRY', lease: retry!, failure: FAILURE, retryDelayMs: 60_000, progress: null },
          { kind: 'FAILED', lease: failed!, failure: { ...FAILURE, retryable: false }, progress: null },
          { kind: 'RELEASED', lease: released!, progress: null },
          { kind: 'SNOOZED', lease: snoozed!, delayMs: 60_000, progress: null },
        ],
      });
      expect(results).toEqual({ applied: [true, true, true, true], deadLetters: [] });
      for (const task of tasks) {
        const now = await store.getTask({ id: task.id, scope: G });
        expect(now).toMatchObject({ status: 'CANCELLED', leaseOwner: null });
        expect(now!.finishedAt).toBeInstanceOf(Date);
      }
      // the failures are on record; nothing went to the dead-letter queue
      expect((await store.listFailures({ taskId: tasks[0]!.id })).map((f) => f.errorCode)).toEqual(['BOOM']);
      expect((await store.listFailures({ taskId: tasks[1]!.id })).map((f) => f.errorCode)).toEqual(['BOOM']);
      expect(await store.listDeadLetters({ scope: G, limit: 10 })).toEqual([]);
    });

    it('lets a retried task run again once its backoff is over', async () => {
      await insert();
      const task = await claimOne();
      await store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease: leaseOf(task), failure: FAILURE, retryDelayMs: 200, progress: null }] });
      const due = (await store.getTask({ id: task.id, scope: G }))!.availableAt.getTime();
      // A loaded machine may reach this claim after the backoff: what must hold is that no claim starts it before.
      const again =
        (await store.claimTasks(claimParams()))[0] ?? (await waitFor(async () => (await store.claimTasks(claimParams()))[0], 'retry to become due'));
      expect(again).toMatchObject({ id: task.id, attemptCount: 2, status: 'RUNNING' });
      const second = (await store.listAttempts({ taskId: task.id })).find((attempt) => attempt.attempt === 2)!;
      expect(second.startedAt.getTime()).toBeGreaterThanOrEqual(due);
    });

    it('a success clears the task\u2019s last error; the failure history stays', async () => {
      await insert();
      const task = await claimOne();
      await store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease: leaseOf(task), failure: FAILURE, retryDelayMs: 0, progress: null }] });
      expect((await store.getTask({ id: task.id, scope: G }))!.lastErrorCode).toBe('BOOM');
      const again = await waitFor(async () => (await store.claimTasks(claimParams()))[0], 'the retry');
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(again), artifactId: null, resultJson: null, progress: null }] });
      expect(await store.getTask({ id: task.id, scope: G })).toMatchObject({ status: 'SUCCESS', lastErrorCode: null });
      expect((await store.listFailures({ taskId: task.id })).map((f) => f.errorCode)).toEqual(['BOOM']);
    });

    it('hands a started task back without spending an attempt and releases an unstarted one as if never claimed', async () => {
      await insert({ maxAttempts: 1 });
      await insert();
      const [started, prefetched] = await store.claimTasks(claimParams({ limit: 2 }));
      expect(await store.finishAttempts({ outcomes: [{ kind: 'RELEASED', lease: leaseOf(started!), progress: null }] })).toEqual({
        applied: [true],
        deadLetters: [],
      });
      expect(await store.releaseTasks({ leases: [leaseOf(prefetched!)] })).toBe(1);
      const a = await store.getTask({ id: started!.id, scope: G });
      const p = await store.getTask({ id: prefetched!.id, scope: G });
      // attempt_count is the fencing number and only grows, on both paths; the attempt is given back through attempt_base
      expect(a).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1, leaseOwner: null });
      expect(p).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1, leaseOwner: null, startedAt: null });
      expect((await store.listAttempts({ taskId: started!.id })).map((x) => x.outcome)).toEqual(['RELEASED']);
      expect((await store.listAttempts({ taskId: prefetched!.id })).map((x) => [x.attempt, x.outcome])).toEqual([[1, 'RELEASED']]);
      const reclaimed = await store.claimTasks(claimParams({ limit: 2 }));
      // with maxAttempts 1, the one attempt is still there: a failure now is retried by nobody but fails for good
      expect(reclaimed.find((t) => t.id === started!.id)).toMatchObject({ attemptCount: 2, attemptBase: 1 });
      // the hand-back's lease is dead for good: the next claim of that task has a new attempt number
      expect(reclaimed.find((t) => t.id === prefetched!.id)).toMatchObject({ attemptCount: 2, attemptBase: 1 });
      expect(await store.releaseTasks({ leases: [leaseOf(prefetched!)] })).toBe(0);
    });

    it('snoozes a task: QUEUED again after the delay on the database clock, no attempt spent, a SNOOZED attempt row', async () => {
      await insert({ maxAttempts: 1 });
      const task = await claimOne();
      const before = await store.now();
      const done = await store.finishAttempts({ outcomes: [{ kind: 'SNOOZED', lease: leaseOf(task), delayMs: 60_000, progress: null }] });
      expect(done).toEqual({ applied: [true], deadLetters: [] });
      const snoozed = await store.getTask({ id: task.id, scope: G });
      expect(snoozed).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1, leaseOwner: null, lastErrorCode: null });
      expect(snoozed!.availableAt.getTime()).toBeGreaterThanOrEqual(before.getTime() + 59_000);
      expect(await store.claimTasks(claimParams())).toEqual([]);
      expect(await store.listAttempts({ taskId: task.id })).toMatchObject([{ attempt: 1, outcome: 'SNOOZED', errorCode: null }]);
      expect(await store.listFailures({ taskId: task.id })).toEqual([]);
      // a stale snooze (the lease is gone) changes nothing
      expect(await store.finishAttempts({ outcomes: [{ kind: 'SNOOZED', lease: leaseOf(task), delayMs: 0, progress: null }] })).toEqual({
        applied: [false],
        deadLetters: [],
      });
    });

    it('a short snooze is claimable again once its delay has passed', async () => {
      await insert();
      const task = await claimOne();
      await store.finishAttempts({ outcomes: [{ kind: 'SNOOZED', lease: leaseOf(task), delayMs: 200, progress: null }] });
      const again = await waitFor(async () => (await store.claimTasks(claimParams()))[0], 'the snooze to end');
      expect(again).toMatchObject({ id: task.id, attemptCount: 2, attemptBase: 1, status: 'RUNNING' });
    });

    it('recovers: expired leases requeue or fail, cancel requests end, due retries queue, overdue tasks fail', async () => {
      const spent = await insert({ maxAttempts: 1, taskType: 'spent' });
      const retryable = await insert({ maxAttempts: 2, taskType: 'retryable' });
      const cancelling = await insert({ taskType: 'cancelling' });
      const live = await insert({ taskType: 'live' });
      // A task's first two expired leases cost no attempt (it may have died beside a poison pill, issue 11 B3):
      // `spent` (maxAttempts 1) loses two leases and is still QUEUED, its one attempt intact.
      for (let expiries = 1; expiries <= 2; expiries++) {
        await store.claimTasks(claimParams({ taskTypes: ['spent'], leaseMs: 150 }));
        await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued === 1, 'the expired lease to be requeued');
        const back = (await store.getTask({ id: spent.id, scope: G }))!;
        expect(back).toMatchObject({ status: 'QUEUED', attemptCount: expiries, attemptBase: expiries, leaseExpiries: expiries });
      }
      const overdue = await insert({ taskType: 'overdue', deadlineAt: new Date(Date.now() + 300) });
      await store.claimTasks(claimParams({ taskTypes: ['spent', 'retryable', 'cancelling'], leaseMs: 150 }));
      await store.claimTasks(claimParams({ taskTypes: ['live'], leaseMs: 60_000 }));
      await store.changeStatus({ ids: [cancelling.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
      const total = { requeued: 0, failed: 0, cancelled: 0, deadlineExpired: 0 };
      await waitFor(async () => {
        const r = await store.recover({ batchSize: 10 });
        total.requeued += r.requeued;
        total.failed += r.failed;
        total.cancelled += r.cancelled;
        total.deadlineExpired += r.deadlineExpired;
        return total.requeued === 1 && total.failed === 1 && total.cancelled === 1 && total.deadlineExpired === 1;
      }, 'all four recoveries');
      const status = async (t: Task) => (await store.getTask({ id: t.id, scope: G }))!;
      // its third lease lost (quarantined: it ran alone) is charged, and its one attempt is spent
      expect(await status(spent)).toMatchObject({ status: 'FAILED', lastErrorCode: 'LEASE_EXPIRED', attemptCount: 3, attemptBase: 2, leaseExpiries: 3 });
      expect(await status(retryable)).toMatchObject({ status: 'QUEUED', attemptCount: 1, attemptBase: 1, leaseExpiries: 1, leaseOwner: null });
      expect((await store.listAttempts({ taskId: spent.id })).map((a) => a.outcome)).toEqual(['LEASE_EXPIRED', 'LEASE_EXPIRED', 'LEASE_EXPIRED']);
      expect(await status(cancelling)).toMatchObject({ status: 'CANCELLED' });
      expect(await status(live)).toMatchObject({ status: 'RUNNING' });
      expect(await status(overdue)).toMatchObject({ status: 'FAILED', lastErrorCode: 'DEADLINE_EXCEEDED' });
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(letters.map((l) => l.originalTaskId).sort()).toEqual([spent.id, overdue.id].sort());
      // a due RETRY_WAIT task moves back to QUEUED
      const retried = await claimOne({ taskTypes: ['retryable'] });
      await store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease: leaseOf(retried), failure: FAILURE, retryDelayMs: 0, progress: null }] });
      await waitFor(async () => (await store.recover({ batchSize: 10 })).retriesDue === 1, 'due retry to queue');
      expect((await status(retryable)).status).toBe('QUEUED');
    });

    it('a PAUSED task whose deadline passes ends like a queued one: FAILED, DEADLINE_EXCEEDED, dead-lettered (F7)', async () => {
      const paused = await insert({ taskType: 'paused', deadlineAt: new Date(Date.now() + 300) });
      const undated = await insert({ taskType: 'paused' });
      await store.changeStatus({ ids: [paused.id, undated.id], scope: G, from: ['QUEUED'], to: 'PAUSED' });
      await waitFor(async () => (await store.now()).getTime() > paused.deadlineAt!.getTime(), 'the deadline to pass');
      let expired = 0;
      await waitFor(async () => (expired += (await store.recover({ batchSize: 10 })).deadlineExpired) === 1, 'the sweep to fail the overdue paused task');
      expect(await store.getTask({ id: paused.id, scope: G })).toMatchObject({ status: 'FAILED', lastErrorCode: 'DEADLINE_EXCEEDED' });
      expect((await store.getTask({ id: undated.id, scope: G }))!.status).toBe('PAUSED');
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(letters.map((l) => [l.originalTaskId, l.errorCode])).toEqual([[paused.id, 'DEADLINE_EXCEEDED']]);
    });

    it('changes status only from the allowed statuses, with the target\u2019s column rules', async () => {
      const a = await insert();
      const paused = await store.changeStatus({ ids: [a.id, 'missing'], scope: G, from: ['QUEUED'], to: 'PAUSED' });
      expect(paused).toEqual([
        { id: a.id, applied: true, status: 'PAUSED' },
        { id: 'missing', applied: false, status: null },
      ]);
      expect(await store.claimTasks(claimParams())).toEqual([]);
      const again = await store.changeStatus({ ids: [a.id], scope: G, from: ['QUEUED'], to: 'PAUSED' });
      expect(again).toEqual([{ id: a.id, applied: false, status: 'PAUSED' }]);
      const later = new Date((await store.now()).getTime() + 3_600_000);
      await store.changeStatus({ ids: [a.id], scope: G, from: ['PAUSED'], to: 'QUEUED', availableAt: later });
      expect((await store.getTask({ id: a.id, scope: G }))!.availableAt.getTime()).toBe(later.getTime());
      await store.changeStatus({ ids: [a.id], scope: G, from: ['QUEUED'], to: 'CANCELLED' });
      const cancelled = await store.getTask({ id: a.id, scope: G });
      expect(cancelled!.status).toBe('CANCELLED');
      expect(cancelled!.finishedAt).toBeInstanceOf(Date);
    });

    it('counts by status, per type and scope', async () => {
      await insert({ owner: 'alice' });
      await insert({ owner: 'bob', taskType: 'beta' });
      await claimOne();
      expect((await store.countByStatus({ scope: G })).QUEUED).toBe(1);
      expect((await store.countByStatus({ scope: G })).RUNNING).toBe(1);
      expect((await store.countByStatus({ scope: Scope.owner('bob') })).QUEUED).toBe(1);
      expect((await store.countByStatus({ scope: G, taskType: 'beta' })).RUNNING).toBe(0);
    });
  });
  runContractConformance(factory);
  runControlConformance(factory);
  runActionConformance(factory);
  runOwnerConformance(factory);
  runPlanConformance(factory);
  runTransferConformance(factory);
  runStepConformance(factory);
  runEventConformance(factory);
}
