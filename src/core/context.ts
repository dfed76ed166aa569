/** What a handler sees of its execution (the worker's ExecutionContext implements it). */
import type { TaskResult } from './result.js';
import type { Task, TaskProgress } from './task.js';
import type { TaskStatus } from './status.js';
import type { TaskLogger } from './logs.js';

/** A task at the other end of a dependency edge, as a handler reads it. */
export interface RelatedTask {
  taskId: string;
  taskType: string;
  status: TaskStatus;
  /** Its result (null until it succeeded, or when it returned none). */
  result: unknown;
  /** Its last error code (a failed parent under CONTINUE). */
  lastErrorCode: string | null;
}

export interface TaskContext {
  readonly taskId: string;
  readonly taskType: string;
  /** 1-based number of this attempt in the task's life. */
  readonly attempt: number;
  readonly owner: string | null;
  readonly traceId: string | null;
  /** The task row as claimed. */
  readonly task: Task;
  /** Fires on cancellation, timeout, lease loss and forced shutdown; its reason is a TaskAbortedError. */
  readonly signal: AbortSignal;
  /**
   * Per-task logs: a line persisted with this attempt (shown on the task page, by `tasklease logs <id>` and
   * GET /api/v1/tasks/:id/logs) and written to the process log (attachLogger). Buffered and written in batches with
   * the progress writes and at the attempt's end, fenced by the lease. Bounded: a message of at most the worker's
   * maxLogMessageBytes (4 KiB), fields of at most maxLogFieldsBytes as JSON (8 KiB), the newest
   * maxLogLinesPerAttempt (200) lines of an attempt and maxLogLinesPerTask (1,000) of a task (a marker line says
   * how many older ones were dropped). Fields named like secrets (password, token, authorization, …, and the
   * worker's logRedactKeys) or `payload` are stored as "[REDACTED]"; an Error keeps its name only.
   */
  readonly log: TaskLogger;
  /** Records progress; written at most every flush interval or count threshold, and once more at the end. */
  reportProgress(progress: Partial<TaskProgress>): void;
  /** Throws the abort reason if the signal fired or a cancellation was requested (asks the store at most once per interval). */
  checkCancellation(): Promise<void>;
  /** Throws at once if the signal fired; never asks the store. */
  throwIfAborted(): void;
  /**
   * Completes the attempt inside your own transaction (PostgreSQL: a pg client
   * inside BEGIN; MySQL: a mysql2 connection inside a transaction), so that
   * your writes and the task's SUCCESS commit or roll back together. Call it
   * last, just before COMMIT: the task row stays locked until you commit.
   * Throws a TaskAbortedError (code LEASE_LOST, CANCELLED, TIMEOUT…) when the
   * attempt may no longer succeed: roll back. If your transaction rolls back
   * anyway, it is as if you had not called it. On a store without
   * `capabilities.transactionalComplete` (SQLite) it throws UnsupportedError.
   */
  complete(transaction: unknown, result?: TaskResult): Promise<void>;
  /** The tasks this one waited for in its flow, with their results (one read). */
  parents(): Promise<RelatedTask[]>;
  /** The children this task's fan-outs made (TaskResult.awaitChildren), with their results: read them when it runs again. */
  children(): Promise<RelatedTask[]>;
  /**
   * A durable step: runs `fn` once per attempt cycle of the task. When a step
   * of this `name` was completed by an earlier attempt of this cycle (a retry,
   * a recovery after a crash or a lost lease, a hand-back), its stored result
   * comes back and `fn` does not run; else `fn` runs and its result is
   * recorded with the task, fenced by the lease (a worker that lost its lease
   * records nothing: this throws TaskAbortedError LEASE_LOST). The result
   * comes back as JSON gives it back (the same value on the attempt that ran
   * it and on every replay). An operator's retry of a FAILED task or a
   * dead-letter replay starts a new cycle: every step runs again.
   * Bounds: a name of 1–200 characters; a result of at most the worker's
   * maxStepResultBytes as JSON (default 1 MiB); at most maxStepsPerTask steps
   * (default 1,000). A breach throws StepError (STEP_NAME_INVALID,
   * STEP_RESULT_TOO_LARGE, STEP_RESULT_NOT_SERIALIZABLE, STEP_LIMIT_EXCEEDED),
   * which fails the task without a retry.
   */
  step<T>(name: string, fn: () => T | Promise<T>): Promise<Awaited<T>>;
  /**
   * This lease's fencing token for systems outside the task store: a whole
   * number that strictly grows with every lease of the task that handed one
   * out — across workers, retries, lease expiries, hand-backs, an operator's
   * retry and a dead letter's replay (it is the attempt number). Send it with
   * every write to another database, object store or API, and have that
   * side accept a write only with a fence greater than the last it accepted
   * (core/fence.ts; README "Fencing tokens for outside systems"): a zombie
   * attempt's late write is then refused there.
   * It resolves only after one fenced write of the lease whose commit is on
   * disk (worker/fence.ts says why): one round trip on the first call of the
   * attempt, none after. Rejects with TaskAbortedError (LEASE_LOST, or the
   * reason the attempt was aborted, e.g. CANCELLED) when the lease does not
   * hold; a store error rejects this call only (the next one asks again).
   */
  fence(): Promise<number>;
}
