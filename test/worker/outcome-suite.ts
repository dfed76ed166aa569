/**
 * Outcomes the worker decides and writes, on any store: the retry options
 * merged once (an operator's policy wins), results JSON cannot hold, an
 * outcome the database refuses, and leases the worker cannot confirm in time
 * (or whose local deadline passed before a renewal could be sent).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { defineTask, type AnyTaskDefinition } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { AttemptOutcome, Store } from '../../src/store/types.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

/** No sweep here: these tests watch what the worker itself writes. */
const FAST: Partial<WorkerOptions> = { ...FAST_WORKER, recoveryIntervalMs: 0 };

export function runOutcomeSuite(factory: StoreFactory): void {
  describe(`worker outcomes on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    beforeEach(() => {
      store = env.store;
    });
    const setup = (
      tasks: AnyTaskDefinition[],
      options: Partial<WorkerOptions> = {},
      workerStore: Store = store,
    ): { client: TaskLeaseClient; worker: Worker } => {
      const client = createClient({ store, tasks });
      const worker = env.track(createWorker({ store: workerStore, tasks, ...FAST, ...options }));
      return { client, worker };
    };
    const taskOf = async (id: string): Promise<Task> => (await store.getTask({ id, scope: Scope.global() }))!;
    const until = (id: string, status: Task['status']) => waitFor(async () => (await taskOf(id)).status === status, `task ${id} to be ${status}`);

    it("a runtime policy's retry base delay wins over the definition's", async () => {
      let calls = 0;
      const t = defineTask({
        type: 'policy-retry',
        retry: { baseDelayMs: 60_000, maxDelayMs: 120_000 },
        execute: () => {
          if (++calls === 1) throw new Error('once');
        },
      });
      const { client, worker } = setup([t]);
      await client.policies.update('policy-retry', { retryBaseDelayMs: 5 });
      const delays: number[] = [];
      worker.on('retryScheduled', (event) => delays.push(event.retryDelayMs));
      worker.start();
      const { task } = await client.submit(t, {});
      await until(task.id, 'SUCCESS');
      expect(delays).toEqual([5]);
    });

    it('a result JSON cannot hold fails only its own task, for good (RESULT_NOT_SERIALIZABLE)', async () => {
      const bad = defineTask({ type: 'bigint-result', execute: () => ({ status: 'SUCCESS', result: { total: 10n } }) });
      const good = defineTask({ type: 'plain-result', execute: () => ({ status: 'SUCCESS', result: { ok: true } }) });
      const { client, worker } = setup([bad, good], { concurrency: 4 });
      const errors: unknown[] = [];
      worker.on('error', (event) => errors.push(event.error));
      const [badTask, goodTask] = await client.submitMany([
        { type: 'bigint-result', payload: {}, maxAttempts: 3 },
        { type: 'plain-result', payload: {} },
      ]);
      worker.start();
      await until(badTask!.task.id, 'FAILED');
      await until(goodTask!.task.id, 'SUCCESS');
      expect(await taskOf(badTask!.task.id)).toMatchObject({ attemptCount: 1, lastErrorCode: 'RESULT_NOT_SERIALIZABLE' });
      expect(await taskOf(goodTask!.task.id)).toMatchObject({ result: { ok: true } });
      const [failure] = await store.listFailures({ taskId: badTask!.task.id });
      expect(failure).toMatchObject({ errorCode: 'RESULT_NOT_SERIALIZABLE', retryable: false });
      expect(failure!.message).toMatch(/BigInt/);
      expect(errors).toEqual([]);
    });

    it('an outcome the database refuses does not hold the others in its batch hostage', async () => {
      const t = defineTask({ type: 'refused', execute: () => undefined });
      const { client, worker } = setup(
        [t],
        { concurrency: 12 },
        refusingStore(store, (outcome) => outcome.kind === 'SUCCESS' && culprit.has(outcome.lease.taskId)),
      );
      const culprit = new Set<string>();
      const errors: unknown[] = [];
      worker.on('error', (event) => errors.push(event.error));
      const submitted = await client.submitMany(Array.from({ length: 12 }, () => ({ type: 'refused', payload: {} })));
      culprit.add(submitted[5]!.task.id);
      worker.start();
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === 11, '11 successes');
      await until(submitted[5]!.task.id, 'FAILED');
      expect((await taskOf(submitted[5]!.task.id)).lastErrorCode).toBe('OUTCOME_NOT_WRITABLE');
      // One refusal per split on the way to the culprit, not a retry loop.
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.length).toBeLessThanOrEqual(6);
    });

    it('a failure classifier maps foreign errors to a code and retryability, without wrapping', async () => {
      const t = defineTask({
        type: 'upstream',
        execute: () => {
          throw Object.assign(new Error('Service Unavailable'), { status: 503 });
        },
      });
      const classifier = (error: unknown) => ((error as { status?: number }).status === 503 ? { errorCode: 'UPSTREAM_503', retryable: false } : null);
      const { client, worker } = setup([t], { failureClassifier: classifier });
      worker.start();
      const { task } = await client.submit(t, {}, { maxAttempts: 3 });
      await until(task.id, 'FAILED');
      expect(await taskOf(task.id)).toMatchObject({ attemptCount: 1, lastErrorCode: 'UPSTREAM_503' });
      const [failure] = await store.listFailures({ taskId: task.id });
      expect(failure).toMatchObject({ errorCode: 'UPSTREAM_503', retryable: false });
      expect(failure!.message).not.toContain('Service Unavailable');
    });

    it('validateCompletion can veto a success: the attempt fails with its error', async () => {
      const seen: unknown[] = [];
      const t = defineTask({
        type: 'vetoed',
        execute: () => ({ status: 'SUCCESS', result: { rows: 0 } }),
        validateCompletion: (result, payload) => {
          seen.push([result.result, payload]);
          if ((result.result as { rows: number }).rows === 0) throw new TaskFailure('the import wrote no rows', { code: 'EMPTY_IMPORT', retryable: false });
        },
      });
      const { client, worker } = setup([t]);
      worker.start();
      const { task } = await client.submit(t, { file: 'a.csv' });
      await until(task.id, 'FAILED');
      expect((await taskOf(task.id)).lastErrorCode).toBe('EMPTY_IMPORT');
      expect(seen).toEqual([[{ rows: 0 }, { file: 'a.csv' }]]);
    });

    it('validate runs before execute with the parsed payload: a throw fails the attempt without running execute', async () => {
      const seen: unknown[] = [];
      const t = defineTask<{ account: string }>({
        type: 'guarded',
        validate: (payload, ctx) => {
          seen.push(['validate', payload, ctx.attempt]);
          if (payload.account === 'closed') throw new TaskFailure('the account is closed', { code: 'ACCOUNT_CLOSED', retryable: false });
        },
        execute: (_ctx, payload) => void seen.push(['execute', payload]),
      });
      const { client, worker } = setup([t]);
      worker.start();
      const { task: refused } = await client.submit(t, { account: 'closed' });
      await until(refused.id, 'FAILED');
      expect((await taskOf(refused.id)).lastErrorCode).toBe('ACCOUNT_CLOSED');
      expect(seen).toEqual([['validate', { account: 'closed' }, 1]]);
      const { task: allowed } = await client.submit(t, { account: 'open' });
      await until(allowed.id, 'SUCCESS');
      expect(seen.slice(1)).toEqual([
        ['validate', { account: 'open' }, 1],
        ['execute', { account: 'open' }],
      ]);
    });

    it('aborts a handler before its lease ends when renewals hang (local lease deadline)', async () => {
      const leaseMs = 1500;
      let startedAt = 0;
      const aborted: { code: string; afterMs: number }[] = [];
      const t = defineTask({
        type: 'hung-db',
        execute: (ctx) =>
          new Promise<void>((resolve) => {
            startedAt = performance.now();
            ctx.signal.addEventListener('abort', () => {
              aborted.push({ code: (ctx.signal.reason as { code: string }).code, afterMs: performance.now() - startedAt });
              resolve();
            });
          }),
      });
      const hanging: Store = Object.create(store, { renewLeases: { value: () => new Promise(() => undefined) } });
      const { client, worker } = setup([t], { leaseMs, heartbeatIntervalMs: 200, shutdownGraceMs: 100 }, hanging);
      const lost = worker.waitFor('leaseLost');
      await client.submit(t, {});
      worker.start();
      expect((await lost).reason).toBe('unreachable');
      await waitFor(() => aborted.length === 1, 'the handler to be aborted');
      expect(aborted[0]!.code).toBe('LEASE_LOST');
      // Counted from the claim's send, which was before the handler started.
      expect(aborted[0]!.afterMs).toBeLessThan(leaseMs);
    });

    it('gives up a lease past its local deadline before renewing it: a heartbeat due first after a stall never revives it', async () => {
      // The worker's monotonic clock leaps a lease ahead, as across a blocked event loop, while the database lease
      // still runs: only the worker's own check can give it up, and the heartbeat (every 100 ms) is due long before
      // the deadline timer (armed in real time, ~4.5 s after the claim).
      let leapMs = 0;
      const clock: Clock = { ...systemClock, now: () => systemClock.now() + leapMs };
      const t = defineTask({ type: 'stalled', execute: (ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve())) });
      const { client, worker } = setup([t], { clock });
      const started = worker.waitFor('started');
      await client.submit(t, {});
      worker.start();
      await started;
      const lost: string[] = [];
      let renewedAfterLeap = 0;
      worker.on('leaseLost', (event) => lost.push(event.reason));
      worker.on('heartbeat', (event) => (renewedAfterLeap += leapMs > 0 ? event.renewed : 0));
      leapMs = 2 * FAST.leaseMs!;
      await waitFor(() => lost.length > 0 || renewedAfterLeap > 0, 'the lease to be given up (or renewed)', 3000);
      expect({ lost, renewedAfterLeap }).toEqual({ lost: ['unreachable'], renewedAfterLeap: 0 });
      await waitFor(() => worker.stats().active === 0, 'the aborted handler to return');
    });
  });
}

/** The store, except that outcome writes containing an outcome `refuse` picks fail as a database refusal would. */
function refusingStore(store: Store, refuse: (outcome: AttemptOutcome) => boolean): Store {
  const check = (outcomes: readonly AttemptOutcome[]): void => {
    if (outcomes.some(refuse)) throw new TypeError('simulated refusal of one outcome');
  };
  const overrides: PropertyDescriptorMap = {
    finishAttempts: { value: async (params: { outcomes: readonly AttemptOutcome[] }) => (check(params.outcomes), store.finishAttempts(params)) },
  };
  if (store.finishAndClaim) {
    overrides.finishAndClaim = {
      value: async (params: Parameters<NonNullable<Store['finishAndClaim']>>[0]) => (check(params.outcomes), store.finishAndClaim!(params)),
    };
  }
  return Object.create(store, overrides) as Store;
}
