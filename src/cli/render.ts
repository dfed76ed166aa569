/** How tasks, attempts and failures look in tables: one place for get, list, submit and diagnose. */
import { isEncrypted } from '../client/encryption.js';
import type { Task } from '../core/task.js';
import type { AttemptRecord, FailureRow } from '../store/types.js';
import type { Column, Output } from './output.js';

export function taskBlock(output: Output, task: Task): string {
  const progress = task.progress;
  return output.fields([
    ['id', task.id],
    ['type', task.taskType],
    ['status', task.status],
    ['priority', task.priority],
    ['attempts', `${task.attemptCount - task.attemptBase} of ${task.maxAttempts} spent in this cycle (${task.attemptCount} started in all)`],
    ['owner', task.owner],
    ['available at', task.availableAt],
    ['deadline', task.deadlineAt],
    ['lease owner', task.leaseOwner],
    ['lease until', task.leaseUntil],
    ['last error', task.lastErrorCode],
    [
      'progress',
      progress
        ? `${progress.processed}/${progress.total} (ok ${progress.succeeded}, failed ${progress.failed}, skipped ${progress.skipped})${progress.message ? ` ${progress.message}` : ''}`
        : null,
    ],
    ['artifact', task.artifactId],
    ['result', sealed(task.result ?? null)],
    ['idempotency key', task.idempotencyKey],
    ['trace id', task.traceId],
    ['created', task.createdAt],
    ['started', task.startedAt],
    ['finished', task.finishedAt],
    ['payload', sealed(task.payload)],
  ]);
}

/** An encrypted value as the CLI shows it without the key: what it is and which key opens it, never the ciphertext. */
function sealed(value: unknown): unknown {
  return isEncrypted(value) ? `encrypted (${value.$encrypted}, key ${value.kid}; set TASKLEASE_PAYLOAD_KEYS to read it)` : value;
}

export const TASK_COLUMNS: readonly Column<Task>[] = [
  { header: 'ID', value: (t) => t.id },
  { header: 'TYPE', value: (t) => t.taskType },
  { header: 'STATUS', value: (t) => t.status, colourByValue: true },
  { header: 'ATTEMPTS', value: (t) => `${t.attemptCount - t.attemptBase}/${t.maxAttempts}` },
  { header: 'PRIORITY', value: (t) => t.priority },
  { header: 'OWNER', value: (t) => t.owner },
  { header: 'CREATED', value: (t) => t.createdAt },
  { header: 'ERROR', value: (t) => t.lastErrorCode },
];

export const ATTEMPT_COLUMNS: readonly Column<AttemptRecord>[] = [
  { header: 'ATTEMPT', value: (a) => a.attempt },
  { header: 'WORKER', value: (a) => a.workerId },
  { header: 'STARTED', value: (a) => a.startedAt },
  { header: 'FINISHED', value: (a) => a.finishedAt },
  { header: 'OUTCOME', value: (a) => a.outcome ?? 'RUNNING', colourByValue: true },
  { header: 'ERROR', value: (a) => a.errorCode },
];

export const FAILURE_COLUMNS: readonly Column<FailureRow>[] = [
  { header: 'ATTEMPT', value: (f) => f.attempt },
  { header: 'FAILED AT', value: (f) => f.failedAt },
  { header: 'CODE', value: (f) => f.errorCode },
  { header: 'RETRYABLE', value: (f) => f.retryable },
  { header: 'MESSAGE', value: (f) => f.message },
  { header: 'TRACE', value: (f) => f.traceId },
];
