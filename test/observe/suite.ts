/**
 * The observability suite on any store: a scripted run whose every metric is
 * predicted exactly, the metric set shared by several workers, and the
 * control-plane health check. Each dialect runs it from test/observe/<dialect>.test.ts.
 */
import { Registry } from 'prom-client';
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import { controlPlaneHealth, workerHealth } from '../../src/observe/health.js';
import { createMetrics } from '../../src/observe/metrics.js';
import { hasPoolStats } from '../../src/store/pool-stats.js';
import type { Store } from '../../src/store/types.js';
import { defineTask, TaskResult, type AnyTaskDefinition } from '../../src/core/definition.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

/** Shorter leases and heartbeats than the other suites: these tests watch renewals and expiries. */
export const FAST: Partial<WorkerOptions> = { ...FAST_WORKER, heartbeatIntervalMs: 50, leaseMs: 2000 };

/** Generous: a loaded CI machine (or the lead's full run on two cores) must not turn slowness into a failure. */
export const SETTLE_MS = 30_000;

export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };

/** The samples of one metric, as a scrape would see them (gauges collected). */
async function samples(registry: Registry, name: string): Promise<Sample[]> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  if (!metric) throw new Error(`metric ${name} is not registered`);
  return metric.values as Sample[];
}

async function value(registry: Registry, name: string, labels: Record<string, string> = {}, metricName = name): Promise<number> {
  const match = (await samples(registry, name)).filter(
    (s) =>
      (s.metricName ?? name) === metricName &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v) &&
      Object.keys(s.labels).filter((k) => k !== 'le').length === Object.keys(labels).length,
  );
  return match.reduce((sum, s) => sum + s.value, 0);
}

