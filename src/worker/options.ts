/**
 * Worker options, every one documented where it is declared, with defaults
 * from the seed where it names one. Validated at construction: a bad value
 * fails at start with a message naming the field.
 */
import { MiddlewareStack, type Middleware } from '../client/middleware.js';
import { DEFAULT_MAX_STEP_RESULT_BYTES, DEFAULT_MAX_STEPS_PER_TASK } from '../core/steps.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { InvalidOptionsError } from '../core/errors.js';
import { resolveRetryOptions, type RetryOptions } from '../core/retry.js';
import { checkInteger, checkKnownKeys, checkString } from '../core/validate.js';
import type { Store } from '../store/types.js';
import type { FailureClassifier } from '../core/failure.js';
import { systemClock, type Clock } from '../core/clock.js';
import type { Logger } from 'pino';
import { defaultWorkerLogger } from './error-log.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { checkSandboxDefinition } from '../core/sandbox.js';
import { checkBatchDefinition } from '../core/batch.js';
import { normalizeSchedule, type ScheduleDefinition, type ScheduleInput } from '../core/schedule.js';

export interface WorkerOptions {
  store: Store;
  /** The task definitions this worker runs; it claims only these types. */
  tasks: readonly AnyTaskDefinition[];
  /** Unique per process; also the lease owner. Default host-pid-random. */
  workerId?: string;
  /** Handlers running at once in this process (the seed's localMaxConcurrency). Default 4. */
  concurrency?: number;
  /** Extra tasks leased ahead of free slots so the next starts without a round trip. They count toward every limit and are heartbeated; a stopping worker hands them back at once. Default 0. */
  prefetch?: number;
  /** Most tasks one claim statement takes. Default 500. */
  claimBatchSize?: number;
  /** Fallback poll when no wake-up arrives (seed: 1 s): the longest the poll backs off to. Default 1000. */
  pollIntervalMs?: number;
  /** After a claim found work the poll starts again this soon, doubling up to pollIntervalMs while claims find nothing. Default 50. */
  minPollIntervalMs?: number;
  /** How long a lease lasts without renewal. Default 60000. */
  leaseMs?: number;
  /** Renewal period; must be well under leaseMs (seed: 10 s). Default 10000. */
  heartbeatIntervalMs?: number;
  /** Period of the expired-lease and retry sweep (seed: 60 s); 0 disables it in this worker. Default 60000. */
  recoveryIntervalMs?: number;
  /** Rows of each kind one sweep handles. Default 100. */
  recoveryBatchSize?: number;
  /** Periodic tasks declared in code, saved (upserted by key) when the worker starts; an operator's enable/disable is kept. */
  schedules?: readonly ScheduleInput[];
  /** The scheduler of periodic tasks wakes at each due tick and at least this often to read the schedules; 0 disables it in this worker. Default 30000. */
  scheduleRefreshMs?: number;
  /** Adaptive limits (client.adaptive): how often this worker evaluates the adaptive types it serves; 0: never. Default 1000. */
  adaptiveIntervalMs?: number;
  /** Abort an attempt after this long (TIMEOUT); 0 = no limit. A definition's timeoutMs wins. Default 0. */
  maxExecutionMs?: number;
  /** Emit `slow` for attempts longer than this; 0 = off. Default 0. */
  slowTaskThresholdMs?: number;
  /** How long stop() waits for running handlers before aborting them. Default 30000. */
  shutdownGraceMs?: number;
  /** After aborting, how long stop() waits for handlers to settle before leaving them to lease expiry. Default 5000. */
  shutdownAbortWaitMs?: number;
  /** Cluster-wide cap on running tasks unless a GLOBAL policy says otherwise (seed: 20). */
  globalConcurrency?: number;
  /** Per-type cap unless a TYPE:<type> policy says otherwise (seed: 5). */
  typeConcurrency?: number;
  /** Per-owner (tenant) cap unless an OWNER:<owner> policy says otherwise. Default: none (owners are unlimited). */
  ownerConcurrency?: number;
  /** Claim round robin across owners even when no owner limit is set (it always does when one is). Default false. */
  fairOwners?: boolean;
  /** Backoff (seed: base 30 s, ×2, ±20 %). */
  retry?: Partial<RetryOptions>;
  /** Progress is written at most this often (seed: 1 s). */
  progressFlushIntervalMs?: number;
  /** …or when processed advanced this much (seed: 500). */
  progressFlushThreshold?: number;
  /** ctx.checkCancellation() asks the store at most this often. Default 1000. */
  cancelCheckIntervalMs?: number;
  /** Largest result of one durable step (ctx.step) as JSON, in bytes; a larger one fails the task (STEP_RESULT_TOO_LARGE). Default 1 MiB. */
  maxStepResultBytes?: number;
  /** Most durable steps one task may record in one attempt cycle; one more fails the task (STEP_LIMIT_EXCEEDED). Default 1000. */
  maxStepsPerTask?: number;
  /** Store raw exception messages of unexpected errors (they may hold payload data). Default false. */
  exposeErrorMessages?: boolean;
  /** Maps foreign errors (driver timeouts, HTTP 503…) to an error code and retryability without wrapping them in a TaskFailure. Default: none. */
  failureClassifier?: FailureClassifier | null;
  /** The monotonic clock and timers the worker uses (tests drive time with their own). Default: the system's. */
  clock?: Clock;
  /**
   * Where the worker logs failing store operations (throttled: one line per operation per 30 s) and
   * limits that leave its slots idle. Default: a pino logger at level warn on stderr; false: silent.
   * attachLogger() (observe) logs every event on top of this.
   */
  logger?: Logger | false;
  /** Middleware around executions, and the decoding of what is stored (client/middleware.ts); more with worker.use(). */
  middleware?: readonly Middleware[];
}

