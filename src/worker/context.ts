/**
 * What a handler sees of its execution: identity, an AbortSignal, progress
 * reporting throttled by time and count, a cancellation check, the
 * completion inside the handler's own transaction (tx-complete.ts),
 * durable steps (steps.ts) and the fence for outside systems (fence.ts).
 */
import type { RelatedTask, TaskContext } from '../core/context.js';
import type { TaskResult } from '../core/definition.js';
import type { TaskAbortedError } from '../core/errors.js';
import type { Task, TaskProgress } from '../core/task.js';
import { replaceNul } from '../core/text.js';
import type { TaskLogger, TaskLogLevel } from '../core/logs.js';

/** What a context needs of its execution's abort state; the AbortSignal itself is made only when a handler asks for it. */
export interface AbortSource {
  readonly signal: AbortSignal;
  readonly abortReason: TaskAbortedError | null;
}

/** One per worker, shared by every context (no closures per task on the hot path): each call names its execution. */
export interface ProgressSink<Source extends AbortSource> {
  /** Writes progress (fenced); false when the lease is gone. */
  save(source: Source, progress: TaskProgress): Promise<boolean>;
  /** Asks the store whether a cancellation was requested; aborts the signal if so. */
  pollCancellation(source: Source): Promise<void>;
  /** Writes the attempt's success inside the caller's transaction (ctx.complete). */
  complete(source: Source, transaction: unknown, result: TaskResult | undefined): Promise<void>;
  /** The task's edges both ways (ctx.parents, ctx.children). */
  dependencies(taskId: string): Promise<{ parents: RelatedTask[]; children: RelatedTask[] }>;
  /** A durable step (ctx.step, steps.ts). */
  step<T>(source: Source, name: string, fn: () => T | Promise<T>): Promise<Awaited<T>>;
  /** The lease's fence once a durable fenced write confirmed it (ctx.fence, fence.ts). */
  fence(source: Source): Promise<number>;
  /** A ctx.log line (logs.ts): bounded, redacted, buffered. */
  log(source: Source, level: TaskLogLevel, message: unknown, fields: unknown): void;
  /** Writes the buffered lines (fenced); `final`: the attempt's end. Never throws; null: nothing was ever logged. */
  flushLogs(source: Source, final: boolean): Promise<void> | null;
}

/** One per worker, shared by every context. */
export interface ContextOptions {
  flushIntervalMs: number;
  flushThreshold: number;
  cancelCheckIntervalMs: number;
  clock: { now(): number };
}

export class ExecutionContext<Source extends AbortSource = AbortSource> implements TaskContext {
  readonly taskId: string;
  readonly taskType: string;
  readonly attempt: number;
  readonly owner: string | null;
  readonly traceId: string | null;
  private latest: TaskProgress | null = null;
  private lastFlushAt: number;
  private lastFlushedProcessed = 0;
  private flushing: Promise<void> | null = null;
  private dirty = false;
  private lastCancelCheck = 0;
  private logger: TaskLogger | null = null;

  constructor(
    readonly task: Task,
    private readonly abortSource: Source,
    private readonly sink: ProgressSink<Source>,
    private readonly options: ContextOptions,
  ) {
    this.taskId = task.id;
    this.taskType = task.taskType;
    this.attempt = task.attemptCount;
    this.owner = task.owner;
    this.traceId = task.traceId;
    this.latest = task.progress;
    this.lastFlushAt = options.clock.now();
  }

  get signal(): AbortSignal {
    return this.abortSource.signal;
  }

  /** ctx.log: made on first use (a handler that never logs costs nothing). */
  get log(): TaskLogger {
    this.logger ??= {
      info: (message, fields) => this.sink.log(this.abortSource, 'info', message, fields),
      warn: (message, fields) => this.sink.log(this.abortSource, 'warn', message, fields),
      error: (message, fields) => this.sink.log(this.abortSource, 'error', message, fields),
    };
    return this.logger;
  }

  /** The last progress reported, for the final write with the outcome. */
  get finalProgress(): TaskProgress | null {
    return this.latest;
  }

  reportProgress(progress: Partial<TaskProgress>): void {
    const base = this.latest ?? { total: 0, processed: 0, succeeded: 0, failed: 0, skipped: 0, message: null };
    this.latest = { ...base, ...progress };
    if (typeof this.latest.message === 'string') this.latest.message = replaceNul(this.latest.message);
    const now = this.options.clock.now();
    const dueByTime = now - this.lastFlushAt >= this.options.flushIntervalMs;
    const dueByCount = this.latest.processed - this.lastFlushedProcessed >= this.options.flushThreshold;
    if (dueByTime || dueByCount) this.flush();
  }

  /** Starts a write unless one is in flight, in which case one more follows it. */
  flush(): void {
    if (this.latest === null || this.abortSource.abortReason) return;
    if (this.flushing) {
      this.dirty = true;
      return;
    }
    const progress = this.latest;
    void this.sink.flushLogs(this.abortSource, false);
    this.lastFlushAt = this.options.clock.now();
    this.lastFlushedProcessed = progress.processed;
    this.flushing = this.sink
      .save(this.abortSource, progress)
      .catch(() => undefined) // a failed progress write is not the task's failure; the heartbeat judges the lease
      .then(() => {
        this.flushing = null;
        if (this.dirty) {
          this.dirty = false;
          this.flush();
        }
      });
  }

  /** Waits for any progress write in flight (the outcome write carries the final progress), then writes the buffered log lines. */
  async settle(): Promise<void> {
    this.dirty = false;
    while (this.flushing) await this.flushing;
    // Only a handler that logged waits here: the others' end costs no extra tick.
    const logs = this.sink.flushLogs(this.abortSource, true);
    if (logs) await logs;
  }

  async checkCancellation(): Promise<void> {
    this.throwIfAborted();
    const now = this.options.clock.now();
    if (now - this.lastCancelCheck >= this.options.cancelCheckIntervalMs) {
      this.lastCancelCheck = now;
      await this.sink.pollCancellation(this.abortSource);
      this.throwIfAborted();
    }
  }

  complete(transaction: unknown, result?: TaskResult): Promise<void> {
    return this.sink.complete(this.abortSource, transaction, result);
  }

  async parents(): Promise<RelatedTask[]> {
    return (await this.related()).parents;
  }

  async children(): Promise<RelatedTask[]> {
    return (await this.related()).children;
  }

  private relatedRead: Promise<{ parents: RelatedTask[]; children: RelatedTask[] }> | null = null;
  private related(): Promise<{ parents: RelatedTask[]; children: RelatedTask[] }> {
    this.relatedRead ??= this.sink.dependencies(this.taskId).catch((error: unknown) => {
      this.relatedRead = null;
      throw error;
    });
    return this.relatedRead;
  }

  step<T>(name: string, fn: () => T | Promise<T>): Promise<Awaited<T>> {
    return this.sink.step(this.abortSource, name, fn);
  }

  private fenced: Promise<number> | null = null;
  fence(): Promise<number> {
    // One confirmation per attempt: a fence stays valid for the attempt (a lost lease is the receiver's to refuse).
    this.fenced ??= this.sink.fence(this.abortSource).catch((error: unknown) => {
      this.fenced = null;
      throw error;
    });
    return this.fenced;
  }

  throwIfAborted(): void {
    const reason = this.abortSource.abortReason;
    if (reason) throw reason;
  }
}
