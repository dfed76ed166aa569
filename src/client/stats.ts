/**
 * stats(): one cluster-wide snapshot for dashboards, read from the database
 * (not from one process's counters): tasks by status, what runs against each
 * limit, the dead-letter queue, live workers and their capacity, and the
 * queue wait (p50/p99) of first attempts finished in the last minutes.
 * A dashboard polls it and draws per-minute rates from the differences of the
 * cumulative counts.
 */
import { GLOBAL_POLICY_KEY, typePolicyKey } from '../core/policy-keys.js';
import { Scope } from '../core/scope.js';
import type { TaskStatus } from '../core/status.js';
import type { Policy, Store } from '../store/types.js';
import { queueWaitMs } from './analyze.js';

export interface LimitUse {
  /** RUNNING + CANCEL_REQUESTED: what the limit counts. */
  running: number;
  /** The policy's maxConcurrency, else the workers' default. */
  limit: number;
  enabled: boolean;
}

export interface TypeStats extends LimitUse {
  taskType: string;
  /** QUEUED + RETRY_WAIT of the type. */
  backlog: number;
}

export interface ClusterStats {
  /** The database clock when read. */
  at: Date;
  counts: Record<TaskStatus, number>;
  /** QUEUED + RETRY_WAIT. */
  backlog: number;
  deadLetters: number;
  global: LimitUse;
  types: TypeStats[];
  workers: { live: number; concurrency: number };
  /** Submit → start of first attempts started within `queueWaitWindowMs` and finished; null when none. */
  queueWait: { count: number; p50Ms: number; p99Ms: number } | null;
}

export interface StatsOptions {
  globalConcurrency: number;
  typeConcurrency: number;
  queueWaitWindowMs: number;
  workerSeenWithinMs: number;
}

export async function clusterStats(store: Store, options: StatsOptions): Promise<ClusterStats> {
  const global = Scope.global();
  const [at, counts, deadLetters, leased, policies, workers] = await Promise.all([
    store.now(),
    store.countByStatus({ scope: global }),
    store.countDeadLetters({ scope: global }),
    store.leasedCounts(),
    store.listPolicies(),
    store.listWorkers({ seenWithinMs: options.workerSeenWithinMs }),
  ]);
  const typeNames = [
    ...new Set([...workers.flatMap((w) => w.taskTypes), ...Object.keys(leased), ...policies.flatMap((p) => (p.taskType === null ? [] : [p.taskType]))]),
  ].sort();
  const since = new Date(at.getTime() - options.queueWaitWindowMs);
  const perType = await Promise.all(
    typeNames.map(async (taskType) => ({
      taskType,
      counts: await store.countByStatus({ scope: global, taskType }),
      waits: (await store.analysisData({ taskType, since, sampleLimit: 10_000 })).attempts.filter((a) => a.attempt === 1).map(queueWaitMs),
    })),
  );
  const policy = (key: string): Policy | undefined => policies.find((p) => p.policyKey === key);
  const use = (key: string, running: number, fallback: number): LimitUse => ({
    running,
    limit: policy(key)?.maxConcurrency ?? fallback,
    enabled: policy(key)?.enabled ?? true,
  });
  return {
    at,
    counts,
    deadLetters,
    backlog: counts.QUEUED + counts.RETRY_WAIT,
    global: use(
      GLOBAL_POLICY_KEY,
      Object.values(leased).reduce((sum, n) => sum + n, 0),
      options.globalConcurrency,
    ),
    types: perType.map(({ taskType, counts: c }) => ({
      taskType,
      backlog: c.QUEUED + c.RETRY_WAIT,
      ...use(typePolicyKey(taskType), leased[taskType] ?? 0, options.typeConcurrency),
    })),
    workers: { live: workers.length, concurrency: workers.reduce((sum, w) => sum + w.concurrency, 0) },
    queueWait: percentiles(perType.flatMap((t) => t.waits)),
  };
}

/** Nearest-rank p50 and p99. */
function percentiles(values: number[]): ClusterStats['queueWait'] {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
  return { count: sorted.length, p50Ms: Math.max(0, rank(0.5)), p99Ms: Math.max(0, rank(0.99)) };
}
