/**
 * Batch handlers: a task type whose definition has `executeBatch` (and
 * `batch: { maxSize, maxWaitMs }`) is run by one call for up to maxSize of its
 * claimed tasks. Each task keeps its own lease, attempt, context (AbortSignal,
 * progress, cancellation), outcome, retry and dead letter; the call only
 * shares the handler's work. The worker side is src/worker/batch-gatherer.ts.
 *
 * What the call returns decides each task's outcome:
 * - nothing (undefined): every task of the batch succeeds;
 * - an array with one entry per task, in the order of `tasks`: `undefined`
 *   (SUCCESS), a TaskResult, a TaskResult.snooze(ms), or an Error (that task's
 *   attempt fails, retried or dead-lettered by its own retry rules; a
 *   TaskFailure with `retryable: false` fails it at once);
 * - anything else (not an array, or a different length): every task fails for
 *   good with BATCH_RESULT_INVALID (a handler bug a retry would not fix).
 * A call that throws (or rejects) fails every task of the batch with that
 * error, each by its own retry rules. A task whose own signal fired (lost
 * lease, cancellation, timeout) has its outcome decided by that abort, as a
 * single task's is: whatever the call returns for it later is discarded.
 */
import { InvalidOptionsError, ValidationError } from './errors.js';
import type { TaskContext } from './context.js';
import type { TaskResult } from './result.js';
import { checkKnownKeys, checkInteger, keysOf } from './validate.js';

/** How a batch is formed. */
export interface BatchOptions {
  /** Most tasks per call (1 … 10,000). A call never holds more tasks than the worker has free slots: concurrency counts tasks. */
  readonly maxSize: number;
  /** How long after the first task is ready the worker waits for more to fill the batch (0 … 60,000 ms). */
  readonly maxWaitMs: number;
}

export const MAX_BATCH_SIZE = 10_000;
export const MAX_BATCH_WAIT_MS = 60_000;

/** One task of a batch: its own context (signal, progress, checkCancellation, the task row) and its validated payload. */
export interface BatchItem<Payload = unknown> {
  readonly ctx: TaskContext;
  readonly payload: Payload;
}

/** What the batch call as a whole sees. */
export interface BatchContext {
  readonly taskType: string;
  /** Tasks in this call. */
  readonly size: number;
  /** Fires once every task of the batch has been aborted (each task's own `ctx.signal` fires for it alone). */
  readonly signal: AbortSignal;
}

/** One task's answer: undefined (SUCCESS), a result, a snooze, or an Error (that task's attempt fails). */
export type BatchItemResult = TaskResult | { status: 'SNOOZED'; delayMs: number } | Error | undefined | void;

export type BatchHandler<Payload = unknown> = (
  ctx: BatchContext,
  tasks: readonly BatchItem<Payload>[],
) => Promise<readonly BatchItemResult[] | void> | readonly BatchItemResult[] | void;

const BATCH_KEYS = keysOf<BatchOptions>({ maxSize: true, maxWaitMs: true });

/** A definition's batch keys: executeBatch and batch together, never beside execute. */
export function checkBatchDefinition(type: string, definition: { execute?: unknown; executeBatch?: unknown; batch?: unknown }): void {
  const { execute, executeBatch, batch } = definition;
  if (executeBatch === undefined && batch === undefined) return;
  const c = `defineTask(${type})`;
  if (typeof executeBatch !== 'function')
    throw new ValidationError(`task ${type}: executeBatch must be a function (batch declares how its batches form)`, 'executeBatch');
  if (execute !== undefined) throw new ValidationError(`task ${type}: give execute or executeBatch, not both`, 'executeBatch');
  if (typeof batch !== 'object' || batch === null)
    throw new InvalidOptionsError(c, 'batch', 'must be an object { maxSize, maxWaitMs } when executeBatch is given');
  checkKnownKeys(c, batch, BATCH_KEYS, 'batch.');
  const { maxSize, maxWaitMs } = batch as Partial<BatchOptions>;
  checkInteger(c, 'batch.maxSize', maxSize, { min: 1, max: MAX_BATCH_SIZE });
  checkInteger(c, 'batch.maxWaitMs', maxWaitMs, { min: 0, max: MAX_BATCH_WAIT_MS });
}