export type ResolvedWorkerOptions = Required<Omit<WorkerOptions, 'retry' | 'logger' | 'ownerConcurrency' | 'schedules' | 'middleware'>> & {
  middleware: MiddlewareStack;
  retry: RetryOptions;
  logger: Logger | null;
  ownerConcurrency: number | null;
  schedules: readonly ScheduleDefinition[];
};

const KNOWN = [
  'store',
  'tasks',
  'workerId',
  'concurrency',
  'prefetch',
  'claimBatchSize',
  'pollIntervalMs',
  'minPollIntervalMs',
  'leaseMs',
  'heartbeatIntervalMs',
  'recoveryIntervalMs',
  'recoveryBatchSize',
  'schedules',
  'scheduleRefreshMs',
  'adaptiveIntervalMs',
  'maxExecutionMs',
  'slowTaskThresholdMs',
  'shutdownGraceMs',
  'shutdownAbortWaitMs',
  'globalConcurrency',
  'typeConcurrency',
  'ownerConcurrency',
  'fairOwners',
  'retry',
  'progressFlushIntervalMs',
  'progressFlushThreshold',
  'cancelCheckIntervalMs',
  'maxStepResultBytes',
  'maxStepsPerTask',
  'exposeErrorMessages',
  'failureClassifier',
  'clock',
  'logger',
  'middleware',
] as const;

