/**
 * The metric definitions, names and help texts in one place. Names are the
 * seed's (article 2) and fixed: its PromQL, alerts and dashboards read them.
 * Gauges are read at scrape time (gauges.ts); counters and histograms are fed
 * from events (metrics.ts).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { defineGauges, type GaugeSources } from './gauges.js';

/** 5 ms … 1 h: sub-second handlers and the seed's 60 s queue-wait alert both land inside. */
export const DEFAULT_SECONDS_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export const COMPLETED_STATUSES = ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'] as const;

/**
 * The task_type value of what the recovery sweep finishes: its result counts
 * rows without their types. Prometheus drops an empty label, so these series
 * simply carry no task_type; every sum over types still includes them.
 */
export const UNKNOWN_TYPE = '';

export interface MetricSet {
  queueWait: Histogram;
  execution: Histogram<'task_type'>;
  leaseDuration: Histogram<'task_type'>;
  submitted: Counter<'task_type'>;
  eventsPublished: Counter<'event'>;
  eventTasks: Counter<'event'>;
  completed: Counter<'status' | 'task_type'>;
  failures: Counter<'task_type' | 'error_code'>;
  retries: Counter<'task_type'>;
  snoozed: Counter<'task_type'>;
  fanOuts: Counter<'task_type'>;
  flowNodes: Counter<'task_type'>;
  stepsRecorded: Counter<'task_type'>;
  stepsReplayed: Counter<'task_type'>;
  deadLettered: Counter<'task_type' | 'error_code'>;
  timeouts: Counter;
  renewals: Counter;
  renewalSuccesses: Counter;
  renewalFailures: Counter;
  recovered: Counter;
  leasesLost: Counter<'reason'>;
  renewalWait: Histogram;
  batchSize: Histogram<'task_type'>;
  limitChanges: Counter<'task_type' | 'direction'>;
}

export interface MetricSources extends GaugeSources {
  queueWaitBuckets: readonly number[] | undefined;
  executionBuckets: readonly number[] | undefined;
}

export function defineMetricSet(registry: Registry, sources: MetricSources): MetricSet {
  const registers = [registry];
  const counter = <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    new Counter<L>({ name, help, labelNames, registers });
  const seconds = (name: string, help: string, buckets: readonly number[] | undefined): Histogram<'task_type'> =>
    new Histogram({ name, help, labelNames: ['task_type'], buckets: [...(buckets ?? DEFAULT_SECONDS_BUCKETS)], registers });

  defineGauges(registry, sources);

  const completed = counter(
    'async_task_completed_total',
    'Tasks that reached a terminal status through this process (worker outcomes and recovery sweeps), by status and task type.',
    ['status', 'task_type'],
  );
  // Every status from the start, so rate() and the seed's failure-rate ratio exist before the first failure.
  for (const status of COMPLETED_STATUSES) completed.inc({ status, task_type: UNKNOWN_TYPE }, 0);

  return {
    queueWait: new Histogram({
      name: 'async_task_queue_wait_seconds',
      help: 'From submit (create time) to the start of each execution.',
      buckets: [...(sources.queueWaitBuckets ?? DEFAULT_SECONDS_BUCKETS)],
      registers,
    }),
    execution: seconds('async_task_execution_seconds', 'Duration of each execution (attempt), by task type.', sources.executionBuckets),
    leaseDuration: seconds(
      'async_task_lease_duration_seconds',
      "How long this process held each lease it ran: from the handler's start until the outcome was written, the task handed back or the lease lost.",
      sources.executionBuckets,
    ),
    submitted: counter('async_task_submitted_total', 'Tasks created by attached clients, by type (idempotent repeats excluded).', ['task_type']),
    // The event label is an event some type subscribes to (operators bound them, in the subscription table);
    // a publish nobody subscribes to counts under event="" — callers cannot mint series with made-up names.
    eventsPublished: counter(
      'async_task_events_published_total',
      'Publishes by attached clients, by event (event="": publishes of events no type subscribes to).',
      ['event'],
    ),
    eventTasks: counter('async_task_event_tasks_created_total', 'Tasks created by publishes of attached clients (idempotent repeats excluded), by event.', [
      'event',
    ]),
    completed,
    failures: counter('async_task_failures_total', 'Failed attempts (retried or not), by task type and error code.', ['task_type', 'error_code']),
    retries: counter('async_task_retries_total', 'Failed attempts scheduled for a retry, by task type.', ['task_type']),
    snoozed: counter('async_task_snoozed_total', 'Attempts that asked to run again later (TaskResult.snooze), by task type.', ['task_type']),
    fanOuts: counter('async_task_fan_outs_total', 'Attempts that made children and wait for them (TaskResult.awaitChildren), by the waiting task’s type.', [
      'task_type',
    ]),
    flowNodes: counter(
      'async_task_flow_nodes_submitted_total',
      'Tasks created in a flow (submitFlow, dependsOn, a fan-out’s children), by type; also counted in async_task_submitted_total.',
      ['task_type'],
    ),
    stepsRecorded: counter('async_task_steps_recorded_total', 'Durable steps (ctx.step) whose fn ran and whose result was recorded, by task type.', [
      'task_type',
    ]),
    stepsReplayed: counter(
      'async_task_steps_replayed_total',
      'Durable steps (ctx.step) completed by an earlier attempt: their stored result was handed back, fn did not run; by task type.',
      ['task_type'],
    ),
    deadLettered: counter(
      'async_task_dead_letter_total',
      'Tasks moved to the dead-letter queue by this process (failed outcomes and recovery sweeps), by task type and error code.',
      ['task_type', 'error_code'],
    ),
    timeouts: counter('async_task_timeouts_total', 'Attempts aborted by their execution time limit or the task deadline.'),
    renewals: counter('async_task_lease_renewal_total', 'Lease renewals attempted by heartbeats.'),
    renewalSuccesses: counter('async_task_lease_renewal_success_total', 'Lease renewals that kept the lease (including those that found a cancel request).'),
    renewalFailures: counter('async_task_lease_renewal_failures_total', 'Lease renewals that found the lease gone, or whose statement failed.'),
    recovered: counter('async_task_lease_expired_recovered_total', 'Expired leases the recovery sweep took back (requeued or failed).'),
    leasesLost: counter(
      'async_task_lease_lost_total',
      'Leases this process lost, by reason: renewal or write (the database had moved on), reclaimed (claimed again after a freeze), ' +
        'unreachable (given up here: no renewal confirmed before the local lease deadline).',
      ['reason'],
    ),
    renewalWait: new Histogram({
      name: 'async_task_lease_renewal_wait_seconds',
      help: "How long each heartbeat's renewal waited for a connection of the lease pool before it was sent (the pool's queue).",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    batchSize: new Histogram({
      name: 'async_task_batch_size',
      help: 'Tasks per call of a batch handler (executeBatch), by task type.',
      labelNames: ['task_type'],
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10_000],
      registers,
    }),
    limitChanges: counter(
      'async_task_limit_changes_total',
      "Changes of adaptive limits made through this process (its workers' steps, its clients' operator actions), by task type and direction: decrease, increase (the controller), override, resume, set, off.",
      ['task_type', 'direction'],
    ),
  };
}
