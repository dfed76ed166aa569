/**
 * Structured logs of a worker's and a client's events (seed article 2, 日志规范):
 * one JSON line per fact with the seed's fields — taskId, taskType, attempt,
 * status, durationMs, errorCode, traceId — so a task's whole life is one
 * search on taskId and failures aggregate on errorCode.
 *
 * Redaction (脱敏): payloads and raw exception messages often hold personal
 * data, so by default they are logged at no level at all; the operator opts
 * in per field. Failure records are already sanitized by the classifier
 * unless the worker's exposeErrorMessages is on, but even then their message
 * stays out of the logs unless this logger opts in too.
 *
 * Per-task logs: a handler's ctx.log lines come here too (event `logged`), at their own level, with their
 * fields under `fields` as the worker stored them: bounded and redacted (core/logs.ts: secret-like names and
 * `payload` replaced by "[REDACTED]", an Error's message withheld unless the worker's exposeErrorMessages).
 *
 * Levels: trace heartbeat/progress; debug claimed/started/retry delay/submitted;
 * info completed/cancelled/released/stopped/recovery; warn attempt failed
 * (will retry)/slow/lost renewals/expired leases recovered; error dead
 * letter/timeout/lease lost/store operation failed.
 */
import pino, { type Logger } from 'pino';
import { ErrorCode } from '../core/errors.js';
import type { FailureRecord, Task } from '../core/task.js';
import { checkKnownKeys } from '../core/validate.js';
import type { TaskLeaseClient } from '../client/client.js';
import type { Worker } from '../worker/worker.js';

export interface LoggingOptions {
  /** Log task payloads (on started, failed and dead-letter lines). Default false. */
  exposePayloads?: boolean;
  /** Log failure messages and raw store-error messages and stacks. Default false. */
  exposeErrorMessages?: boolean;
}

type Fields = Record<string, unknown>;

/** The seed's fields of a task; the attempt is the lifetime attempt number, as in system_async_task_attempt. */
function taskFields(task: Task): Fields {
  return { taskId: task.id, taskType: task.taskType, attempt: task.attemptCount, status: task.status, traceId: task.traceId ?? undefined };
}

/** Subscribes a pino logger to a worker's events. Returns detach. */
export function attachLogger(worker: Worker, logger: Logger = pino(), options: LoggingOptions = {}): () => void {
  checkKnownKeys('attachLogger', options, ['exposePayloads', 'exposeErrorMessages']);
  const exposePayloads = options.exposePayloads === true;
  const exposeMessages = options.exposeErrorMessages === true;
  const log = logger.child({ workerId: worker.workerId });
  const payloadOf = (task: Task): Fields => (exposePayloads ? { payload: task.payload } : {});
  const failureFields = (failure: FailureRecord): Fields => ({
    errorCode: failure.errorCode,
    exceptionType: exceptionTypeOf(failure),
    traceId: failure.traceId ?? undefined,
    retryable: failure.retryable,
    ...(exposeMessages ? { errorMessage: failure.message } : {}),
  });
  const offs = [
    worker.on('claimed', ({ count }) => log.debug({ count }, 'tasks claimed')),
    worker.on('started', ({ task, queueWaitMs }) => log.debug({ ...taskFields(task), queueWaitMs, ...payloadOf(task) }, 'task started')),
    worker.on('progress', ({ task, progress }) => log.trace({ ...taskFields(task), processed: progress.processed, total: progress.total }, 'task progress')),
    // ctx.log lines, with the fields the worker stored (bounded, redacted by core/logs.ts: the same rule as the payloads here).
    worker.on('logged', ({ task, level, message, fields }) => log[level]({ ...taskFields(task), ...(fields === undefined ? {} : { fields }) }, message)),
    worker.on('completed', ({ task, durationMs }) => log.info({ ...taskFields(task), durationMs }, 'task completed')),
    worker.on('failed', ({ task, failure, durationMs, willRetry }) => {
      const fields = { ...taskFields(task), ...failureFields(failure), durationMs, willRetry, ...payloadOf(task) };
      // A terminal failure is logged at error by its dead-letter line; this one only adds the duration.
      if (willRetry) log.warn(fields, 'task attempt failed, will retry');
      else log.debug(fields, 'task attempt failed for good');
    }),
    worker.on('retryScheduled', ({ task, retryDelayMs }) => log.debug({ ...taskFields(task), retryDelayMs }, 'task retry scheduled')),
    worker.on('snoozed', ({ task, delayMs, durationMs }) => log.debug({ ...taskFields(task), delayMs, durationMs }, 'task snoozed')),
    worker.on('deadLettered', ({ task, failure, deadLetterId }) =>
      log.error({ ...taskFields(task), ...failureFields(failure), deadLetterId, ...payloadOf(task) }, 'task failed and moved to the dead letter queue'),
    ),
    worker.on('timedOut', ({ task, durationMs }) =>
      log.error({ ...taskFields(task), errorCode: 'TIMEOUT', exceptionType: 'TaskAbortedError', durationMs }, 'task timed out'),
    ),
    worker.on('cancelled', ({ task, durationMs }) => log.info({ ...taskFields(task), durationMs }, 'task cancelled')),
    worker.on('leaseLost', ({ task, reason }) => log.error({ ...taskFields(task), reason }, 'lease lost: the task was aborted here and may run elsewhere')),
    worker.on('released', ({ task, started }) => {
      if (started) log.info({ ...taskFields(task), started }, 'task handed back (worker stopping)');
      else log.debug({ ...taskFields(task), started }, 'prefetched task handed back');
    }),
    worker.on('slow', ({ task, durationMs, thresholdMs }) => log.warn({ ...taskFields(task), durationMs, thresholdMs }, 'slow task')),
    worker.on('heartbeat', (counts) => {
      if (counts.lost > 0) log.warn(counts, 'lease renewal failed for some tasks');
      else log.trace(counts, 'leases renewed');
    }),
    worker.on('recoveryBatch', ({ result }) => {
      if (result.requeued + result.failed > 0) log.warn({ ...result }, 'expired leases recovered');
      else if (result.cancelled + result.retriesDue + result.deadlineExpired > 0) log.info({ ...result }, 'recovery sweep');
      else log.trace({ ...result }, 'recovery sweep found nothing');
    }),
    worker.on('scheduled', ({ scheduleKey, ticks, tasks }) =>
      log.info({ scheduleKey, ticks: ticks.map((tick) => tick.toISOString()), taskIds: tasks.map((task) => task.id) }, 'periodic ticks submitted'),
    ),
    worker.on('error', ({ operation, error }) =>
      log.error({ operation, ...errorFields(error), ...(exposeMessages ? { err: error } : {}) }, 'store operation failed; the worker retries'),
    ),
    worker.on('stopping', ({ active, buffered }) => log.info({ active, buffered }, 'worker stopping')),
    worker.on('stopped', () => log.info('worker stopped')),
  ];
  return () => {
    for (const off of offs) off();
  };
}

