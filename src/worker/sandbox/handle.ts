/**
 * One sandboxed handler's thread, seen from the worker's thread: started
 * (spawn.ts), ready once its module loaded, then running one execution at a
 * time. It answers the thread's context calls with the execution's own
 * context (so progress, steps, fences and cancellation checks go through the
 * worker's fenced writes), passes an abort on, and terminates the thread for real when
 * the handler has not stopped within the grace period. A run settles only
 * once its handler has answered or its thread is gone: the executor frees the
 * slot then, never while a thread still burns a core.
 */
import { TASK_LOG_LEVELS } from '../../core/logs.js';
import type { Worker } from 'node:worker_threads';
import { ErrorCode, SandboxError, type TaskAbortedError } from '../../core/errors.js';
import type { SandboxOptions } from '../../core/sandbox.js';
import type { ExecutionContext } from '../context.js';
import type { Execution } from '../execution.js';
import { fromWire, toWire, type AbortCode, type FromThread, type ToThread } from './protocol.js';
import { spawnThread } from './spawn.js';

interface Running {
  execution: Execution;
  context: ExecutionContext<Execution>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  offAbort(): void;
  graceTimer: NodeJS.Timeout | undefined;
}

export class SandboxThread {
  private readonly thread: Worker;
  /** Resolves once the module loaded; rejects with SANDBOX_MODULE_INVALID, or a crash while loading. */
  readonly ready: Promise<void>;
  private running: Running | null = null;
  private readonly stepWaiters = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>();
  /** Why the thread is gone (null while it lives). */
  private ended: Error | null = null;
  private lastError: unknown = null;
  private terminatedBy: TaskAbortedError | 'idle' | null = null;
  private markReady: (() => void) | null = null;
  /** Resolves once the thread has exited. */
  readonly exited: Promise<void>;
  private markExited: () => void = () => undefined;
  private failReady: ((error: unknown) => void) | null = null;

