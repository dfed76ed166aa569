/**
 * The one place that decides the outcome of an attempt: SUCCESS /
 * PARTIAL_SUCCESS (with the result serialized here, once), SNOOZED, RETRY /
 * FAILED, CANCELLED, RELEASED — or nothing, when the lease is gone and nothing may
 * be written. What each outcome does to the task row is the store's shared
 * rule (outcome → status); this module only chooses the outcome.
 */
import { ErrorCode } from '../core/errors.js';
import { isSnooze, type TaskResult, type TaskSnooze } from '../core/definition.js';
import { classifyFailure, newTraceId, type FailureClassifier } from '../core/failure.js';
import { retryDelayMs, type RetryOptions } from '../core/retry.js';
import { attemptsLeft, type FailureRecord } from '../core/task.js';
import type { AttemptOutcome } from '../store/types.js';
import type { Execution } from './execution.js';

export interface FailureDecision {
  /** The retry options of the task's type, merged once (core/retry.ts mergeRetry). */
  retry: RetryOptions;
  exposeErrorMessages: boolean;
  classifier: FailureClassifier | null;
}

/**
 * A finished handler's result (or snooze), its value as stored (`encode`: the middleware's, client/middleware.ts);
 * a result that JSON cannot hold fails the task for good instead.
 */
export function successOutcome(execution: Execution, result: TaskResult | TaskSnooze, encode?: (taskType: string, value: unknown) => unknown): AttemptOutcome {
  const { lease } = execution;
  const progress = execution.context?.finalProgress ?? null;
  if (isSnooze(result)) return { kind: 'SNOOZED', lease, delayMs: result.delayMs, progress };
  let resultJson: string | null;
  try {
    let stored = result.result;
    if (encode && stored != null) {
      serializeResult(stored); // refused as given, not as encoded
      stored = encode(execution.task.taskType, stored);
    }
    resultJson = serializeResult(stored);
  } catch (error) {
    const failure: FailureRecord = {
      errorCode: ErrorCode.RESULT_NOT_SERIALIZABLE,
      retryable: false,
      traceId: execution.task.traceId ?? newTraceId(),
      message: `the handler's result cannot be stored as JSON: ${(error as Error).message}`,
    };
    return { kind: 'FAILED', lease, failure, progress };
  }
  return { kind: result.status === 'PARTIAL_SUCCESS' ? 'PARTIAL_SUCCESS' : 'SUCCESS', lease, artifactId: result.artifactId ?? null, resultJson, progress };
}

/** JSON text of a result, null for none; throws for what JSON cannot hold (BigInt, cycles). */
export function serializeResult(result: unknown): string | null {
  if (result === undefined || result === null) return null;
  const text = JSON.stringify(result);
  if (text === undefined) throw new TypeError(`a ${typeof result} is not a JSON value`);
  return text;
}

/**
 * The outcome of a thrown error or an abort; null when the lease is gone and nothing may be written.
 * No round trip: whether the lease still holds is the fenced write's to decide, and a cancel request the
 * handler never saw turns a RETRY or FAILED into CANCELLED in that same write (rules/outcomes.ts
 * statusAfterOutcome). A check per failed attempt put one statement each ahead of the heartbeat on
 * the lease pool: a burst of failures made the worker give up its own live leases.
 */
export function failureOutcome(execution: Execution, error: unknown, decision: FailureDecision): AttemptOutcome | null {
  const { lease, task } = execution;
  const progress = execution.context?.finalProgress ?? null;
  const reason = execution.abortReason;
  if (execution.state === 'lost' || reason?.code === 'LEASE_LOST') return null;
  if (reason?.code === 'SHUTDOWN') return { kind: 'RELEASED', lease, progress };
  if (reason?.code === 'CANCELLED') return { kind: 'CANCELLED', lease, progress };
  const failure = classifyFailure(reason ?? error, {
    exposeErrorMessages: decision.exposeErrorMessages,
    traceId: task.traceId,
    classifier: decision.classifier,
  });
  if (!failure.retryable || attemptsLeft(task) <= 0) return { kind: 'FAILED', lease, failure, progress };
  const delay = retryDelayMs(decision.retry, task.attemptCount - task.attemptBase);
  return { kind: 'RETRY', lease, failure, retryDelayMs: delay, progress };
}
