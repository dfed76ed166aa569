/**
 * What a handler sees of its execution: identity, an AbortSignal, progress
 * reporting throttled by time and count, and a cancellation check.
 */
import type { Task, TaskProgress } from '../core/task.js';
import type { AbortSource } from './execution.js';

export interface TaskContext {
  readonly taskId: string;
  readonly taskType: string;
  /** 1-based number of this attempt in the task's life. */
  readonly attempt: number;
  readonly owner: string | null;
  readonly traceId: string | null;
  /** The task row as claimed. */
  readonly task: Task;
  /** Fires on cancellation, timeout, lease loss and forced shutdown; its reason is a TaskAbortedError. */
  readonly signal: AbortSignal;
  /** Records progress; written at most every flush interval or count threshold, and once more at the end. */
  reportProgress(progress: Partial<TaskProgress>): void;
  /** Throws the abort reason if the signal fired or a cancellation was requested (asks the store at most once per interval). */
  checkCancellation(): Promise<void>;
  /** Throws at once if the signal fired; never asks the store. */
  throwIfAborted(): void;
}

export interface ProgressSink {
  /** Writes progress (fenced); false when the lease is gone. */
  save(progress: TaskProgress): Promise<boolean>;
  /** Asks the store whether a cancellation was requested; aborts the signal if so. */
  pollCancellation(): Promise<void>;
}

export interface ContextOptions {
  flushIntervalMs: number;
  flushThreshold: number;
  cancelCheckIntervalMs: number;
  now: () => number;
}

export class ExecutionContext implements TaskContext {
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

  constructor(
    readonly task: Task,
    private readonly abortSource: AbortSource,
    private readonly sink: ProgressSink,
    private readonly options: ContextOptions,
  ) {
    this.taskId = task.id;
    this.taskType = task.taskType;
    this.attempt = task.attemptCount;
    this.owner = task.owner;
    this.traceId = task.traceId;
    this.latest = task.progress;
    this.lastFlushAt = options.now();
  }

  get signal(): AbortSignal {
    return this.abortSource.signal;
  }

  /** The last progress reported, for the final write with the outcome. */
  get finalProgress(): TaskProgress | null {
    return this.latest;
  }

  reportProgress(progress: Partial<TaskProgress>): void {
    const base = this.latest ?? { total: 0, processed: 0, succeeded: 0, failed: 0, skipped: 0, message: null };
    this.latest = { ...base, ...progress };
    const now = this.options.now();
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
    this.lastFlushAt = this.options.now();
    this.lastFlushedProcessed = progress.processed;
    this.flushing = this.sink
      .save(progress)
      .catch(() => undefined) // a failed progress write is not the task's failure; the heartbeat judges the lease
      .then(() => {
        this.flushing = null;
        if (this.dirty) {
          this.dirty = false;
          this.flush();
        }
      });
  }

  /** Waits for any progress write in flight (the outcome write carries the final progress). */
  async settle(): Promise<void> {
    this.dirty = false;
    while (this.flushing) await this.flushing;
  }

  async checkCancellation(): Promise<void> {
    this.throwIfAborted();
    const now = this.options.now();
    if (now - this.lastCancelCheck >= this.options.cancelCheckIntervalMs) {
      this.lastCancelCheck = now;
      await this.sink.pollCancellation();
      this.throwIfAborted();
    }
  }

  throwIfAborted(): void {
    const reason = this.abortSource.abortReason;
    if (reason) throw reason;
  }
}
