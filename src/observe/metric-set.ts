/**
 * The metric definitions, names and help texts in one place. Names are the
 * seed's (article 2) and fixed: its PromQL, alerts and dashboards read them.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { WorkerStats } from '../worker/worker.js';

/** 5 ms … 1 h: sub-second handlers and the seed's 60 s queue-wait alert both land inside. */
export const DEFAULT_SECONDS_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];

export const COMPLETED_STATUSES = ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'] as const;

export interface MetricSet {
  queueWait: Histogram;
  execution: Histogram<'task_type'>;
  submitted: Counter<'task_type'>;
  completed: Counter<'status'>;
  failures: Counter<'task_type' | 'error_code'>;
  retries: Counter;
  timeouts: Counter;
  renewals: Counter;
  renewalSuccesses: Counter;
  renewalFailures: Counter;
  recovered: Counter;
}

export interface MetricSources {
  queueWaitBuckets: readonly number[] | undefined;
  executionBuckets: readonly number[] | undefined;
  /** Stats of the workers attached now (read at scrape time). */
  workers: () => WorkerStats[];
  /** Dead letters waiting; null keeps the last value. */
  deadLetters: () => Promise<number | null>;
}

export function defineMetricSet(registry: Registry, sources: MetricSources): MetricSet {
  const registers = [registry];
  const counter = <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    new Counter<L>({ name, help, labelNames, registers });

  // Read from the workers at scrape time rather than counted from events:
  // always right, even for a worker attached mid-run or one that lost a lease.
  new Gauge({
    name: 'async_task_active_count', help: 'Handlers running now in this process (attached workers).', registers,
    collect() {
      this.set(sources.workers().reduce((sum, s) => sum + s.active, 0));
    },
  });
  new Gauge({
    name: 'async_task_local_max_concurrency', help: 'Handler slots in this process (sum of attached workers\' concurrency).', registers,
    collect() {
      this.set(sources.workers().reduce((sum, s) => sum + s.concurrency, 0));
    },
  });
  new Gauge({
    name: 'async_task_dead_letter_queue_size', help: 'Dead letters neither replayed nor archived (attached stores).', registers,
    async collect() {
      const size = await sources.deadLetters();
      if (size !== null) this.set(size);
    },
  });

  const completed = counter('async_task_completed_total',
    'Tasks that reached a terminal status through this process (worker outcomes and recovery sweeps), by status.', ['status']);
  // Every status from the start, so rate() and the seed's failure-rate ratio exist before the first failure.
  for (const status of COMPLETED_STATUSES) completed.inc({ status }, 0);

  return {
    queueWait: new Histogram({
      name: 'async_task_queue_wait_seconds', help: 'From submit (create time) to the start of each execution.',
      buckets: [...(sources.queueWaitBuckets ?? DEFAULT_SECONDS_BUCKETS)], registers,
    }),
    execution: new Histogram({
      name: 'async_task_execution_seconds', help: 'Duration of each execution (attempt), by task type.',
      labelNames: ['task_type'], buckets: [...(sources.executionBuckets ?? DEFAULT_SECONDS_BUCKETS)], registers,
    }),
    submitted: counter('async_task_submitted_total', 'Tasks created by attached clients, by type (idempotent repeats excluded).', ['task_type']),
    completed,
    failures: counter('async_task_failures_total', 'Failed attempts (retried or not), by task type and error code.', ['task_type', 'error_code']),
    retries: counter('async_task_retries_total', 'Failed attempts scheduled for a retry.'),
    timeouts: counter('async_task_timeouts_total', 'Attempts aborted by their execution time limit or the task deadline.'),
    renewals: counter('async_task_lease_renewal_total', 'Lease renewals attempted by heartbeats.'),
    renewalSuccesses: counter('async_task_lease_renewal_success_total', 'Lease renewals that kept the lease (including those that found a cancel request).'),
    renewalFailures: counter('async_task_lease_renewal_failures_total', 'Lease renewals that found the lease gone, or whose statement failed.'),
    recovered: counter('async_task_lease_expired_recovered_total', 'Expired leases the recovery sweep took back (requeued or failed).'),
  };
}
