/**
 * analyze(type, hours): seed article 2's analyze-performance.sh as an API —
 * counts by status, execution duration and queue wait (avg, min, max, p95),
 * and the top failure codes with their share.
 */
import { ValidationError } from '../core/errors.js';
import type { TaskStatus } from '../core/status.js';
import type { AnalysisData, Store } from '../store/types.js';

export interface DurationStats {
  count: number;
  avgMs: number;
  minMs: number;
  maxMs: number;
  /** Nearest-rank 95th percentile. */
  p95Ms: number;
}

export interface Analysis {
  taskType: string;
  since: Date;
  statusCounts: Record<TaskStatus, number>;
  /** Finished attempts started in the window: started → finished. */
  execution: DurationStats | null;
  /** First attempts started in the window: due (available_at, or the submit) → started (queueWaitMs). */
  queueWait: DurationStats | null;
  /** Top 10 failure codes in the window; share is of all failures in the window (0–1). */
  failures: { errorCode: string; count: number; share: number }[];
  /** The oldest task of the type that is due and waits to be claimed (any age, not only the window's), and how long it has waited. */
  oldestWaiting: { since: Date; ageMs: number } | null;
}

export async function analyze(store: Store, taskType: string, hours: number, sampleLimit = 100_000): Promise<Analysis> {
  if (typeof hours !== 'number' || !Number.isFinite(hours) || hours <= 0 || hours > 24 * 366) {
    throw new ValidationError(`hours must be a number above 0 and at most ${24 * 366}, got ${String(hours)}`, 'hours');
  }
  const now = await store.now();
  const since = new Date(now.getTime() - hours * 3600_000);
  const data = await store.analysisData({ taskType, since, sampleLimit });
  const executions = data.attempts.map((a) => a.finishedAt.getTime() - a.startedAt.getTime());
  const waits = data.attempts.filter((a) => a.attempt === 1).map(queueWaitMs);
  const totalFailures = data.failureCounts.reduce((sum, f) => sum + f.count, 0);
  return {
    taskType,
    since,
    statusCounts: data.statusCounts,
    execution: stats(executions),
    queueWait: stats(waits),
    failures: data.failureCounts.slice(0, 10).map((f) => ({ ...f, share: totalFailures === 0 ? 0 : f.count / totalFailures })),
    oldestWaiting: data.oldestWaitingSince && { since: data.oldestWaitingSince, ageMs: Math.max(0, now.getTime() - data.oldestWaitingSince.getTime()) },
  };
}

/**
 * How long a first attempt waited to be claimed: from when the task became
 * due, not from its submit — a task delayed on purpose (delayMs, availableAt)
 * was not waiting meanwhile. available_at is the task's now: when a retry or
 * snooze has moved it past this attempt's start, the submit is all we know.
 */
export function queueWaitMs(attempt: AnalysisData['attempts'][number]): number {
  const due =
    attempt.taskAvailableAt.getTime() <= attempt.startedAt.getTime()
      ? Math.max(attempt.taskAvailableAt.getTime(), attempt.taskCreatedAt.getTime())
      : attempt.taskCreatedAt.getTime();
  return Math.max(0, attempt.startedAt.getTime() - due);
}

export function stats(values: number[]): DurationStats | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return {
    count: sorted.length,
    avgMs: sorted.reduce((sum, v) => sum + v, 0) / sorted.length,
    minMs: sorted[0]!,
    maxMs: sorted[sorted.length - 1]!,
    p95Ms: sorted[Math.max(0, Math.ceil(0.95 * sorted.length) - 1)]!,
  };
}
