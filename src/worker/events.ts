/**
 * What a worker tells its observers. Metrics, logs and tests subscribe here;
 * none of them needs to touch the worker itself.
 */
import type { FailureRecord, Task, TaskProgress } from '../core/task.js';
import type { AttemptOutcome, RecoveryResult } from '../store/types.js';
import type { TaskLogLevel } from '../core/logs.js';

/**
 * Why a lease is gone: the store said so on renewal or on a fenced write, or
 * the worker could not confirm it in time (its local lease deadline passed:
 * a hung or unreachable database must not leave a handler running past a
 * lease another worker may hold by now), or this worker claimed the task
 * again (`reclaimed`: a newer attempt, so the sweep took this one's lease
 * while the worker could not see it, e.g. frozen).
 */
export type LeaseLossReason = 'renewal' | 'write' | 'unreachable' | 'reclaimed';

export interface WorkerEvents {
  /** Leases were taken (buffered or started). */
  claimed: { workerId: string; count: number };
  /** A handler begins; queueWaitMs is from submit (create time) to now. */
  started: { task: Task; queueWaitMs: number };
  progress: { task: Task; progress: TaskProgress };
  /** ctx.step: a durable step was recorded (`replayed` false: fn ran) or its stored result handed back (`replayed` true: fn did not run). */
  step: { task: Task; name: string; replayed: boolean };
  /** ctx.log: a handler logged a line (message bounded, fields redacted: as stored); attachLogger writes it to the process log. */
  logged: { task: Task; level: TaskLogLevel; message: string; fields: Record<string, unknown> | undefined };
  completed: { task: Task; status: 'SUCCESS' | 'PARTIAL_SUCCESS'; durationMs: number };
  /** Every failed attempt, retried or not. */
  failed: { task: Task; failure: FailureRecord; durationMs: number; willRetry: boolean };
  retryScheduled: { task: Task; failure: FailureRecord; retryDelayMs: number };
  /** The handler returned TaskResult.snooze(delayMs): the task runs again then, no attempt spent. */
  snoozed: { task: Task; delayMs: number; durationMs: number };
  /** A handler fanned out (TaskResult.awaitChildren): the children it created; the task is BLOCKED until they have ended. */
  fannedOut: { task: Task; children: readonly Task[]; durationMs: number };
  /** A failure for good moved the task's payload to the dead-letter queue: `deadLetterId` replays it. */
  deadLettered: { task: Task; failure: FailureRecord; deadLetterId: string };
  cancelled: { task: Task; durationMs: number };
  timedOut: { task: Task; durationMs: number };
  /** The worker's lease on a task is gone; its handler was aborted and its writes change nothing. */
  leaseLost: { task: Task; reason: LeaseLossReason };
  /** Given back for another worker (stop): `started` false for prefetched tasks never run. */
  released: { task: Task; started: boolean };
  slow: { task: Task; durationMs: number; thresholdMs: number };
  /** A batch handler (executeBatch) was called with `size` tasks of `taskType` (each also has its own `started`). */
  batchStarted: { taskType: string; size: number };
  recoveryBatch: { result: RecoveryResult };
  /** This worker's scheduler claimed due ticks of a schedule (oldest first) and created these tasks. */
  scheduled: { scheduleKey: string; ticks: Date[]; tasks: Task[] };
  /** This worker's adaptive controller changed a type's limit (or resumed it after an override's end): the trail has the row. */
  limitChanged: { taskType: string; from: number; to: number; kind: 'decrease' | 'increase' | 'resume'; cause: string };
  /**
   * A heartbeat's renewal answered: `waitMs` it waited for a connection (the lease pool's queue; the local
   * lease deadline does not count it), `roundTripMs` it took from then.
   */
  heartbeat: { renewed: number; cancelRequested: number; lost: number; waitMs: number; roundTripMs: number };
  /**
   * A renewal took more than half the slack a lease leaves (lease − safety margin − heartbeat interval):
   * the worker is close to giving up live leases. Raise leaseMs or leasePoolSize, or lower concurrency.
   */
  leasesAtRisk: { waitMs: number; roundTripMs: number; slackMs: number };
  /** An operation against the store failed; the worker carries on and retries. */
  error: { operation: string; error: unknown };
  /** stop() was called: no more claims; `active` handlers get the grace period, `buffered` tasks are handed back. */
  stopping: { workerId: string; active: number; buffered: number };
  stopped: { workerId: string };
}

/** What the worker's services need of its emitter. */
export interface Announcer {
  emit<K extends keyof WorkerEvents>(name: K, event: WorkerEvents[K]): void;
  /** Whether anyone listens: the hot path builds an event only for a listener. */
  listening(name: keyof WorkerEvents): boolean;
  /** The store answered a heartbeat, claim or registration: it is reachable again. */
  storeAnswered(): void;
}

/** The events an outcome, once written, tells observers; `deadLetterId`: the dead letter the write made (null: none). */
export function announceOutcome(events: Announcer, task: Task, outcome: AttemptOutcome, durationMs: number, deadLetterId: string | null): void {
  switch (outcome.kind) {
    case 'SUCCESS':
    case 'PARTIAL_SUCCESS':
      // The common case, many thousand times a second: build the event only for a listener.
      if (events.listening('completed')) events.emit('completed', { task: { ...task, status: outcome.kind }, status: outcome.kind, durationMs });
      return;
    case 'RETRY':
      events.emit('failed', { task: { ...task, status: 'RETRY_WAIT' }, failure: outcome.failure, durationMs, willRetry: true });
      events.emit('retryScheduled', { task: { ...task, status: 'RETRY_WAIT' }, failure: outcome.failure, retryDelayMs: outcome.retryDelayMs });
      return;
    case 'FAILED': {
      const failedTask: Task = { ...task, status: 'FAILED', lastErrorCode: outcome.failure.errorCode };
      if (outcome.failure.errorCode === 'TIMEOUT') events.emit('timedOut', { task: failedTask, durationMs });
      events.emit('failed', { task: failedTask, failure: outcome.failure, durationMs, willRetry: false });
      // No dead letter: a cancel request arrived first and the store ended the task CANCELLED instead.
      if (deadLetterId !== null) events.emit('deadLettered', { task: failedTask, failure: outcome.failure, deadLetterId });
      return;
    }
    case 'CANCELLED':
      events.emit('cancelled', { task: { ...task, status: 'CANCELLED' }, durationMs });
      return;
    case 'RELEASED':
      events.emit('released', { task: { ...task, status: 'QUEUED' }, started: true });
      return;
    case 'SNOOZED':
      if (outcome.children) events.emit('fannedOut', { task: { ...task, status: 'BLOCKED' }, children: outcome.children, durationMs });
      else events.emit('snoozed', { task: { ...task, status: 'QUEUED' }, delayMs: outcome.delayMs, durationMs });
  }
}