/** Logs a client's submits at debug, one line per created task. Returns detach. */
export function attachClientLogger(client: TaskLeaseClient, logger: Logger = pino(), options: Pick<LoggingOptions, 'exposePayloads'> = {}): () => void {
  checkKnownKeys('attachClientLogger', options, ['exposePayloads']);
  return client.on('submitted', ({ tasks }) => {
    if (!logger.isLevelEnabled('debug')) return;
    for (const task of tasks) {
      logger.debug({ ...taskFields(task), ...(options.exposePayloads === true ? { payload: task.payload } : {}) }, 'task submitted');
    }
  });
}

const ABORT_CODES = new Set<string>([ErrorCode.CANCELLED, ErrorCode.TIMEOUT, ErrorCode.DEADLINE_EXCEEDED, ErrorCode.LEASE_LOST, ErrorCode.SHUTDOWN]);
/** The classifier's texts of an unexpected error: "Name (message withheld; …)", or "Name: message" when messages are exposed. */
const WITHHELD = /^([A-Za-z_$][\w$.]*) \(message withheld; /;
const EXPOSED = /^((?:[A-Z][\w$]*)?(?:Error|Exception)): /;

/**
 * The exception class behind a failure (the seed's exceptionType field): aggregates on what broke
 * without logging any message. The classifier records it; for a record without it (read back from the
 * store) it is told from the error code and the class name the classifier puts first in its text.
 */
export function exceptionTypeOf(failure: FailureRecord): string | undefined {
  if (failure.exceptionType !== undefined) return failure.exceptionType;
  if (ABORT_CODES.has(failure.errorCode)) return 'TaskAbortedError';
  if (failure.errorCode === ErrorCode.PAYLOAD_INVALID) return 'PayloadInvalidError';
  if (failure.errorCode !== ErrorCode.HANDLER_ERROR) return 'TaskFailure'; // a handler's own code
  return (WITHHELD.exec(failure.message) ?? EXPOSED.exec(failure.message))?.[1];
}

/** Only what identifies the kind of failure: a driver's message may quote SQL parameters. */
function errorFields(error: unknown): Fields {
  if (!(error instanceof Error)) return { errorName: typeof error };
  const code = (error as { code?: unknown }).code;
  return { errorName: error.name, errorCode: typeof code === 'string' || typeof code === 'number' ? code : undefined };
}
