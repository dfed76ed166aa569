/**
 * Prometheus metrics under the seed's names (article 2, 监控体系), so its
 * queries, alert rules and Grafana panels work unchanged. Fed only from the
 * worker's and the client's events, plus gauges read at scrape time from
 * worker stats and the store; nothing here reaches into the worker.
 *
 * Label values are bounded: task types (registered definitions), error codes
 * (the classifier bounds them), the four terminal statuses, and event names
 * that some type subscribes to (the subscription table; others count as ""). Never task ids,
 * owners or trace ids: each would be a new time series per task.
 */
import { Registry } from 'prom-client';
import { InvalidOptionsError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { checkInteger, checkKnownKeys } from '../core/validate.js';
import type { TaskLeaseClient } from '../client/client.js';
import { RATE_SCOPE_KINDS, rateUsage, type RateUsage } from '../client/rates.js';
import type { Store } from '../store/types.js';
import type { Worker } from '../worker/worker.js';
import { hasPoolStats, type PoolStats } from '../store/pool-stats.js';
import { defineMetricSet, type MetricSet } from './metric-set.js';
import { RenewalWindow } from './renewal-window.js';
import { subscribeWorker } from './worker-metrics.js';
import { adaptiveStoreOf } from '../store/adaptive.js';

/** The event label of a publish no type subscribes to: its name would be any caller's. */
const UNSUBSCRIBED_EVENT = '';

export { DEFAULT_SECONDS_BUCKETS } from './metric-set.js';

export interface MetricsOptions {
  /** Where the metrics are registered. Default: a new Registry (pass prom-client's `register` to share the global one). */
  registry?: Registry;
  /** Buckets (seconds) of async_task_queue_wait_seconds. Default DEFAULT_SECONDS_BUCKETS (5 ms … 1 h). */
  queueWaitBuckets?: readonly number[];
  /** Buckets (seconds) of async_task_execution_seconds. Default DEFAULT_SECONDS_BUCKETS. */
  executionBuckets?: readonly number[];
  /** Window (ms) of async_task_lease_renewal_success_rate. Default 300000 (the seed's [5m]). */
  renewalRateWindowMs?: number;
}

const DEFAULT_RENEWAL_WINDOW_MS = 300_000;

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
  /** Reads the dead-letter queue size (and the connection pool's counts, PostgreSQL and MySQL) from the store at every scrape. Returns detach. */
  attachStore(store: Store, options?: StoreMetricsOptions): () => void;
}

// One metric set per registry: a second createMetrics on the same registry
// (several workers, several modules) returns the first instead of throwing
// prom-client's "already registered" (its bucket options are then ignored).
const byRegistry = new WeakMap<Registry, TaskleaseMetrics>();

export function createMetrics(options: MetricsOptions = {}): TaskleaseMetrics {
  checkKnownKeys('Metrics', options, ['registry', 'queueWaitBuckets', 'executionBuckets', 'renewalRateWindowMs']);
  if (options.renewalRateWindowMs !== undefined) checkInteger('Metrics', 'renewalRateWindowMs', options.renewalRateWindowMs, { min: 1000 });
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
  const ok =
    Array.isArray(buckets) &&
    buckets.length > 0 &&
    buckets.every((b, i) => typeof b === 'number' && Number.isFinite(b) && b > 0 && (i === 0 || b > buckets[i - 1]!));
  if (!ok) throw new InvalidOptionsError('Metrics', field, 'must be a non-empty, strictly increasing list of positive seconds');
}

class MetricsHub implements TaskleaseMetrics {
  private readonly m: MetricSet;
  private readonly workers = new Map<Worker, () => void>();
  private readonly stores = new Map<Store, Scope>();
  private readonly renewals: RenewalWindow;

  constructor(
    readonly registry: Registry,
    options: MetricsOptions,
  ) {
    this.renewals = new RenewalWindow(options.renewalRateWindowMs ?? DEFAULT_RENEWAL_WINDOW_MS);
    this.m = defineMetricSet(registry, {
      queueWaitBuckets: options.queueWaitBuckets,
      executionBuckets: options.executionBuckets,
      // A worker not started yet offers no slots; a stopped one has detached itself.
      workers: () => [...this.workers.keys()].map((w) => w.stats()).filter((s) => s.state !== 'idle'),
      deadLetters: () => this.countDeadLetters(),
      pools: () => this.poolStats(),
      renewalRate: () => this.renewals.rate(),
      wakeups: () => [...this.stores.keys()].flatMap((store) => wakeupState(store)),
      rates: () => this.rateUsage(),
      adaptiveLimits: () => this.adaptiveLimits(),
    });
  }

