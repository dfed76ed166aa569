/**
 * Queue history rows (rules/queue-history.ts): additive upserts of what processes aggregated, reads summed over
 * processes, and the minute → hour roll-up with retention (client/cleanup.ts runs it). Same statements on every
 * dialect but the upsert's conflict clause: they run through SideSql.
 */
import { guardSideStore } from './base.js';
import * as rules from './rules/queue-history.js';
import { sideSqlOf, type SideSql } from './side-sql.js';
import type { Store } from './types.js';

export type HistoryGrain = 'minute' | 'hour';

/** One type's aggregate over one bucket: counters and histogram bucket counts (ADDITIVE_COLUMNS order). */
export interface HistoryCounts {
  submitted: number;
  started: number;
  succeeded: number;
  failed: number;
  deadLettered: number;
  /** Bucket counts, bounds HISTORY_BOUNDS_MS (the last open). */
  waitBuckets: number[];
  waitMsSum: number;
  runBuckets: number[];
  runMsSum: number;
}

export interface HistoryRow extends HistoryCounts {
  bucketStart: Date;
  taskType: string;
}

export function emptyCounts(): HistoryCounts {
  return {
    submitted: 0,
    started: 0,
    succeeded: 0,
    failed: 0,
    deadLettered: 0,
    waitBuckets: new Array<number>(rules.HISTORY_BUCKETS).fill(0),
    waitMsSum: 0,
    runBuckets: new Array<number>(rules.HISTORY_BUCKETS).fill(0),
    runMsSum: 0,
  };
}

export function addCounts(into: HistoryCounts, from: HistoryCounts): void {
  into.submitted += from.submitted;
  into.started += from.started;
  into.succeeded += from.succeeded;
  into.failed += from.failed;
  into.deadLettered += from.deadLettered;
  into.waitMsSum += from.waitMsSum;
  into.runMsSum += from.runMsSum;
  for (let i = 0; i < rules.HISTORY_BUCKETS; i++) {
    into.waitBuckets[i]! += from.waitBuckets[i]!;
    into.runBuckets[i]! += from.runBuckets[i]!;
  }
}

function values(c: HistoryCounts): number[] {
  return [c.submitted, c.started, c.succeeded, c.failed, c.deadLettered, ...c.waitBuckets, Math.round(c.waitMsSum), ...c.runBuckets, Math.round(c.runMsSum)];
}

/** Upserts per statement: bounded so that no dialect meets its parameter limit. */
const UPSERT_CHUNK = 50;
const HOUR_MS = 3_600_000;

export class HistoryStore {
  constructor(private readonly sql: SideSql) {}

  /** Adds each row's counts to its (minute, type, process) row, creating it if need be. */
  async add(processId: string, rows: readonly { minuteStart: Date; taskType: string; counts: HistoryCounts }[]): Promise<void> {
    for (let i = 0; i < rows.length; i += UPSERT_CHUNK) {
      const chunk = rows.slice(i, i + UPSERT_CHUNK);
      const params = chunk.flatMap((r) => ['m', this.sql.time(r.minuteStart), r.taskType, processId, ...values(r.counts)]);
      await this.sql.exec('writing queue history', rules.upsertSql(this.sql, chunk.length), params);
    }
  }

  /** Rows of a grain in [from, to), summed over processes; of one type or of each type. */
  async read(params: { grain: HistoryGrain; from: Date; to: Date; taskType?: string }): Promise<HistoryRow[]> {
    const byType = params.taskType !== undefined;
    const rows = await this.sql.rows('reading queue history', rules.readSql(this.sql, byType), [
      params.grain === 'minute' ? 'm' : 'h',
      this.sql.time(params.from),
      this.sql.time(params.to),
      ...(byType ? [params.taskType] : []),
    ]);
    return rows.map((row) => {
      const n = (c: string): number => Number(row[c] ?? 0);
      const buckets = (p: string): number[] => Array.from({ length: rules.HISTORY_BUCKETS }, (_, i) => n(`${p}_b${i}`));
      return {
        bucketStart: this.sql.readTime(row.bucket_start),
        taskType: String(row.task_type),
        submitted: n('submitted'),
        started: n('started'),
        succeeded: n('succeeded'),
        failed: n('failed'),
        deadLettered: n('dead_lettered'),
        waitBuckets: buckets('wait'),
        waitMsSum: n('wait_ms_sum'),
        runBuckets: buckets('run'),
        runMsSum: n('run_ms_sum'),
      };
    });
  }

  /**
   * Minute rows of whole hours that end by `minutesBefore` are summed into hour rows and removed, in one
   * transaction per hour (at most `maxHours` hours a call); hour rows older than `hoursBefore` are removed.
   */
  async rollUp(params: { minutesBefore: Date; hoursBefore: Date; maxHours?: number }): Promise<{ hoursRolledUp: number; hourRowsRemoved: number }> {
    let hoursRolledUp = 0;
    const maxHours = params.maxHours ?? 1_000;
    while (hoursRolledUp < maxHours) {
      const rows = await this.sql.rows('finding queue history to roll up', rules.oldestMinuteSql(this.sql), []);
      const oldest = rows[0]?.oldest;
      if (oldest === null || oldest === undefined) break;
      const hour = Math.floor(this.sql.readTime(oldest).getTime() / HOUR_MS) * HOUR_MS;
      if (hour + HOUR_MS > params.minutesBefore.getTime()) break;
      const [from, to] = [new Date(hour), new Date(hour + HOUR_MS)];
      await this.sql.guarded('rolling queue history up', [
        { sql: rules.rollUpSql(this.sql), values: [this.sql.time(from), this.sql.time(from), this.sql.time(to)], expect: 'any' },
        { sql: `${rules.removeSql(this.sql)} AND bucket_start >= ?`, values: ['m', this.sql.time(to), this.sql.time(from)], expect: 'any' },
      ]);
      hoursRolledUp++;
    }
    const hourRowsRemoved = await this.sql.exec('removing old queue history', rules.removeSql(this.sql), ['h', this.sql.time(params.hoursBefore)]);
    return { hoursRolledUp, hourRowsRemoved };
  }
}

/** The HistoryStore on the same database (and connections) as `store`, guarded like the store's own methods. */
export async function historyStoreOf(store: Store): Promise<HistoryStore> {
  return guardSideStore(store, new HistoryStore(await sideSqlOf(store)));
}