export function resolveWorkerOptions(input: WorkerOptions): ResolvedWorkerOptions {
  const c = 'Worker';
  if (typeof input !== 'object' || input === null) throw new InvalidOptionsError(c, 'options', 'must be an object');
  checkKnownKeys(c, input, KNOWN);
  if (!input.store || typeof input.store.claimTasks !== 'function') throw new InvalidOptionsError(c, 'store', 'must be a Store');
  if (!Array.isArray(input.tasks) || input.tasks.length === 0) throw new InvalidOptionsError(c, 'tasks', 'must list at least one task definition');
  const o: ResolvedWorkerOptions = {
    store: input.store,
    tasks: input.tasks,
    workerId: input.workerId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    concurrency: input.concurrency ?? 4,
    prefetch: input.prefetch ?? 0,
    claimBatchSize: input.claimBatchSize ?? 500,
    pollIntervalMs: input.pollIntervalMs ?? 1000,
    minPollIntervalMs: input.minPollIntervalMs ?? Math.min(50, input.pollIntervalMs ?? 1000),
    leaseMs: input.leaseMs ?? 60_000,
    heartbeatIntervalMs: input.heartbeatIntervalMs ?? 10_000,
    recoveryIntervalMs: input.recoveryIntervalMs ?? 60_000,
    recoveryBatchSize: input.recoveryBatchSize ?? 100,
    schedules: resolveSchedules(c, input.schedules),
    scheduleRefreshMs: input.scheduleRefreshMs ?? 30_000,
    adaptiveIntervalMs: input.adaptiveIntervalMs ?? 1000,
    maxExecutionMs: input.maxExecutionMs ?? 0,
    slowTaskThresholdMs: input.slowTaskThresholdMs ?? 0,
    shutdownGraceMs: input.shutdownGraceMs ?? 30_000,
    shutdownAbortWaitMs: input.shutdownAbortWaitMs ?? 5000,
    globalConcurrency: input.globalConcurrency ?? 20,
    typeConcurrency: input.typeConcurrency ?? 5,
    ownerConcurrency: input.ownerConcurrency ?? null,
    fairOwners: input.fairOwners ?? false,
    retry: resolveRetryOptions(c, input.retry),
    progressFlushIntervalMs: input.progressFlushIntervalMs ?? 1000,
    progressFlushThreshold: input.progressFlushThreshold ?? 500,
    cancelCheckIntervalMs: input.cancelCheckIntervalMs ?? 1000,
    maxStepResultBytes: input.maxStepResultBytes ?? DEFAULT_MAX_STEP_RESULT_BYTES,
    maxStepsPerTask: input.maxStepsPerTask ?? DEFAULT_MAX_STEPS_PER_TASK,
    exposeErrorMessages: input.exposeErrorMessages ?? false,
    failureClassifier: input.failureClassifier ?? null,
    clock: input.clock ?? systemClock,
    logger: input.logger === false ? null : (input.logger ?? defaultWorkerLogger()),
    middleware: middlewareOf(c, input.middleware),
  };
  checkString(c, 'workerId', o.workerId, { minLength: 1, maxLength: 200 });
  checkInteger(c, 'concurrency', o.concurrency, { min: 1, max: 10_000 });
  checkInteger(c, 'prefetch', o.prefetch, { min: 0, max: 10_000 });
  checkInteger(c, 'claimBatchSize', o.claimBatchSize, { min: 1, max: 10_000 });
  checkInteger(c, 'pollIntervalMs', o.pollIntervalMs, { min: 1 });
  checkInteger(c, 'minPollIntervalMs', o.minPollIntervalMs, { min: 1, max: o.pollIntervalMs });
  checkInteger(c, 'leaseMs', o.leaseMs, { min: 100 });
  checkInteger(c, 'heartbeatIntervalMs', o.heartbeatIntervalMs, { min: 10 });
  if (o.heartbeatIntervalMs * 2 > o.leaseMs) {
    throw new InvalidOptionsError(
      c,
      'heartbeatIntervalMs',
      `must be at most half of leaseMs (${o.leaseMs}) so that one missed renewal does not lose the lease`,
    );
  }
  checkInteger(c, 'recoveryIntervalMs', o.recoveryIntervalMs, { min: 0 });
  checkInteger(c, 'recoveryBatchSize', o.recoveryBatchSize, { min: 1, max: 100_000 });
  checkInteger(c, 'scheduleRefreshMs', o.scheduleRefreshMs, { min: 0 });
  checkInteger(c, 'adaptiveIntervalMs', o.adaptiveIntervalMs, { min: 0, max: 3_600_000 });
  if (o.scheduleRefreshMs === 0 && o.schedules.length > 0)
    throw new InvalidOptionsError(c, 'scheduleRefreshMs', 'must not be 0 (no scheduler) when schedules are declared');
  for (const field of ['maxExecutionMs', 'slowTaskThresholdMs', 'shutdownGraceMs', 'shutdownAbortWaitMs'] as const) {
    checkInteger(c, field, o[field], { min: 0 });
  }
  checkInteger(c, 'globalConcurrency', o.globalConcurrency, { min: 1 });
  checkInteger(c, 'typeConcurrency', o.typeConcurrency, { min: 1 });
  if (o.ownerConcurrency !== null) checkInteger(c, 'ownerConcurrency', o.ownerConcurrency, { min: 1 });
  if (typeof o.fairOwners !== 'boolean') throw new InvalidOptionsError(c, 'fairOwners', 'must be true or false');
  checkInteger(c, 'progressFlushIntervalMs', o.progressFlushIntervalMs, { min: 0 });
  checkInteger(c, 'progressFlushThreshold', o.progressFlushThreshold, { min: 1 });
  checkInteger(c, 'cancelCheckIntervalMs', o.cancelCheckIntervalMs, { min: 0 });
  checkInteger(c, 'maxStepResultBytes', o.maxStepResultBytes, { min: 4, max: 64 * 1024 * 1024 });
  checkInteger(c, 'maxStepsPerTask', o.maxStepsPerTask, { min: 1, max: 100_000 });
  if (o.failureClassifier !== null && typeof o.failureClassifier !== 'function') throw new InvalidOptionsError(c, 'failureClassifier', 'must be a function');
  for (const task of o.tasks) {
    if (typeof task?.execute !== 'function' && typeof task?.executeBatch !== 'function' && task?.sandbox === undefined) {
      throw new InvalidOptionsError(c, 'tasks', `task ${String(task?.type)} has no execute (or executeBatch) function, nor a sandbox module`);
    }
    if (task.executeBatch !== undefined) checkBatchDefinition(task.type, task);
    if (task.sandbox !== undefined) checkSandboxDefinition(task.type, task);
    if (task.retry) resolveRetryOptions(`task ${task.type}`, { ...o.retry, ...task.retry });
    if (task.timeoutMs !== undefined) checkInteger(`task ${task.type}`, 'timeoutMs', task.timeoutMs, { min: 1 });
  }
  return o;
}

/** Declared schedules, validated at construction (a bad cron or zone fails with its own code); keys unique. */
function resolveSchedules(c: string, schedules: readonly ScheduleInput[] | undefined): ScheduleDefinition[] {
  if (schedules === undefined) return [];
  if (!Array.isArray(schedules)) throw new InvalidOptionsError(c, 'schedules', 'must be an array of schedules');
  const resolved = schedules.map((schedule) => normalizeSchedule(schedule));
  const keys = new Set(resolved.map((schedule) => schedule.key));
  if (keys.size !== resolved.length) throw new InvalidOptionsError(c, 'schedules', 'declares a schedule key twice');
  return resolved;
}

function middlewareOf(component: string, list: readonly Middleware[] | undefined): MiddlewareStack {
  if (list !== undefined && !Array.isArray(list)) throw new InvalidOptionsError(component, 'middleware', 'must be an array');
  return new MiddlewareStack(list);
}
