/**
 * Per-task logs (ctx.log, worker/logs.ts): the rules every store keeps for
 * system_async_task_log.
 *
 * - Lines are written in batches, only under the lease's fence (as progress
 *   is, leases.ts): mid-attempt with an unexpired lease, at the attempt's end
 *   with the fence alone (as the outcome). The task row is locked (SQLite: the
 *   write lock) while the fence is judged: a worker that lost its lease writes
 *   no line.
 * - seq numbers the task's lines (1, 2, … across attempts), counted under the
 *   task row's lock: it orders a listing and pages it (afterSeq).
 * - Bounds: after a batch, an attempt keeps at most maxLinesPerAttempt lines
 *   and the task at most maxLinesPerTask; the oldest go first (of the attempt,
 *   then of the task's oldest attempts). Lines the worker dropped from its
 *   buffer before writing them count too (they are given seqs, never rows).
 * - One marker row per attempt that lost lines: `dropped` > 0 is how many;
 *   its seq is the newest dropped line's, so it sorts where they were.
 */
import type { TaskLogLevel } from '../../core/logs.js';

export const LOG_MARKER_LEVEL: TaskLogLevel = 'warn';

/** The text of an attempt's drop marker. */
export function logMarkerMessage(attempt: number, dropped: number): string {
  return `${dropped} earlier log line${dropped === 1 ? '' : 's'} of attempt ${attempt} dropped (log bounds: maxLogLinesPerAttempt, maxLogLinesPerTask)`;
}

export function logMarkerFieldsJson(dropped: number): string {
  return JSON.stringify({ dropped });
}

/** Per attempt of a task, before a batch: its kept lines (markers not counted) and the highest seq it used (markers too). */
export interface LogAttemptStats {
  attempt: number;
  lines: number;
  maxSeq: number;
}

export interface LogAppendPlan {
  /** The seq of each line of the batch, in order. */
  seqs: number[];
  /** Per attempt: how many of its oldest kept lines to delete; `phantom` lines the worker dropped unwritten (seqs up to `phantomThroughSeq`). */
  drops: { attempt: number; oldest: number; phantom: number; phantomThroughSeq: number }[];
}

/** What a batch of `count` lines (after `bufferDropped` lines the worker dropped) does to the task's logs. */
export function planLogAppend(
  stats: readonly LogAttemptStats[],
  attempt: number,
  count: number,
  bufferDropped: number,
  bounds: { maxLinesPerAttempt: number; maxLinesPerTask: number },
): LogAppendPlan {
  const base = stats.reduce((max, row) => Math.max(max, row.maxSeq), 0);
  const seqs = Array.from({ length: count }, (_, i) => base + bufferDropped + i + 1);
  const kept = new Map(stats.map((row) => [row.attempt, row.lines]));
  kept.set(attempt, (kept.get(attempt) ?? 0) + count);
  const drops = new Map<number, number>();
  const own = kept.get(attempt)! - bounds.maxLinesPerAttempt;
  if (own > 0) {
    drops.set(attempt, own);
    kept.set(attempt, bounds.maxLinesPerAttempt);
  }
  let total = [...kept.values()].reduce((sum, n) => sum + n, 0);
  // The task's oldest lines are its oldest attempts' (seqs grow with attempts); the current one is within its bound.
  for (const row of [...stats].sort((a, b) => a.maxSeq - b.maxSeq)) {
    if (total <= bounds.maxLinesPerTask) break;
    if (row.attempt === attempt) continue;
    const take = Math.min(kept.get(row.attempt) ?? 0, total - bounds.maxLinesPerTask);
    if (take <= 0) continue;
    drops.set(row.attempt, (drops.get(row.attempt) ?? 0) + take);
    kept.set(row.attempt, (kept.get(row.attempt) ?? 0) - take);
    total -= take;
  }
  const plan: LogAppendPlan = { seqs, drops: [] };
  for (const [a, oldest] of drops) plan.drops.push({ attempt: a, oldest, phantom: 0, phantomThroughSeq: 0 });
  if (bufferDropped > 0) {
    const mine = plan.drops.find((drop) => drop.attempt === attempt);
    if (mine) [mine.phantom, mine.phantomThroughSeq] = [bufferDropped, base + bufferDropped];
    else plan.drops.push({ attempt, oldest: 0, phantom: bufferDropped, phantomThroughSeq: base + bufferDropped });
  }
  return plan;
}

/** Order of a log listing: as logged. */
export const LOG_ORDER_SQL = 'seq';

/** A batch longer than the attempt's bound keeps its newest lines; the rest count as dropped unwritten. */
export function boundLogBatch<T>(lines: readonly T[], bufferDropped: number, maxLinesPerAttempt: number): { lines: readonly T[]; bufferDropped: number } {
  const over = lines.length - maxLinesPerAttempt;
  return over > 0 ? { lines: lines.slice(over), bufferDropped: bufferDropped + over } : { lines, bufferDropped };
}
