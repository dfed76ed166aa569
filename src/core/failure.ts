/**
 * Failure classification: what an error thrown by a handler becomes in the
 * database and the logs — a bounded error code, retryable or not, a trace id,
 * and a message that never carries raw exception text unless the operator
 * opted in (exception messages often hold payload data: names, ids, SQL).
 */
import { randomBytes } from 'node:crypto';
import { ErrorCode, PayloadInvalidError, TaskAbortedError, TaskFailure, truncate } from './errors.js';
import type { FailureRecord } from './task.js';
import { replaceNul } from './text.js';

export interface ClassifyOptions {
  /** Store the raw message of unexpected errors (truncated). Default false. */
  exposeErrorMessages: boolean;
  /** The task's own trace id, if the producer gave one. */
  traceId: string | null;
  /** The worker's own mapping of foreign errors (driver timeouts, HTTP 503…) to a code and retryability. */
  classifier?: FailureClassifier | null;
}

/**
 * Maps an error the handler did not wrap in a TaskFailure to an error code and
 * whether to retry; undefined or null leaves it to the default (HANDLER_ERROR,
 * retryable unless the error says `retryable: false`). Its message stays
 * withheld unless exposeErrorMessages is on.
 */
export type FailureClassifier = (error: unknown) => { errorCode: string; retryable: boolean } | null | undefined;

const MAX_MESSAGE = 1000;
const NON_RETRYABLE_ABORTS = new Set<string>([ErrorCode.TIMEOUT, ErrorCode.DEADLINE_EXCEEDED, ErrorCode.CANCELLED]);

export function classifyFailure(error: unknown, options: ClassifyOptions): FailureRecord {
  const traceId = options.traceId ?? newTraceId();
  const failure = classify(error, options, traceId);
  return { ...failure, message: replaceNul(failure.message), exceptionType: error instanceof Error ? error.name : typeof error };
}

function classify(error: unknown, options: ClassifyOptions, traceId: string): FailureRecord {
  if (error instanceof TaskFailure) {
    return { errorCode: boundedCode(error.code), message: truncate(error.message, MAX_MESSAGE), traceId, retryable: error.retryable };
  }
  if (error instanceof TaskAbortedError) {
    return { errorCode: error.code, message: error.message, traceId, retryable: !NON_RETRYABLE_ABORTS.has(error.code) };
  }
  if (error instanceof PayloadInvalidError) {
    return { errorCode: ErrorCode.PAYLOAD_INVALID, message: truncate(error.message, MAX_MESSAGE), traceId, retryable: false };
  }
  const name = error instanceof Error ? error.name : typeof error;
  const mapped = options.classifier?.(error);
  const retryable = mapped ? mapped.retryable : !(typeof error === 'object' && error !== null && (error as { retryable?: unknown }).retryable === false);
  const raw = error instanceof Error ? error.message : String(error);
  const message = options.exposeErrorMessages ? truncate(`${name}: ${raw}`, MAX_MESSAGE) : `${name} (message withheld; traceId ${traceId})`;
  return { errorCode: mapped ? boundedCode(mapped.errorCode) : ErrorCode.HANDLER_ERROR, message, traceId, retryable };
}

/** Error codes become metric labels: keep them short identifiers. */
function boundedCode(code: string): string {
  const clean = code
    .toUpperCase()
    .replace(/[^A-Z0-9_.-]/g, '_')
    .slice(0, 64);
  return clean.length > 0 ? clean : ErrorCode.HANDLER_ERROR;
}

export function newTraceId(): string {
  return randomBytes(8).toString('hex');
}