  constructor(
    readonly moduleUrl: string,
    exportName: string,
    private readonly options: SandboxOptions & { terminateGraceMs: number; lostLeaseGraceMs: number },
    /** Called once the thread has exited, for whatever reason. */
    private readonly onExit: (thread: SandboxThread) => void,
  ) {
    this.ready = new Promise((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    this.ready.catch(() => undefined); // a thread nobody waits for yet must not raise an unhandled rejection
    this.exited = new Promise((resolve) => (this.markExited = resolve));
    this.thread = spawnThread({ moduleUrl, exportName }, options);
    this.thread.on('message', (message: FromThread) => this.onMessage(message));
    this.thread.on('error', (error) => (this.lastError = error));
    this.thread.on('exit', (code) => this.onThreadExit(code));
  }

  /** Neither gone nor being terminated (a thread told to terminate may still answer first: it is not reused). */
  get alive(): boolean {
    return this.ended === null && this.terminatedBy === null;
  }

  /** Runs the handler on `payload`; resolves with its result, rejects with its error or with why the thread is gone. */
  run(execution: Execution, context: ExecutionContext<Execution>, payload: unknown): Promise<unknown> {
    if (!this.alive)
      return Promise.reject(this.ended ?? new SandboxError(ErrorCode.SANDBOX_CRASHED, 'the sandbox thread is being terminated', { retryable: true }));
    return new Promise((resolve, reject) => {
      const running: Running = { execution, context, resolve, reject, offAbort: () => undefined, graceTimer: undefined };
      this.running = running;
      this.thread.ref();
      try {
        this.post({ kind: 'run', task: execution.task, payload });
      } catch (error) {
        this.running = null;
        reject(new SandboxError(ErrorCode.SANDBOX_NOT_CLONEABLE, `the payload cannot cross to the sandbox: ${(error as Error).message}`, { retryable: false }));
        return;
      }
      running.offAbort = execution.onAbort(() => this.abort(running));
      if (execution.abortReason) this.abort(running);
    });
  }

  /** Ends the thread (an idle one, or at the worker's stop); a run in progress rejects with `reason`. */
  terminate(reason: TaskAbortedError | 'idle'): void {
    if (this.ended || this.terminatedBy) return;
    this.terminatedBy = reason;
    void this.thread.terminate();
  }

  /** While idle the thread keeps no process alive. */
  unref(): void {
    this.thread.unref();
  }

  private abort(running: Running): void {
    const reason = running.execution.abortReason!;
    this.post({ kind: 'abort', code: reason.code as AbortCode, message: reason.message });
    // Another worker may own a lost lease's task soon: its thread gets no more grace than the lease has left.
    const graceMs = reason.code === 'LEASE_LOST' ? Math.min(this.options.terminateGraceMs, this.options.lostLeaseGraceMs) : this.options.terminateGraceMs;
    if (running.graceTimer === undefined) running.graceTimer = setTimeout(() => this.terminate(reason), graceMs);
  }

  private onMessage(message: FromThread): void {
    if (message.kind === 'ready') return this.markReady?.();
    if (message.kind === 'loadFailed') {
      this.failReady?.(fromWire(message.error));
      void this.thread.terminate();
      return;
    }
    if (message.kind === 'stepDone') {
      const waiter = this.stepWaiters.get(message.callId);
      this.stepWaiters.delete(message.callId);
      if (message.ok) waiter?.resolve(message.value);
      else waiter?.reject(fromWire(message.error));
      return;
    }
    const running = this.running;
    if (!running) return;
    if (message.kind === 'progress') running.context.reportProgress(message.progress);
    else if (message.kind === 'log') {
      if (TASK_LOG_LEVELS.includes(message.level)) running.context.log[message.level](message.message as string, message.fields as Record<string, unknown>);
    } else if (message.kind === 'call') void this.answer(running, message);
    else {
      this.settle(running);
      if (message.ok) running.resolve(message.value);
      else running.reject(fromWire(message.error));
    }
  }

  private async answer(running: Running, call: Extract<FromThread, { kind: 'call' }>): Promise<void> {
    const { context } = running;
    try {
      let value: unknown;
      if (call.method === 'checkCancellation') value = await context.checkCancellation();
      else if (call.method === 'parents') value = await context.parents();
      else if (call.method === 'children') value = await context.children();
      else if (call.method === 'fence') value = await context.fence();
      else value = await context.step(call.name, () => this.runStep(call.callId));
      if (this.running === running) this.post({ kind: 'reply', callId: call.callId, ok: true, value });
    } catch (error) {
      if (this.running === running) this.post({ kind: 'reply', callId: call.callId, ok: false, error: toWire(error) });
    }
  }

  /** The step's fn runs in the thread; its result comes back here to be recorded. */
  private runStep(callId: number): Promise<unknown> {
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => {
      this.stepWaiters.set(callId, { resolve, reject });
      this.post({ kind: 'runStep', callId });
    });
  }

  private settle(running: Running): void {
    clearTimeout(running.graceTimer);
    running.offAbort();
    this.running = null;
  }

  private onThreadExit(code: number): void {
    this.ended = this.whyEnded(code);
    this.failReady?.(this.ended);
    for (const waiter of this.stepWaiters.values()) waiter.reject(this.ended);
    this.stepWaiters.clear();
    const running = this.running;
    if (running) {
      this.settle(running);
      running.reject(this.terminatedBy && this.terminatedBy !== 'idle' ? this.terminatedBy : this.ended);
    }
    this.onExit(this);
    this.markExited();
  }

  private whyEnded(code: number): Error {
    const error = this.lastError as { code?: string; name?: string } | null;
    if (error?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      const limit = this.options.maxOldGenerationSizeMb === undefined ? '' : ` (maxOldGenerationSizeMb ${this.options.maxOldGenerationSizeMb})`;
      return new SandboxError(ErrorCode.SANDBOX_OUT_OF_MEMORY, `the sandboxed handler ran out of memory${limit}; its thread was stopped`, {
        retryable: true,
        cause: error,
      });
    }
    if (this.terminatedBy) return new SandboxError(ErrorCode.SANDBOX_CRASHED, 'the sandbox thread was terminated', { retryable: true });
    // The error's message may hold payload data: its name and the exit code only (exposeErrorMessages does not reach here).
    const what = error ? `an uncaught ${error.name ?? 'error'}` : `exit code ${code}`;
    return new SandboxError(ErrorCode.SANDBOX_CRASHED, `the sandbox thread ended without an answer (${what})`, { retryable: true, cause: error ?? undefined });
  }

  private post(message: ToThread): void {
    if (this.ended === null) this.thread.postMessage(message);
  }
}
