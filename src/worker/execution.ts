/**
 * One execution of one task by this worker: from a claimed lease to the
 * outcome to write. Decides SUCCESS / RETRY / FAILED / CANCELLED / ABANDONED
 * from the handler's result and the abort reason; writes nothing itself.
 */
import { PayloadInvalidError, TaskAbortedError } from '../core/errors.js';
import { classifyFailure } from '../core/failure.js';
import { retryDelayMs, type RetryOptions } from '../core/retry.js';
import { runSchema } from '../core/standard-schema.js';
import { attemptsLeft, type FailureRecord, type Lease, type Task } from '../core/task.js';
import type { AttemptOutcome, RenewResult } from '../store/types.js';
import type { AbortSource, ExecutionContext } from './context.js';
import type { AnyTaskDefinition, TaskResult } from '../core/definition.js';

export type Phase = 'buffered' | 'running' | 'finishing' | 'done';


export class Execution implements AbortSource {
  readonly lease: Lease;
  phase: Phase = 'buffered';
  leaseLost = false;
  startedAt = 0;
  lastRenewedAt: number;
  context: ExecutionContext | null = null;
  /** Settles when the handler has returned or thrown (not merely been raced). */
  handlerSettled: Promise<void> = Promise.resolve();
  /** No handler of this execution is running: none started yet, or it returned or threw (handlerSettled has resolved). */
  handlerIdle = true;
  timer: NodeJS.Timeout | null = null;
  private reason: TaskAbortedError | null = null;
  private controller: AbortController | null = null;
  private readonly abortListeners = new Set<() => void>();

  constructor(
    readonly task: Task,
    readonly definition: AnyTaskDefinition,
    now: number,
  ) {
    this.lease = { taskId: task.id, workerId: task.leaseOwner ?? '', attempt: task.attemptCount };
    this.lastRenewedAt = now;
  }

  /** Made on first use: most handlers never look, and an AbortController per task is measurable at 20k tasks/s. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get abortReason(): TaskAbortedError | null {
    return this.reason;
  }

  abort(code: TaskAbortedError['code'], message: string): void {
    if (this.reason) return;
    this.reason = new TaskAbortedError(code as never, message);
    this.controller?.abort(this.reason);
    for (const listener of [...this.abortListeners]) listener();
  }

  /** Calls `listener` on abort; returns the unsubscribe. */
  onAbort(listener: () => void): () => void {
    this.abortListeners.add(listener);
    return () => this.abortListeners.delete(listener);
  }
}

export interface DecideOptions {
  retry: RetryOptions;
  exposeErrorMessages: boolean;
  /** Confirms the lease just before a failure is written (a cancel request may have arrived). */
  checkLease: (lease: Lease) => Promise<RenewResult>;
}

/** Validates the payload, runs validate and execute; raced against the signal except on shutdown. */
export async function runHandler(execution: Execution, context: ExecutionContext): Promise<TaskResult> {
  const { definition, task } = execution;
  let payload: unknown = task.payload;
  if (definition.schema) {
    const checked = await runSchema(definition.schema, task.payload);
    if (!checked.ok) throw new PayloadInvalidError(task.taskType, checked.issues);
    payload = checked.value;
  }
  if (definition.validate) await definition.validate(payload, context);
  context.throwIfAborted();
  const work = Promise.resolve().then(() => definition.execute!(context, payload));
  execution.handlerIdle = false;
  const settle = (): void => {
    execution.handlerIdle = true;
  };
  execution.handlerSettled = work.then(settle, settle);
  const result = await raceAbort(work, execution);
  if (execution.abortReason && execution.abortReason.code !== 'SHUTDOWN') throw execution.abortReason;
  return result ?? { status: 'SUCCESS' };
}

/**
 * Resolves with the handler unless the signal fires first. A shutdown abort
 * waits for the handler: its task is handed back only once it has stopped.
 */
function raceAbort<T>(work: Promise<T>, execution: Execution): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      const reason = execution.abortReason;
      if (reason?.code === 'SHUTDOWN') return;
      reject(reason);
    };
    if (execution.abortReason) onAbort();
    const off = execution.onAbort(onAbort);
    work.then(resolve, reject).finally(off);
  });
}

export function successOutcome(execution: Execution, result: TaskResult): AttemptOutcome {
  return {
    kind: result.status === 'PARTIAL_SUCCESS' ? 'PARTIAL_SUCCESS' : 'SUCCESS',
    lease: execution.lease,
    artifactId: result.artifactId ?? null,
    result: result.result ?? null,
    progress: execution.context?.finalProgress ?? null,
  };
}

/** The outcome of a thrown error or an abort; null when the lease is gone and nothing may be written. */
export async function failureOutcome(execution: Execution, error: unknown, options: DecideOptions): Promise<AttemptOutcome | null> {
  const { lease, task } = execution;
  const progress = execution.context?.finalProgress ?? null;
  const reason = execution.abortReason;
  if (execution.leaseLost || reason?.code === 'LEASE_LOST') return null;
  if (reason?.code === 'SHUTDOWN') return { kind: 'ABANDONED', lease, progress };
  if (reason?.code === 'CANCELLED') return { kind: 'CANCELLED', lease, progress };
  const failure = classifyFailure(reason ?? error, { exposeErrorMessages: options.exposeErrorMessages, traceId: task.traceId });
  if (reason === null) {
    // The handler failed on its own: a cancel request it never saw wins over a retry.
    const state = await options.checkLease(lease);
    if (state.lost.includes(lease.taskId)) return null;
    if (state.cancelRequested.includes(lease.taskId)) return { kind: 'CANCELLED', lease, progress };
  }
  return decideRetry(execution, failure, options.retry);
}

function decideRetry(execution: Execution, failure: FailureRecord, baseRetry: RetryOptions): AttemptOutcome {
  const { lease, task, definition } = execution;
  const progress = execution.context?.finalProgress ?? null;
  if (!failure.retryable || attemptsLeft(task) <= 0) return { kind: 'FAILED', lease, failure, progress };
  const retry = { ...baseRetry, ...(definition.retry ?? {}) };
  const delay = retryDelayMs(retry, task.attemptCount - task.attemptBase);
  return { kind: 'RETRY', lease, failure, retryDelayMs: delay, progress };
}
