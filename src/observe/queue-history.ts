/**
 * Queue history written by the processes that see its events: a worker's started / completed / failed /
 * deadLettered events and a client's submitted ones are counted in memory per task type and minute, and each
 * closed minute is written as ONE additive upsert row per type (store/queue-history.ts) — never a statement per
 * task. A minute is written when it closes (a timer at the next minute boundary) and at stop; a write that fails
 * keeps its counts for the next flush. Reads sum the processes' rows (client.history).
 */
import type { TaskLeaseClient } from '../client/client.js';
import type { Task } from '../core/task.js';
import { addCounts, emptyCounts, historyStoreOf, type HistoryCounts, type HistoryStore } from '../store/queue-history.js';
import { bucketOf } from '../store/rules/queue-history.js';
import type { Store } from '../store/types.js';
import type { Worker } from '../worker/worker.js';
import { randomBytes } from 'node:crypto';

const MINUTE_MS = 60_000;

export interface QueueHistoryOptions {
  /** Where the rows go (the worker's or client's store). */
  store: Store;
  /** This process's name in the rows (one row per type per minute per process). Default: a random id. */
  processId?: string;
  /** The wall clock minutes are cut by (tests pass their own). Default Date.now. */
  now?: () => number;
  /** Called when a write fails (its counts are kept for the next flush). Default: ignored. */
  onError?: (error: unknown) => void;
}

export class QueueHistoryRecorder {
  readonly processId: string;
  private readonly now: () => number;
  /** minute start (ms) → task type → counts. */
  private readonly minutes = new Map<number, Map<string, HistoryCounts>>();
  private readonly unsubscribes: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  private store: Promise<HistoryStore> | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly options: QueueHistoryOptions) {
    this.processId = options.processId ?? `p-${randomBytes(6).toString('hex')}`;
    this.now = options.now ?? Date.now;
  }

  /** Counts a worker's executions; its stop writes what is left. */
  attachWorker(worker: Worker): this {
    this.unsubscribes.push(
      worker.on('started', ({ task, queueWaitMs }) => {
        const c = this.countsOf(task);
        c.started++;
        c.waitBuckets[bucketOf(queueWaitMs)]!++;
        c.waitMsSum += queueWaitMs;
      }),
      worker.on('completed', ({ task, durationMs }) => {
        const c = this.countsOf(task);
        c.succeeded++;
        c.runBuckets[bucketOf(durationMs)]!++;
        c.runMsSum += durationMs;
      }),
      worker.on('failed', ({ task, durationMs }) => {
        const c = this.countsOf(task);
        c.failed++;
        c.runBuckets[bucketOf(durationMs)]!++;
        c.runMsSum += durationMs;
      }),
      worker.on('deadLettered', ({ task }) => void this.countsOf(task).deadLettered++),
      worker.on('stopped', () => void this.flush({ all: true }).catch(() => undefined)),
    );
    return this.schedule();
  }

  /** Counts a client's submits (tasks newly created). */
  attachClient(client: TaskLeaseClient): this {
    this.unsubscribes.push(
      client.on('submitted', ({ tasks }) => {
        for (const task of tasks) this.countsOf(task).submitted++;
      }),
    );
    return this.schedule();
  }

  /** Writes the closed minutes (all: the current one too). Flushes run one at a time. */
  flush(options: { all?: boolean } = {}): Promise<void> {
    const run = this.flushing.then(() => this.write(options.all === true));
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Stops counting, writes everything left. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    await this.flush({ all: true });
  }

  private countsOf(task: Task): HistoryCounts {
    return this.slot(Math.floor(this.now() / MINUTE_MS) * MINUTE_MS, task.taskType);
  }

  /** The counts of one type in one minute, made empty on first use. */
  private slot(minute: number, taskType: string): HistoryCounts {
    let types = this.minutes.get(minute);
    if (!types) this.minutes.set(minute, (types = new Map()));
    let counts = types.get(taskType);
    if (!counts) types.set(taskType, (counts = emptyCounts()));
    return counts;
  }

  private async write(all: boolean): Promise<void> {
    const current = Math.floor(this.now() / MINUTE_MS) * MINUTE_MS;
    const rows: { minuteStart: Date; taskType: string; counts: HistoryCounts }[] = [];
    for (const [minute, types] of this.minutes) {
      if (!all && minute >= current) continue;
      this.minutes.delete(minute);
      for (const [taskType, counts] of types) rows.push({ minuteStart: new Date(minute), taskType, counts });
    }
    if (rows.length === 0) return;
    try {
      this.store ??= historyStoreOf(this.options.store);
      await (await this.store).add(this.processId, rows);
    } catch (error) {
      // Kept for the next flush: the counts are added back to their minutes.
      for (const row of rows) addCounts(this.slot(row.minuteStart.getTime(), row.taskType), row.counts);
      this.options.onError?.(error);
      throw error;
    }
  }

  /** A timer at each minute boundary (plus a moment) writes the minute that closed. */
  private schedule(): this {
    if (this.timer || this.stopped) return this;
    const wait = MINUTE_MS - (this.now() % MINUTE_MS) + 500;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush()
        .catch(() => undefined)
        .finally(() => this.schedule());
    }, wait);
    this.timer.unref();
    return this;
  }
}

/** A recorder counting what `worker` and/or `client` see into `store`'s history. */
export function recordQueueHistory(options: QueueHistoryOptions & { worker?: Worker; client?: TaskLeaseClient }): QueueHistoryRecorder {
  const recorder = new QueueHistoryRecorder(options);
  if (options.worker) recorder.attachWorker(options.worker);
  if (options.client) recorder.attachClient(options.client);
  return recorder;
}