/** Sum of the series carrying at least these labels (others summed over, as PromQL's sum without them). */
async function total(registry: Registry, name: string, labels: Record<string, string> = {}, metricName = name): Promise<number> {
  const match = (await samples(registry, name)).filter(
    (s) => (s.metricName ?? name) === metricName && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return match.reduce((sum, s) => sum + s.value, 0);
}

/** The label values of a metric's series. */
async function labelValues(registry: Registry, name: string, label: string): Promise<string[]> {
  return (await samples(registry, name)).map((s) => String(s.labels[label])).sort();
}

/** PostgreSQL and MySQL stores report their pool (its size is the factory's poolSize, 4); SQLite has none, so no series. */
async function expectPoolGauges(registry: Registry, store: Store): Promise<void> {
  const fields = ['active', 'idle', 'max', 'pending'].map((f) => `async_task_db_connections_${f}`);
  if (!hasPoolStats(store)) {
    for (const name of fields) expect(await samples(registry, name)).toEqual([]);
    return;
  }
  expect(store.poolStats()?.max).toBe(4);
  // One scrape (each one reads dead letters, rates and adaptive limits on pooled connections, so exact active/idle figures move).
  const text = await registry.metrics();
  const read = (field: string): number =>
    Number(new RegExp(`^async_task_db_connections_${field}\\{dialect="${store.dialect}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
  expect(read('max')).toBe(4);
  // At most the scrape's own requests (dead letters, rate usage, adaptive limits), while the pool opens connections.
  expect(read('pending')).toBeLessThanOrEqual(3);
  expect(read('active') + read('idle')).toBeGreaterThanOrEqual(1); // the run opened connections
  expect(read('active') + read('idle')).toBeLessThanOrEqual(4);
}

export function runObserveSuite(factory: StoreFactory): void {
  describe(`observability on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    beforeEach(() => {
      store = env.store;
    });
    const newWorker = (tasks: AnyTaskDefinition[], options: Partial<WorkerOptions> = {}): Worker => {
      const worker = createWorker({ store, tasks, ...FAST, ...options });
      env.track(worker);
      return worker;
    };

    it('metric values after a scripted run match what happened', async () => {
      let flakyRuns = 0;
      const ok = defineTask<{ partial?: boolean }>({ type: 'obs.ok', execute: (_ctx, p) => (p?.partial ? TaskResult.partial() : undefined) });
      const flaky = defineTask({
        type: 'obs.flaky',
        execute: () => {
          if (++flakyRuns === 1) throw new Error('first run fails');
        },
      });
      const doomed = defineTask({
        type: 'obs.doomed',
        maxAttempts: 2,
        execute: () => {
          throw new TaskFailure('upstream down', { code: 'UPSTREAM_DOWN' });
        },
      });
      const sleepy = defineTask({ type: 'obs.sleepy', timeoutMs: 150, execute: (ctx) => untilAborted(ctx.signal) });
      const held = defineTask({ type: 'obs.held', execute: (ctx) => untilAborted(ctx.signal) });
      const tasks = [ok, flaky, doomed, sleepy, held];

      const registry = new Registry();
      const metrics = createMetrics({ registry });
      expect(createMetrics({ registry })).toBe(metrics);
      const client = createClient({ store, tasks });
      metrics.attachClient(client);
      metrics.attachStore(store);

      // A crashed worker's task: leased by a ghost, its lease expires, recovery requeues it, our worker runs it.
      const { task: orphan } = await client.submit(ok, {});
      const ghost = await store.claimTasks({ workerId: 'ghost', taskTypes: [ok.type], limit: 1, leaseMs: 200, globalConcurrency: 100, typeConcurrency: 100 });
      expect(ghost.map((t) => t.id)).toEqual([orphan.id]);

      const submitted = await client.submitMany([
        { type: ok.type, payload: {} },
        { type: ok.type, payload: {} },
        { type: ok.type, payload: {} },
        { type: ok.type, payload: { partial: true } },
        { type: flaky.type, payload: {} },
        { type: doomed.type, payload: {} },
        { type: sleepy.type, payload: {} },
      ]);
      const worker = newWorker(tasks, { concurrency: 4 });
      metrics.attachWorker(worker);
      metrics.attachWorker(worker); // attaching twice must not count twice
      const beats = { renewed: 0, cancelRequested: 0, lost: 0, count: 0 };
      worker.on('heartbeat', (e) => {
        beats.count += 1;
        beats.renewed += e.renewed;
        beats.cancelRequested += e.cancelRequested;
        beats.lost += e.lost;
      });
      worker.start();
      const ids = [orphan.id, ...submitted.map((r) => r.task.id)];
      await waitFor(
        async () => {
          const all = await Promise.all(ids.map((id) => store.getTask({ id, scope: Scope.global() })));
          return all.every((t) => t !== null && isTerminal(t.status));
        },
        'every scripted task to finish',
        SETTLE_MS,
      );

      // One task held running past a heartbeat: the gauges see it, then it is cancelled.
      const heldStarted = worker.waitFor('started', (e) => e.task.taskType === held.type);
      const { task: heldTask } = await client.submit(held, {});
      await heldStarted;
      await worker.waitFor('heartbeat', (e) => e.renewed + e.cancelRequested >= 1);
      expect(await value(registry, 'async_task_active_count')).toBe(1);
      expect(await value(registry, 'async_task_local_max_concurrency')).toBe(4);
      expect(await labelValues(registry, 'async_task_registered_types', 'task_type')).toEqual(tasks.map((t) => t.type).sort());
      expect(await value(registry, 'async_task_registered_types', { task_type: held.type })).toBe(1);
      const cancelled = worker.waitFor('cancelled', (e) => e.task.id === heldTask.id);
      await client.requestCancellation(heldTask.id);
      await cancelled;
      await worker.stop(); // drains the outcome writer: every event has been emitted

      const submittedOf = (type: string) => value(registry, 'async_task_submitted_total', { task_type: type });
      expect([
        await submittedOf(ok.type),
        await submittedOf(flaky.type),
        await submittedOf(doomed.type),
        await submittedOf(sleepy.type),
        await submittedOf(held.type),
      ]).toEqual([5, 1, 1, 1, 1]);

      const completedOf = (status: string) => total(registry, 'async_task_completed_total', { status });
      expect({
        SUCCESS: await completedOf('SUCCESS'),
        PARTIAL_SUCCESS: await completedOf('PARTIAL_SUCCESS'),
        FAILED: await completedOf('FAILED'),
        CANCELLED: await completedOf('CANCELLED'),
      }).toEqual({ SUCCESS: 5, PARTIAL_SUCCESS: 1, FAILED: 2, CANCELLED: 1 });

      const failuresOf = (type: string, code: string) => value(registry, 'async_task_failures_total', { task_type: type, error_code: code });
      expect(await failuresOf(flaky.type, 'HANDLER_ERROR')).toBe(1);
      expect(await failuresOf(doomed.type, 'UPSTREAM_DOWN')).toBe(2);
      expect(await failuresOf(sleepy.type, 'TIMEOUT')).toBe(1);
      expect((await samples(registry, 'async_task_failures_total')).length).toBe(3);

      // By type: the per-type success rate and retry rate the seed's business panels read.
      const completedTyped = (status: string, type: string) => value(registry, 'async_task_completed_total', { status, task_type: type });
      expect([
        await completedTyped('SUCCESS', ok.type),
        await completedTyped('PARTIAL_SUCCESS', ok.type),
        await completedTyped('SUCCESS', flaky.type),
        await completedTyped('FAILED', doomed.type),
        await completedTyped('FAILED', sleepy.type),
        await completedTyped('CANCELLED', held.type),
      ]).toEqual([4, 1, 1, 1, 1, 1]);
      expect(await value(registry, 'async_task_retries_total', { task_type: flaky.type })).toBe(1);
      expect(await value(registry, 'async_task_retries_total', { task_type: doomed.type })).toBe(1);
      expect(await total(registry, 'async_task_retries_total')).toBe(2);
      const deadOf = (type: string, code: string) => value(registry, 'async_task_dead_letter_total', { task_type: type, error_code: code });
      expect([await deadOf(doomed.type, 'UPSTREAM_DOWN'), await deadOf(sleepy.type, 'TIMEOUT')]).toEqual([1, 1]);
      expect(await total(registry, 'async_task_dead_letter_total')).toBe(2);
      expect(await value(registry, 'async_task_timeouts_total')).toBe(1);
      expect(await value(registry, 'async_task_lease_expired_recovered_total')).toBe(1);

      // One observation per execution: ok ×4 + the orphan's rerun, flaky ×2, doomed ×2, sleepy, held.
      const executionsOf = (type: string) => value(registry, 'async_task_execution_seconds', { task_type: type }, 'async_task_execution_seconds_count');
      expect([
        await executionsOf(ok.type),
        await executionsOf(flaky.type),
        await executionsOf(doomed.type),
        await executionsOf(sleepy.type),
        await executionsOf(held.type),
      ]).toEqual([5, 2, 2, 1, 1]);
      expect(await value(registry, 'async_task_execution_seconds', { task_type: sleepy.type }, 'async_task_execution_seconds_sum')).toBeGreaterThanOrEqual(
        0.14,
      );
      expect(await value(registry, 'async_task_queue_wait_seconds', {}, 'async_task_queue_wait_seconds_count')).toBe(11);
      // One lease-duration observation per execution too, each at least as long as the execution it held.
      const leaseOf = (type: string, metric: string) => value(registry, 'async_task_lease_duration_seconds', { task_type: type }, metric);
      expect(await leaseOf(doomed.type, 'async_task_lease_duration_seconds_count')).toBe(2);
      expect(await leaseOf(sleepy.type, 'async_task_lease_duration_seconds_sum')).toBeGreaterThanOrEqual(
        await value(registry, 'async_task_execution_seconds', { task_type: sleepy.type }, 'async_task_execution_seconds_sum'),
      );
      expect(await total(registry, 'async_task_lease_duration_seconds', {}, 'async_task_lease_duration_seconds_count')).toBe(11);

      expect(await value(registry, 'async_task_dead_letter_queue_size')).toBe(2);
      const renewals = await value(registry, 'async_task_lease_renewal_total');
      expect(renewals).toBe(beats.renewed + beats.cancelRequested + beats.lost);
      expect(renewals).toBeGreaterThanOrEqual(1);
      expect(await value(registry, 'async_task_lease_renewal_success_total')).toBe(beats.renewed + beats.cancelRequested);
      expect(await value(registry, 'async_task_lease_renewal_failures_total')).toBe(beats.lost);
      expect(await value(registry, 'async_task_lease_renewal_success_rate')).toBe(beats.lost === 0 ? 1 : (renewals - beats.lost) / renewals);
      // Each heartbeat's wait for a lease-pool connection, observed once.
      expect(await value(registry, 'async_task_lease_renewal_wait_seconds', {}, 'async_task_lease_renewal_wait_seconds_count')).toBe(beats.count);
      expect(await labelValues(registry, 'async_task_registered_types', 'task_type')).toEqual([]); // stopped: detached
      await expectPoolGauges(registry, store);

      // A stopped worker has detached: no slots, nothing active.
      expect(await value(registry, 'async_task_active_count')).toBe(0);
      expect(await value(registry, 'async_task_local_max_concurrency')).toBe(0);

      // Bounded labels: no task id, owner or trace id ever becomes a label value.
      const text = await registry.metrics();
      for (const id of [...ids, heldTask.id]) expect(text).not.toContain(id);
    });

    it('a snooze counts in async_task_snoozed_total and as an execution, not as a failure', async () => {
      let runs = 0;
      const t = defineTask({ type: 'obs.snoozy', execute: () => (++runs === 1 ? TaskResult.snooze(0) : undefined) });
      const registry = new Registry();
      const worker = newWorker([t]);
      createMetrics({ registry }).attachWorker(worker);
      worker.start();
      const { task } = await createClient({ store, tasks: [t] }).submit(t, {});
      await waitFor(async () => (await store.getTask({ id: task.id, scope: Scope.global() }))!.status === 'SUCCESS', 'the snoozed task to succeed');
      await waitFor(async () => (await value(registry, 'async_task_completed_total', { status: 'SUCCESS', task_type: t.type })) === 1, 'its completion');
      expect(await value(registry, 'async_task_snoozed_total', { task_type: t.type })).toBe(1);
      expect(await total(registry, 'async_task_failures_total')).toBe(0);
      expect(await total(registry, 'async_task_retries_total')).toBe(0);
      expect(await value(registry, 'async_task_execution_seconds', { task_type: t.type }, 'async_task_execution_seconds_count')).toBe(2);
    });

    it('several workers share one registry; the slot gauge follows their lifecycle', async () => {
      const t = defineTask({ type: 'obs.noop', execute: () => undefined });
      const registry = new Registry();
      const a = newWorker([t], { concurrency: 2 });
      const b = newWorker([t], { concurrency: 3 });
      createMetrics({ registry }).attachWorker(a);
      createMetrics({ registry }).attachWorker(b); // the second call returns the same metric set
      expect(await value(registry, 'async_task_local_max_concurrency')).toBe(0); // not started
      a.start();
      b.start();
      expect(await value(registry, 'async_task_local_max_concurrency')).toBe(5);
      await a.stop();
      expect(await value(registry, 'async_task_local_max_concurrency')).toBe(3);
      expect(() => createMetrics({ registry, prefix: 'x' } as never)).toThrow(/prefix/);
    });

    it('a worker whose store fails is not silent: it logs (throttled) and its health is DOWN with the reason', async () => {
      const lines: { level: number; msg: string; operation?: string; errorCode?: string }[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const t = defineTask({ type: 'obs.down', execute: () => undefined });
      const worker = newWorker([t], { logger, pollIntervalMs: 10, minPollIntervalMs: 10 });
      worker.start();
      await waitFor(async () => (await store.listWorkers({ seenWithinMs: 60_000 })).length === 1, 'the worker to register');
      expect(workerHealth(worker).status).toBe('UP');
      await store.close();
      let failures = 0;
      worker.on('error', () => (failures += 1));
      await waitFor(() => failures >= 10, 'ten failed store operations');
      const health = workerHealth(worker);
      expect(health.status).toBe('DOWN');
      expect(health.error).toMatch(/cannot use its store: \w+ failing since/);
      expect(health.details.storeProblem).toMatchObject({ operation: expect.any(String), message: expect.any(String) });
      // Ten failures or more, but one line per operation within the throttle interval.
      const errors = lines.filter((line) => line.level === 50);
      expect(errors.length).toBeGreaterThan(0);
      const operations = errors.map((line) => line.operation);
      expect(new Set(operations).size).toBe(operations.length);
      expect(errors[0]!.msg).toMatch(/^tasklease worker: \w+ failed: /);
    });

    it('warns at start when the heartbeat leaves a renewal less than one interval before the leases are given up', async () => {
      const lines: { level: number; msg: string }[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const t = defineTask({ type: 'obs.tight', execute: () => undefined });
      const tight = newWorker([t], { logger, leaseMs: 2000, heartbeatIntervalMs: 1000 });
      tight.start();
      await tight.stop();
      expect(lines.map((line) => line.msg)).toEqual([
        expect.stringMatching(/a renewal that takes longer than 950 ms loses its leases; keep heartbeatIntervalMs at most a third of leaseMs \(666\)/),
      ]);
      lines.length = 0;
      const roomy = newWorker([t], { logger, leaseMs: 3000, heartbeatIntervalMs: 1000 });
      roomy.start();
      await roomy.stop();
      expect(lines).toEqual([]);
    });

    it('warns at start when local concurrency is more than the limits let the worker hold', async () => {
      const lines: { level: number; msg: string }[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const t = defineTask({ type: 'obs.limited', execute: () => undefined });
      const worker = newWorker([t], { logger, concurrency: 10, globalConcurrency: 20, typeConcurrency: 5 });
      worker.start();
      await waitFor(() => lines.length > 0, 'the warning');
      expect(lines[0]).toMatchObject({ level: 40 });
      expect(lines[0]!.msg).toMatch(/concurrency 10 \+ prefetch 0 is more than the limits let this worker hold \(5: global 20, per type \{"obs.limited":5\}\)/);
      expect(worker.stats().limits).toEqual({ global: 20, perType: { 'obs.limited': 5 }, usable: 5 });
      const quiet: unknown[] = [];
      const fits = newWorker([t], { logger: pino({ level: 'warn' }, { write: (line: string) => void quiet.push(line) }), concurrency: 5, typeConcurrency: 5 });
      fits.start();
      await fits.stop();
      expect(quiet).toEqual([]);
    });

    it('warns at start when a batch type can never fill batch.maxSize (its calls are capped by slots or limits)', async () => {
      const lines: { level: number; msg: string }[] = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const t = defineTask({ type: 'obs.batch', batch: { maxSize: 50, maxWaitMs: 10 }, executeBatch: () => undefined });
      const worker = newWorker([t], { logger, concurrency: 10, globalConcurrency: 1000, typeConcurrency: 1000 });
      worker.start();
      await waitFor(() => lines.length > 0, 'the warning');
      expect(lines[0]!.msg).toMatch(/task obs.batch declares batch.maxSize 50, but concurrency and the limits let a call hold 10 tasks at most/);
      const quiet: unknown[] = [];
      const small = defineTask({ type: 'obs.batch', batch: { maxSize: 10, maxWaitMs: 10 }, executeBatch: () => undefined });
      const fits = newWorker([small], {
        logger: pino({ level: 'warn' }, { write: (line: string) => void quiet.push(line) }),
        concurrency: 10,
        typeConcurrency: 10,
      });
      fits.start();
      await fits.stop();
      expect(quiet).toEqual([]);
    });

    it('a heartbeat that cannot reach the database counts each held lease as a failed renewal', async () => {
      const held = defineTask({ type: 'obs.unreachable', execute: (ctx) => untilAborted(ctx.signal) });
      const registry = new Registry();
      const metrics = createMetrics({ registry });
      const client = createClient({ store, tasks: [held] });
      const worker = newWorker([held], { concurrency: 2, leaseMs: 1000 });
      metrics.attachWorker(worker);
      const started = worker.waitFor('started');
      worker.start();
      await client.submitMany([
        { type: held.type, payload: {} },
        { type: held.type, payload: {} },
      ]);
      await started;
      await waitFor(() => worker.stats().active === 2, 'both tasks to run');
      const failedBeat = worker.waitFor('error', (e) => e.operation === 'renewLeases');
      // Lost once unreachable for longer than the lease: nothing more is written, so stop() has nothing to flush.
      const lost: string[] = [];
      worker.on('leaseLost', (e) => lost.push(e.reason));
      await store.close();
      await failedBeat;
      expect(await value(registry, 'async_task_lease_renewal_failures_total')).toBeGreaterThanOrEqual(2);
      await waitFor(() => lost.length === 2, 'both leases to be given up', SETTLE_MS);
      expect(lost).toEqual(['unreachable', 'unreachable']);
      expect(await value(registry, 'async_task_lease_lost_total', { reason: 'unreachable' })).toBe(2);
      await waitFor(() => worker.stats().active === 0, 'the aborted handlers to settle');
      await worker.stop();
      const renewals = await value(registry, 'async_task_lease_renewal_total');
      const successes = await value(registry, 'async_task_lease_renewal_success_total');
      const failures = await value(registry, 'async_task_lease_renewal_failures_total');
      expect(renewals).toBe(successes + failures);
      // Every renewal happened within the gauge's 5-minute window: it is the counters' ratio, below 1.
      expect(await value(registry, 'async_task_lease_renewal_success_rate')).toBeCloseTo(successes / renewals, 10);
      expect(await value(registry, 'async_task_lease_renewal_success_rate')).toBeLessThan(1);
      // Each lost execution is still one execution-time observation.
      expect(await value(registry, 'async_task_execution_seconds', { task_type: held.type }, 'async_task_execution_seconds_count')).toBe(2);
    });

    it('control-plane health: UP, DEGRADED over the backlog threshold, DOWN on a schema mismatch or a closed store', async () => {
      const t = defineTask({ type: 'obs.idle', execute: () => undefined });
      const client = createClient({ store, tasks: [t] });
      const up = await controlPlaneHealth(store);
      expect(up).toMatchObject({ status: 'UP', details: { queued: 0, running: 0, schemaVersion: store.expectedSchemaVersion, backlogThreshold: 1000 } });
      expect(up.error).toBeUndefined();

      await client.submitMany([
        { type: t.type, payload: {} },
        { type: t.type, payload: {} },
        { type: t.type, payload: {} },
      ]);
      expect(await controlPlaneHealth(store, { backlogThreshold: 3 })).toMatchObject({ status: 'UP', details: { queued: 3, total: 3 } });
      const degraded = await controlPlaneHealth(store, { backlogThreshold: 2 });
      expect(degraded).toMatchObject({ status: 'DEGRADED', details: { queued: 3 } });
      expect(degraded.error).toMatch(/3 tasks queued, above the threshold of 2/);

      // This code expecting a newer schema than the database has: not a mock, the real store answers.
      const newerCode = Object.create(store, { expectedSchemaVersion: { value: store.expectedSchemaVersion + 1 } }) as Store;
      const behind = await controlPlaneHealth(newerCode);
      expect(behind.status).toBe('DOWN');
      expect(behind.error).toMatch(/schema version \d+ is behind .*run store\.migrate\(\)/);
      const olderCode = Object.create(store, { expectedSchemaVersion: { value: store.expectedSchemaVersion - 1 } }) as Store;
      expect((await controlPlaneHealth(olderCode)).error).toMatch(/newer than this code expects/);

      await store.close();
      const down = await controlPlaneHealth(store);
      expect(down.status).toBe('DOWN');
      expect(down.error).toMatch(/^database unreachable: /);
      await expect(controlPlaneHealth(store, { backlogThreshold: -1 })).rejects.toThrow(/backlogThreshold/);
    });
  });
}
