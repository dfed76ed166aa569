/** The test kit's options and answers (kit.ts). */
import type { ClientOptions } from '../client/client.js';
import type { Middleware } from '../client/middleware.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import type { ScheduleInput } from '../core/schedule.js';
import type { AttemptOutcomeName, TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import type { SubmitOptions } from '../client/submit.js';
import type { AttemptRecord, FailureRow } from '../store/types.js';
import type { WorkerOptions } from '../worker/options.js';

export interface TestKitOptions {
  /** The task definitions under test: the client submits them, the worker runs them. */
  tasks: readonly AnyTaskDefinition[];
  /** The wall time the kit's clock starts at. Default: the real time at creation. */
  startAt?: Date;
  /** Periodic tasks declared as a worker declares them; their ticks are submitted by advance() and drain(). */
  schedules?: readonly ScheduleInput[];
  /**
   * Options of the worker that runs the tasks (retry, maxExecutionMs, failureClassifier, leaseMs…). The kit owns store, tasks,
   * clock and schedules, and runs one attempt at a time (concurrency 1, no prefetch: a batch type's call holds one task).
   * Retry jitter defaults to 0 here, so that backoff is exact.
   */
  worker?: Omit<WorkerOptions, 'store' | 'tasks' | 'clock' | 'schedules' | 'concurrency' | 'prefetch' | 'middleware'>;
  /** Options of the kit's client (maxPayloadBytes, defaultMaxAttempts, actor). */
  client?: Omit<ClientOptions, 'store' | 'tasks' | 'clock' | 'middleware'>;
  /**
   * Middleware, given to the client and to the worker as an application gives it to both (first is outermost): its
   * submit hooks wrap the kit's submits, its execute hooks every run, its encode/decode what is stored (payloadEncryption).
   * What the kit answers (runTask, enqueued, assertEnqueued) is decoded, as client.reveal() decodes.
   */
  middleware?: readonly Middleware[];
  /** The SQLite database: default ':memory:'; a file path keeps it for a look afterwards. */
  path?: string;
}

export interface RunOptions {
  /** Move the clock to each retry's (or snooze's, or delayed start's) due time and run again until the task ends. Default true. */
  advanceTime?: boolean;
}

export interface RunTaskOptions extends RunOptions {
  /** Submit options (priority, delayMs, deadlineAt, owner, idempotencyKey…). */
  submit?: Omit<SubmitOptions, 'transaction'>;
}

/** What runTask() and run() answer: the task's row when they stopped, its attempts, its result or its error. */
export interface TaskRun<Result = unknown> {
  task: Task;
  status: TaskStatus;
  /** The handler's result (task.result); undefined unless it succeeded with one. */
  result: Result | undefined;
  /** The last failure, when the task did not succeed (null otherwise). */
  error: { code: string; message: string; retryable: boolean } | null;
  attempts: AttemptRecord[];
  failures: FailureRow[];
}

/** One attempt drain() ran. */
export interface RanAttempt {
  taskId: string;
  taskType: string;
  attempt: number;
  /** How the attempt ended (null: its lease was lost). */
  outcome: AttemptOutcomeName | null;
  errorCode: string | null;
  /** The task's row after the attempt. */
  task: Task;
}

export interface DrainOptions {
  /** When nothing is due, move the clock to the next task's due time (retries, delays) and go on. Schedules are not waited for. Default false. */
  advanceTime?: boolean;
  /** Stop (with an error) after this many attempts: a task that keeps submitting tasks would never let drain end. Default 1000. */
  maxAttempts?: number;
}
