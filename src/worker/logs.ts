/**
 * Per-task logs (ctx.log): the worker's service for them, one per worker,
 * shared by every execution (core/logs.ts: bounds and redaction;
 * store/rules/logs.ts: what a store keeps).
 *
 * - A line is bounded and redacted at the call, announced (`logged`: the
 *   process log of observe/logging.ts writes it) and buffered with its
 *   execution. Nothing is made for an execution that never logs: the drain
 *   of handlers that do not log is unchanged.
 * - The buffer holds at most maxLogLinesPerAttempt lines; older ones are
 *   dropped and counted (the store's marker says how many).
 * - Written in batches: with each progress write, when LOG_FLUSH_LINES lines
 *   wait or the progress flush interval passed since the last batch, and once
 *   at the attempt's end, before its outcome is written. Fenced by the lease
 *   (mid-attempt: a live lease too); a worker that lost its lease writes no
 *   line, and a batch the store refuses is not tried again.
 */
import { makeLogLine, logRedaction, type LogBuffer, type LogLineBounds, type LogRedaction, type TaskLogLevel } from '../core/logs.js';
import type { WorkerStore } from '../store/types.js';
import type { Announcer } from './events.js';
import type { Execution } from './execution.js';

/** Lines waiting that start a batch without waiting for the next progress write. */
export const LOG_FLUSH_LINES = 50;

export interface LogOptions {
  maxLogLinesPerAttempt: number;
  maxLogLinesPerTask: number;
  maxLogMessageBytes: number;
  maxLogFieldsBytes: number;
  logRedactKeys: readonly string[];
  exposeErrorMessages: boolean;
  progressFlushIntervalMs: number;
  clock: { now(): number };
}

/** The worker's ctx.log service: each execution's lines buffered on it (execution.logs) and written in batches. */
export class LogKeeper {
  private readonly redaction: LogRedaction;
  private readonly bounds: LogLineBounds;

  constructor(
    private readonly store: Pick<WorkerStore, 'appendTaskLogs'>,
    private readonly options: LogOptions,
    private readonly events: Announcer,
  ) {
    this.redaction = logRedaction(options.logRedactKeys, options.exposeErrorMessages);
    this.bounds = { maxMessageBytes: options.maxLogMessageBytes, maxFieldsBytes: options.maxLogFieldsBytes };
  }

  log(execution: Execution, level: TaskLogLevel, message: unknown, fields: unknown): void {
    const { line, fields: redacted } = makeLogLine(level, message, fields, this.redaction, this.bounds, new Date());
    if (this.events.listening('logged')) this.events.emit('logged', { task: execution.task, level, message: line.message, fields: redacted });
    // A line logged after the attempt's end, its lease, or its ctx.complete(tx) (the handler's transaction holds the
    // task row and the fence ends with its commit) has nowhere to go but the process log.
    if (execution.state !== 'running' || execution.abortReason?.code === 'LEASE_LOST') return;
    const buffer = (execution.logs ??= { pending: [], dropped: 0, writing: null, lastWriteAt: this.options.clock.now() });
    buffer.pending.push(line);
    if (buffer.pending.length > this.options.maxLogLinesPerAttempt) {
      buffer.pending.shift();
      buffer.dropped += 1;
    }
    const due = this.options.clock.now() - buffer.lastWriteAt >= this.options.progressFlushIntervalMs;
    if (buffer.pending.length >= LOG_FLUSH_LINES || due) void this.flush(execution, false);
  }

  /**
   * Writes what waits, after any batch in flight; `final`: the attempt's end (the fence alone). A mid-attempt flush
   * leaves what was logged meanwhile to the next one unless `all` (before ctx.complete(tx) writes the outcome).
   * Never throws; null: the handler never logged.
   */
  flush(execution: Execution, final: boolean, all = final): Promise<void> | null {
    const buffer = execution.logs;
    if (!buffer) return null;
    if (!all && buffer.writing) return buffer.writing; // the batch in flight is followed by the next flush
    const previous = buffer.writing ?? Promise.resolve();
    const tracked: Promise<void> = previous
      .then(() => this.write(execution, buffer, final))
      .finally(() => {
        if (buffer.writing === tracked) buffer.writing = null;
      });
    buffer.writing = tracked;
    return tracked;
  }

  private async write(execution: Execution, buffer: LogBuffer, final: boolean): Promise<void> {
    if (buffer.pending.length === 0 && buffer.dropped === 0) return;
    const lines = buffer.pending.splice(0);
    const dropped = buffer.dropped;
    buffer.dropped = 0;
    buffer.lastWriteAt = this.options.clock.now();
    if (execution.abortReason?.code === 'LEASE_LOST' || execution.isFinal) return; // refused anyway: no round trip
    try {
      await this.store.appendTaskLogs({
        lease: execution.lease,
        lines,
        bufferDropped: dropped,
        final,
        maxLinesPerAttempt: this.options.maxLogLinesPerAttempt,
        maxLinesPerTask: this.options.maxLogLinesPerTask,
      });
      // A refused batch (false) means the lease is gone: the heartbeat or the outcome write tells the worker.
    } catch (error) {
      this.events.emit('error', { operation: 'appendTaskLogs', error });
    }
  }
}
