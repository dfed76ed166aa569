/**
 * Prometheus metrics under the seed's names (article 2, 监控体系), so its
 * queries, alert rules and Grafana panels work unchanged. Fed only from the
 * worker's and the client's events, plus gauges read at scrape time from
 * worker stats and the store; nothing here reaches into the worker.
 *
 * Label values are bounded: task types (registered definitions), error codes
 * (the classifier bounds them) and the four terminal statuses. Never task ids,
 * owners or trace ids: each would be a new time series per task.
 */
import { Registry } from 'prom-client';
import { InvalidOptionsError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import type { Task } from '../core/task.js';
import { checkKnownKeys } from '../core/validate.js';
import type { TaskLeaseClient } from '../client/client.js';
import type { Store } from '../store/types.js';
import type { Worker } from '../worker/worker.js';
import { defineMetricSet, type MetricSet } from './metric-set.js';

export { DEFAULT_SECONDS_BUCKETS } from './metric-set.js';

export interface MetricsOptions {
  /** Where the metrics are registered. Default: a new Registry (pass prom-client's `register` to share the global one). */
  registry?: Registry;
  /** Buckets (seconds) of async_task_queue_wait_seconds. Default DEFAULT_SECONDS_BUCKETS (5 ms … 1 h). */
  queueWaitBuckets?: readonly number[];
  /** Buckets (seconds) of async_task_execution_seconds. Default DEFAULT_SECONDS_BUCKETS. */
  executionBuckets?: readonly number[];
}

export interface StoreMetricsOptions {
  /** Whose dead letters async_task_dead_letter_queue_size counts. Default global. */
  scope?: Scope;
}

export interface TaskleaseMetrics {
  readonly registry: Registry;
  /** Subscribes to a worker's events; its gauges count while it runs. Detaches by itself when the worker stops. Returns detach. */
  attachWorker(worker: Worker): () => void;
  /** Counts the client's submits (async_task_submitted_total). Returns detach. */
  attachClient(client: TaskLeaseClient): () => void;
  /** Reads the dead-letter queue size from the store at every scrape. Returns detach. */
  attachStore(store: Store, options?: StoreMetricsOptions): () => void;
}

// One metric set per registry: a second createMetrics on the same registry
// (several workers, several modules) returns the first instead of throwing
// prom-client's "already registered" (its bucket options are then ignored).
const byRegistry = new WeakMap<Registry, TaskleaseMetrics>();

export function createMetrics(options: MetricsOptions = {}): TaskleaseMetrics {
  checkKnownKeys('Metrics', options, ['registry', 'queueWaitBuckets', 'executionBuckets']);
  if (options.registry !== undefined && !(options.registry instanceof Registry)) {
    throw new InvalidOptionsError('Metrics', 'registry', 'must be a prom-client Registry');
  }
  for (const field of ['queueWaitBuckets', 'executionBuckets'] as const) checkBuckets(field, options[field]);
  const registry = options.registry ?? new Registry();
  const existing = byRegistry.get(registry);
  if (existing) return existing;
  const metrics = new MetricsHub(registry, options);
  byRegistry.set(registry, metrics);
  return metrics;
}

function checkBuckets(field: string, buckets: readonly number[] | undefined): void {
  if (buckets === undefined) return;
  const ok = Array.isArray(buckets) && buckets.length > 0
    && buckets.every((b, i) => typeof b === 'number' && Number.isFinite(b) && b > 0 && (i === 0 || b > buckets[i - 1]!));
  if (!ok) throw new InvalidOptionsError('Metrics', field, 'must be a non-empty, strictly increasing list of positive seconds');
}

/** Executions we saw start and not yet end; bounded in case an end is never announced. */
const MAX_TRACKED = 10_000;

class MetricsHub implements TaskleaseMetrics {
  private readonly m: MetricSet;
  private readonly workers = new Map<Worker, () => void>();
  private readonly stores = new Map<Store, Scope>();

  constructor(readonly registry: Registry, options: MetricsOptions) {
    this.m = defineMetricSet(registry, {
      queueWaitBuckets: options.queueWaitBuckets, executionBuckets: options.executionBuckets,
      // A worker not started yet offers no slots; a stopped one has detached itself.
      workers: () => [...this.workers.keys()].map((w) => w.stats()).filter((s) => s.state !== 'idle'),
      deadLetters: () => this.countDeadLetters(),
    });
  }

  attachWorker(worker: Worker): () => void {
    const known = this.workers.get(worker);
    if (known) return known;
    const m = this.m;
    // Key per execution: the same task may come back to this worker on a later attempt.
    const running = new Map<string, number>();
    const keyOf = (task: Task): string => `${task.id}#${task.attemptCount}`;
    // Exactly one observation per execution that started here, whichever end event comes first.
    const ended = (task: Task, durationMs?: number): void => {
      const key = keyOf(task);
      const startedAt = running.get(key);
      if (startedAt === undefined) return;
      running.delete(key);
      m.execution.observe({ task_type: task.taskType }, (durationMs ?? Date.now() - startedAt) / 1000);
    };
    const offs = [
      worker.on('started', ({ task, queueWaitMs }) => {
        if (running.size >= MAX_TRACKED) running.delete(running.keys().next().value!);
        running.set(keyOf(task), Date.now());
        m.queueWait.observe(queueWaitMs / 1000);
      }),
      worker.on('completed', ({ task, status, durationMs }) => {
        ended(task, durationMs);
        m.completed.inc({ status });
      }),
      worker.on('failed', ({ task, failure, durationMs, willRetry }) => {
        ended(task, durationMs);
        m.failures.inc({ task_type: task.taskType, error_code: failure.errorCode });
        // Only terminal failures: completed_total counts each task once, so the
        // seed's failure rate is a share of finished tasks and its backlog
        // query (submitted − completed) balances. Retried attempts: failures_total, retries_total.
        if (!willRetry) m.completed.inc({ status: 'FAILED' });
      }),
      worker.on('retryScheduled', () => m.retries.inc()),
      worker.on('timedOut', () => m.timeouts.inc()),
      worker.on('cancelled', ({ task, durationMs }) => {
        ended(task, durationMs); // a prefetched task cancelled before it started is not an execution
        m.completed.inc({ status: 'CANCELLED' });
      }),
      worker.on('leaseLost', ({ task }) => ended(task)),
      worker.on('released', ({ task, started }) => {
        if (started) ended(task);
      }),
      worker.on('heartbeat', ({ renewed, cancelRequested, lost }) => {
        m.renewals.inc(renewed + cancelRequested + lost);
        m.renewalSuccesses.inc(renewed + cancelRequested);
        m.renewalFailures.inc(lost);
      }),
      worker.on('error', ({ operation }) => {
        if (operation !== 'renewLeases') return;
        // The event does not say how many leases the failed statement carried:
        // count every lease the worker holds (running + prefetched), at least one.
        const stats = worker.stats();
        const leases = Math.max(1, stats.active + stats.buffered);
        m.renewals.inc(leases);
        m.renewalFailures.inc(leases);
      }),
      worker.on('recoveryBatch', ({ result }) => {
        m.recovered.inc(result.requeued + result.failed);
        // The sweep finishes tasks too; each row is changed by exactly one sweep, so no double count.
        m.completed.inc({ status: 'FAILED' }, result.failed + result.deadlineExpired);
        m.completed.inc({ status: 'CANCELLED' }, result.cancelled);
      }),
      worker.on('stopped', () => detach()),
    ];
    const detach = (): void => {
      for (const off of offs) off();
      running.clear();
      if (this.workers.get(worker) === detach) this.workers.delete(worker);
    };
    this.workers.set(worker, detach);
    return detach;
  }

  attachClient(client: TaskLeaseClient): () => void {
    return client.on('submitted', ({ tasks }) => {
      const perType = new Map<string, number>();
      for (const task of tasks) perType.set(task.taskType, (perType.get(task.taskType) ?? 0) + 1);
      for (const [type, count] of perType) this.m.submitted.inc({ task_type: type }, count);
    });
  }

  attachStore(store: Store, options: StoreMetricsOptions = {}): () => void {
    checkKnownKeys('Metrics.attachStore', options, ['scope']);
    this.stores.set(store, options.scope ?? Scope.global());
    return () => void this.stores.delete(store);
  }

  /**
   * Sum over attached stores; null when one fails (the gauge keeps its last
   * value: a scrape must not fail because the database does, and the
   * control-plane health check is where an outage shows).
   */
  private async countDeadLetters(): Promise<number | null> {
    const counts = await Promise.all([...this.stores].map(([store, scope]) =>
      store.countDeadLetters({ scope }).catch(() => null)));
    if (counts.some((c) => c === null)) return null;
    return counts.reduce<number>((sum, c) => sum + (c ?? 0), 0);
  }
}
