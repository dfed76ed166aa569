/**
 * client.history: the queue history (observe/queue-history.ts writes it) as a series — one point per minute or
 * hour of [from, to), zeros where nothing happened, counters summed over processes (and over types unless one is
 * asked), queue-wait and run-time quantiles estimated from the fixed histogram buckets. An hour step also folds in
 * minute rows not rolled up yet; a minute step reads only minute rows (kept `historyMinuteRetentionHours`).
 * Retention: cleanup rolls minute rows up into hours and removes old hours (queueHistoryRetention below).
 */
import { ValidationError } from '../core/errors.js';
import { addCounts, emptyCounts, historyStoreOf, type HistoryCounts } from '../store/queue-history.js';
import { HISTORY_BOUNDS_MS } from '../store/rules/queue-history.js';
import type { Store } from '../store/types.js';

export type HistoryStep = 'minute' | 'hour';

export interface HistoryQuery {
  /** One type; default: all types summed. */
  taskType?: string;
  from: Date;
  to: Date;
  step: HistoryStep;
}

export interface HistoryPoint {
  /** The step's start. */
  at: Date;
  submitted: number;
  started: number;
  succeeded: number;
  /** Failed attempts (retried or not). */
  failed: number;
  deadLettered: number;
  /** Quantiles estimated from the histogram (ms; null: no observation). The last bucket (over 60 s) reads as 60 s. */
  waitP50Ms: number | null;
  waitP95Ms: number | null;
  runP50Ms: number | null;
  runP95Ms: number | null;
  /** Means (ms; null: none). */
  waitMeanMs: number | null;
  runMeanMs: number | null;
}

export interface HistorySeries {
  taskType: string | null;
  step: HistoryStep;
  from: Date;
  to: Date;
  points: HistoryPoint[];
}

const STEP_MS: Record<HistoryStep, number> = { minute: 60_000, hour: 3_600_000 };
/** A series has at most this many points (7 days of minutes is 10,080). */
export const MAX_HISTORY_POINTS = 20_000;

/** Retention of the history rows (cleanup): minute rows this long, then hour rows this long. */
export interface QueueHistoryRetention {
  /** Minute rows are rolled up into hour rows after this many hours (≥ 1). Default 48. */
  historyMinuteRetentionHours?: number;
  /** Hour rows are removed after this many days (≥ 1). Default 30. */
  historyHourRetentionDays?: number;
}

/** The quantile `q` of a histogram, linear within its bucket (the open last bucket reads as its lower bound). */
export function histogramQuantile(buckets: readonly number[], q: number): number | null {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i]!;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : HISTORY_BOUNDS_MS[i - 1]!;
      if (i >= HISTORY_BOUNDS_MS.length) return lower;
      return lower + ((HISTORY_BOUNDS_MS[i]! - lower) * (rank - seen)) / n;
    }
    seen += n;
  }
  return HISTORY_BOUNDS_MS[HISTORY_BOUNDS_MS.length - 1]!;
}

function checkDate(value: unknown, field: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new ValidationError(`history: ${field} must be a valid Date`, field);
  return value;
}

export async function readHistory(store: Store, query: HistoryQuery): Promise<HistorySeries> {
  if (typeof query !== 'object' || query === null) throw new ValidationError('history needs { from, to, step }', 'query');
  if (query.step !== 'minute' && query.step !== 'hour') throw new ValidationError(`history: step must be 'minute' or 'hour'`, 'step');
  if (query.taskType !== undefined && (typeof query.taskType !== 'string' || query.taskType.length === 0 || query.taskType.length > 255))
    throw new ValidationError('history: taskType must be a non-empty string of at most 255 characters', 'taskType');
  const stepMs = STEP_MS[query.step];
  const [asked, until] = [checkDate(query.from, 'from'), checkDate(query.to, 'to')];
  if (until.getTime() <= asked.getTime()) throw new ValidationError('history: to must be after from', 'to');
  // Whole steps: from rounded down, to rounded up.
  const from = new Date(Math.floor(asked.getTime() / stepMs) * stepMs);
  const to = new Date(Math.ceil(until.getTime() / stepMs) * stepMs);
  if ((to.getTime() - from.getTime()) / stepMs > MAX_HISTORY_POINTS)
    throw new ValidationError(`history: at most ${MAX_HISTORY_POINTS} points per series (a wider range needs step 'hour')`, 'from');
  const history = await historyStoreOf(store);
  const range = { from, to, ...(query.taskType !== undefined ? { taskType: query.taskType } : {}) };
  const rows = [...(await history.read({ grain: 'minute', ...range })), ...(query.step === 'hour' ? await history.read({ grain: 'hour', ...range }) : [])];
  const slots = new Map<number, HistoryCounts>();
  for (const row of rows) {
    const at = Math.floor(row.bucketStart.getTime() / stepMs) * stepMs;
    let into = slots.get(at);
    if (!into) slots.set(at, (into = emptyCounts()));
    addCounts(into, row);
  }
  const points: HistoryPoint[] = [];
  for (let at = from.getTime(); at < to.getTime(); at += stepMs) {
    const c = slots.get(at) ?? emptyCounts();
    const waits = c.waitBuckets.reduce((a, b) => a + b, 0);
    const runs = c.runBuckets.reduce((a, b) => a + b, 0);
    points.push({
      at: new Date(at),
      submitted: c.submitted,
      started: c.started,
      succeeded: c.succeeded,
      failed: c.failed,
      deadLettered: c.deadLettered,
      waitP50Ms: histogramQuantile(c.waitBuckets, 0.5),
      waitP95Ms: histogramQuantile(c.waitBuckets, 0.95),
      runP50Ms: histogramQuantile(c.runBuckets, 0.5),
      runP95Ms: histogramQuantile(c.runBuckets, 0.95),
      waitMeanMs: waits === 0 ? null : c.waitMsSum / waits,
      runMeanMs: runs === 0 ? null : c.runMsSum / runs,
    });
  }
  return { taskType: query.taskType ?? null, step: query.step, from, to, points };
}

/** The retentions, checked (cleanup checks them before it deletes anything). */
export function historyRetentionOf(retention: QueueHistoryRetention): { minuteHours: number; hourDays: number } {
  const minuteHours = retention.historyMinuteRetentionHours ?? 48;
  const hourDays = retention.historyHourRetentionDays ?? 30;
  if (typeof minuteHours !== 'number' || !Number.isFinite(minuteHours) || minuteHours < 1)
    throw new ValidationError('historyMinuteRetentionHours must be at least 1', 'historyMinuteRetentionHours');
  if (typeof hourDays !== 'number' || !Number.isFinite(hourDays) || hourDays < 1)
    throw new ValidationError('historyHourRetentionDays must be at least 1', 'historyHourRetentionDays');
  return { minuteHours, hourDays };
}

/** Cleanup's part: minute rows past their retention rolled up into hours, hour rows past theirs removed (database clock). */
export async function cleanQueueHistory(store: Store, retention: QueueHistoryRetention): Promise<{ hoursRolledUp: number; hourRowsRemoved: number }> {
  const { minuteHours, hourDays } = historyRetentionOf(retention);
  const now = (await store.now()).getTime();
  return (await historyStoreOf(store)).rollUp({ minutesBefore: new Date(now - minuteHours * 3_600_000), hoursBefore: new Date(now - hourDays * 86_400_000) });
}
