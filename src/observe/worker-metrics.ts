/**
 * A worker's events turned into counters and histograms. Label values are
 * bounded: task types (registered definitions), error codes (the classifier
 * bounds them) and the four terminal statuses.
 */
import type { Task } from '../core/task.js';
import type { Worker } from '../worker/worker.js';
import { COMPLETED_STATUSES, UNKNOWN_TYPE, type MetricSet } from './metric-set.js';
import type { RenewalWindow } from './renewal-window.js';

/** Executions we saw start and not yet end; bounded in case an end is never announced. */
const MAX_TRACKED = 10_000;

/** Subscribes; returns the unsubscribes. */
export function subscribeWorker(worker: Worker, m: MetricSet, renewals: RenewalWindow): (() => void)[] {
  // So that a type's failure-rate and success-rate series exist before its first outcome.
  for (const type of worker.taskTypes) for (const status of COMPLETED_STATUSES) m.completed.inc({ status, task_type: type }, 0);
  // Key per execution: the same task may come back to this worker on a later attempt.
  const running = new Map<string, number>();
  const keyOf = (task: Task): string => `${task.id}#${task.attemptCount}`;
  // Exactly one observation per execution that started here, whichever end event comes first.
  const ended = (task: Task, durationMs?: number): void => {
    const key = keyOf(task);
    const startedAt = running.get(key);
    if (startedAt === undefined) return;
    running.delete(key);
    // The worker's own clock started a moment before ours: the lease was held at least as long as the execution ran.
    const heldMs = Math.max(Date.now() - startedAt, durationMs ?? 0);
    m.execution.observe({ task_type: task.taskType }, (durationMs ?? heldMs) / 1000);
    m.leaseDuration.observe({ task_type: task.taskType }, heldMs / 1000);
  };
  const countRenewals = (attempted: number, succeeded: number): void => {
    m.renewals.inc(attempted);
    m.renewalSuccesses.inc(succeeded);
    m.renewalFailures.inc(attempted - succeeded);
    renewals.record(attempted, succeeded);
  };
  return [
    worker.on('started', ({ task, queueWaitMs }) => {
      if (running.size >= MAX_TRACKED) running.delete(running.keys().next().value!);
      running.set(keyOf(task), Date.now());
      m.queueWait.observe(queueWaitMs / 1000);
    }),
    worker.on('completed', ({ task, status, durationMs }) => {
      ended(task, durationMs);
      m.completed.inc({ status, task_type: task.taskType });
    }),
    worker.on('failed', ({ task, failure, durationMs, willRetry }) => {
      ended(task, durationMs);
      m.failures.inc({ task_type: task.taskType, error_code: failure.errorCode });
      // Only terminal failures: completed_total counts each task once, so the
      // seed's failure rate is a share of finished tasks and its backlog
      // query (submitted − completed) balances. Retried attempts: failures_total, retries_total.
      if (!willRetry) m.completed.inc({ status: 'FAILED', task_type: task.taskType });
    }),
    worker.on('step', ({ task, replayed }) => (replayed ? m.stepsReplayed : m.stepsRecorded).inc({ task_type: task.taskType })),
    worker.on('retryScheduled', ({ task }) => m.retries.inc({ task_type: task.taskType })),
    worker.on('snoozed', ({ task, durationMs }) => {
      ended(task, durationMs);
      m.snoozed.inc({ task_type: task.taskType });
    }),
    worker.on('fannedOut', ({ task, children, durationMs }) => {
      ended(task, durationMs);
      m.fanOuts.inc({ task_type: task.taskType });
      // The children are submitted by the worker, not by a client: counted here, so submitted − completed balances.
      for (const child of children) {
        m.submitted.inc({ task_type: child.taskType });
        m.flowNodes.inc({ task_type: child.taskType });
      }
    }),
    worker.on('deadLettered', ({ task, failure }) => m.deadLettered.inc({ task_type: task.taskType, error_code: failure.errorCode })),
    worker.on('timedOut', () => m.timeouts.inc()),
    worker.on('limitChanged', ({ taskType, kind }) => m.limitChanges.inc({ task_type: taskType, direction: kind })),
    worker.on('cancelled', ({ task, durationMs }) => {
      ended(task, durationMs); // a prefetched task cancelled before it started is not an execution
      m.completed.inc({ status: 'CANCELLED', task_type: task.taskType });
    }),
    worker.on('leaseLost', ({ task, reason }) => {
      ended(task);
      m.leasesLost.inc({ reason });
    }),
    worker.on('released', ({ task, started }) => {
      if (started) ended(task);
    }),
    worker.on('batchStarted', ({ taskType, size }) => m.batchSize.observe({ task_type: taskType }, size)),
    worker.on('heartbeat', ({ renewed, cancelRequested, lost, waitMs }) => {
      countRenewals(renewed + cancelRequested + lost, renewed + cancelRequested);
      m.renewalWait.observe(waitMs / 1000);
    }),
    worker.on('error', ({ operation }) => {
      if (operation !== 'renewLeases') return;
      // The event does not say how many leases the failed statement carried:
      // count every lease the worker holds (running + prefetched), at least one.
      const stats = worker.stats();
      countRenewals(Math.max(1, stats.active + stats.buffered), 0);
    }),
    worker.on('recoveryBatch', ({ result }) => {
      m.recovered.inc(result.requeued + result.failed);
      // The sweep finishes tasks too; each row is changed by exactly one sweep, so no double count.
      // Its result has counts, not types: these series carry no task_type.
      const unknown = { task_type: UNKNOWN_TYPE };
      m.completed.inc({ ...unknown, status: 'FAILED' }, result.failed + result.deadlineExpired);
      m.completed.inc({ ...unknown, status: 'CANCELLED' }, result.cancelled);
      m.deadLettered.inc({ ...unknown, error_code: 'LEASE_EXPIRED' }, result.failed);
      m.deadLettered.inc({ ...unknown, error_code: 'DEADLINE_EXCEEDED' }, result.deadlineExpired);
    }),
    worker.on('stopped', () => running.clear()),
  ];
}