  attachWorker(worker: Worker): () => void {
    const known = this.workers.get(worker);
    if (known) return known;
    const offs = subscribeWorker(worker, this.m, this.renewals);
    const detach = (): void => {
      for (const off of offs) off();
      if (this.workers.get(worker) === detach) this.workers.delete(worker);
    };
    offs.push(worker.on('stopped', () => detach()));
    this.workers.set(worker, detach);
    return detach;
  }

  attachClient(client: TaskLeaseClient): () => void {
    const offSubmitted = client.on('submitted', ({ tasks }) => {
      const perType = new Map<string, number>();
      for (const task of tasks) perType.set(task.taskType, (perType.get(task.taskType) ?? 0) + 1);
      for (const [type, count] of perType) this.m.submitted.inc({ task_type: type }, count);
      for (const task of tasks) if (task.flowId !== null) this.m.flowNodes.inc({ task_type: task.taskType });
    });
    const offPublished = client.on('published', ({ event, subscribed, created }) => {
      const label = { event: subscribed ? event : UNSUBSCRIBED_EVENT };
      this.m.eventsPublished.inc(label);
      if (created.length > 0) this.m.eventTasks.inc(label, created.length);
    });
    const offLimits = client.on('limitChanged', ({ taskType, kind }) => this.m.limitChanges.inc({ task_type: taskType, direction: kind }));
    return () => {
      offSubmitted();
      offPublished();
      offLimits();
    };
  }

  attachStore(store: Store, options: StoreMetricsOptions = {}): () => void {
    checkKnownKeys('Metrics.attachStore', options, ['scope']);
    this.stores.set(store, options.scope ?? Scope.global());
    return () => void this.stores.delete(store);
  }

  private poolStats(): { dialect: Store['dialect']; stats: PoolStats }[] {
    const pools: { dialect: Store['dialect']; stats: PoolStats }[] = [];
    for (const store of this.stores.keys()) {
      const stats = hasPoolStats(store) ? store.poolStats() : null;
      if (stats) pools.push({ dialect: store.dialect, stats });
    }
    return pools;
  }

  /**
   * Sum over attached stores; null when one fails (the gauge keeps its last
   * value: a scrape must not fail because the database does, and the
   * control-plane health check is where an outage shows).
   */
  private async rateUsage(): Promise<RateUsage | null> {
    const usages = await Promise.all([...this.stores.keys()].map((store) => withinScrape(rateUsage(store)).catch(() => undefined)));
    const sum: RateUsage = { spent: { global: 0, type: 0, owner: 0, key: 0 }, starts: { global: 0, type: 0, owner: 0, key: 0 } };
    for (const usage of usages) {
      if (!usage) continue;
      for (const kind of RATE_SCOPE_KINDS) {
        sum.spent[kind] += usage.spent[kind];
        sum.starts[kind] += usage.starts[kind];
      }
    }
    return sum;
  }

  /** The limit in force of every adaptive type of the attached stores; null when a read fails or is late (the gauge keeps its values). */
  private async adaptiveLimits(): Promise<{ taskType: string; limit: number }[] | null> {
    const read = async (store: Store) => (await adaptiveStoreOf(store)).listAdaptive();
    const lists = await Promise.all([...this.stores.keys()].map((store) => withinScrape(read(store)).catch(() => null)));
    if (lists.some((list) => list === null)) return null;
    return lists.flatMap((list) => (list ?? []).filter((s) => s.enabled).map((s) => ({ taskType: s.taskType, limit: s.currentLimit })));
  }

  private async countDeadLetters(): Promise<number | null> {
    const counts = await Promise.all([...this.stores].map(([store, scope]) => withinScrape(store.countDeadLetters({ scope })).catch(() => null)));
    if (counts.some((c) => c === null)) return null;
    return counts.reduce<number>((sum, c) => sum + (c ?? 0), 0);
  }
}

/**
 * A scrape must answer even when the pool is exhausted (the moment the pool
 * gauges matter most): a count that waits longer than this is skipped.
 */
const SCRAPE_QUERY_TIMEOUT_MS = 2000;

function withinScrape<T>(query: Promise<T>): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), SCRAPE_QUERY_TIMEOUT_MS);
  });
  return Promise.race([query, late]).finally(() => clearTimeout(timer));
}

/** PostgresStore.wakeups, for stores that report it (others: none). */
function wakeupState(store: Store): string[] {
  const state = (store as { wakeups?: unknown }).wakeups;
  return typeof state === 'string' ? [state] : [];
}
