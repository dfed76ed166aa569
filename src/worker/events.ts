/**
 * What a worker tells its observers. Metrics, logs and tests subscribe here;
 * none of them needs to touch the worker itself.
 */
import type { FailureRecord, Task, TaskProgress } from '../core/task.js';
import type { RecoveryResult } from '../store/types.js';

export interface WorkerEvents {
  /** Leases were taken (buffered or started). */
  claimed: { workerId: string; count: number };
  /** A handler begins; queueWaitMs is from submit (create time) to now. */
  started: { task: Task; queueWaitMs: number };
  progress: { task: Task; progress: TaskProgress };
  completed: { task: Task; status: 'SUCCESS' | 'PARTIAL_SUCCESS'; durationMs: number };
  /** Every failed attempt, retried or not. */
  failed: { task: Task; failure: FailureRecord; durationMs: number; willRetry: boolean };
  retryScheduled: { task: Task; failure: FailureRecord; retryDelayMs: number };
  deadLettered: { task: Task; failure: FailureRecord };
  cancelled: { task: Task; durationMs: number };
  timedOut: { task: Task; durationMs: number };
  /** The worker's lease on a task is gone; its handler was aborted and its writes change nothing. */
  leaseLost: { task: Task; reason: 'renewal' | 'write' | 'unreachable' };
  /** Given back for another worker (stop): `started` false for prefetched tasks never run. */
  released: { task: Task; started: boolean };
  slow: { task: Task; durationMs: number; thresholdMs: number };
  recoveryBatch: { result: RecoveryResult };
  heartbeat: { renewed: number; cancelRequested: number; lost: number };
  /** An operation against the store failed; the worker carries on and retries. */
  error: { operation: string; error: unknown };
  stopped: { workerId: string };
}
