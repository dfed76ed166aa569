/**
 * Retention cleanup: terminal tasks finished before a cut-off are deleted in
 * batches with their attempts and failures (dead letters archived first); on
 * PostgreSQL with historyMoveAfterMs, older days of the partitioned history
 * are dropped and finished tasks moved there (store/postgres/history.ts).
 * Safe while workers run: only terminal rows are touched, re-checked at delete.
 * The trail of adaptive limit changes older than the cut-off goes too.
 * The cut-off and batch loop are shared with the dead-letter clean.
 */
import { ValidationError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { adaptiveStoreOf } from '../store/adaptive.js';
import { bulkStoreOf } from '../store/bulk.js';
import { cleanQueueHistory, historyRetentionOf, type QueueHistoryRetention } from './queue-history.js';
import type { PurgeResult, Store } from '../store/types.js';

export interface CleanupOptions extends QueueHistoryRetention {
  /** Keep this many days (≥ 1)… */
  retentionDays?: number;
  /** …or give the cut-off itself. */
  finishedBefore?: Date;
  /** Rows per transaction, 1–10000. Default 500. */
  batchSize?: number;
  /** Stop after this many batches (a bounded run); default: until nothing is left. */
  maxBatches?: number;
  /** Called after each batch with the running totals (progress bars). */
  onBatch?: (total: PurgeResult) => void;
}

/** What a cleanup removed: the purge's totals, and the adaptive limits' trail rows (absent: none). */
export interface CleanupResult extends PurgeResult {
  limitChanges?: number;
  /** Bulk operations that ended before the cut-off, removed (absent: none). */
  bulkOperations?: number;
  /** Queue history: hours of minute rows rolled up into hour rows, and hour rows removed (absent: none). */
  historyHoursRolledUp?: number;
  historyHourRowsRemoved?: number;
}

export async function cleanup(store: Store, options: CleanupOptions): Promise<CleanupResult> {
  historyRetentionOf(options ?? {});
  const cutoff = await retentionCutoff(store, options?.retentionDays, options?.finishedBefore, {
    name: 'cleanup',
    before: 'finishedBefore',
    minDays: 1,
    why: 'a retention of 0 would delete tasks that just finished',
  });
  const total: CleanupResult = { tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0 };
  await inBatches(options, async (batchSize) => {
    const result = await store.purgeTerminalTasks({ finishedBefore: cutoff, batchSize });
    total.tasks += result.tasks;
    total.attempts += result.attempts;
    total.failures += result.failures;
    total.deadLettersArchived += result.deadLettersArchived;
    // Partitioned history (PostgreSQL): a batch also moves tasks, and a dropped day counts all its rows at once.
    if (result.tasksMoved !== undefined) total.tasksMoved = (total.tasksMoved ?? 0) + result.tasksMoved;
    if (result.historyPartitionsDropped !== undefined) total.historyPartitionsDropped = (total.historyPartitionsDropped ?? 0) + result.historyPartitionsDropped;
    options.onBatch?.({ ...total });
    // Partitioned history drops one day per call: after a drop, call again (the next day may be due too, however few rows).
    if ((result.historyPartitionsDropped ?? 0) > 0) return Math.max(batchSize, result.tasks);
    return result.tasks + (result.tasksMoved ?? 0);
  });
  await releaseOrphanedSequences(store);
  // The adaptive limits' trail (a row per change, not per task) ages out with the same cut-off, in one statement.
  const limitChanges = await (await adaptiveStoreOf(store)).purgeLimitChanges({ before: cutoff });
  if (limitChanges > 0) total.limitChanges = limitChanges;
  const bulkOperations = await (await bulkStoreOf(store)).purge(cutoff);
  if (bulkOperations > 0) total.bulkOperations = bulkOperations;
  // Queue history ages by its own retentions (minutes, then hours), not the tasks' cut-off.
  const history = await cleanQueueHistory(store, options);
  if (history.hoursRolledUp > 0) total.historyHoursRolledUp = history.hoursRolledUp;
  if (history.hourRowsRemoved > 0) total.historyHourRowsRemoved = history.hourRowsRemoved;
  return total;
}

/**
 * A key whose head was removed (a dead-lettered head past retention) has
 * nothing left to release its next task: cleanup releases it (rules/sequences.ts).
 */
async function releaseOrphanedSequences(store: Store): Promise<void> {
  for (;;) {
    const keys = (await store.listSequences({ scope: Scope.global(), limit: 1000 })).filter((s) => s.head === null).map((s) => s.sequenceKey);
    if (keys.length === 0 || (await store.releaseSequences({ keys })).released.length === 0) return;
  }
}

/**
 * The cut-off of a retention: `retentionDays` before the database clock, or a
 * Date given under the name `rule.before` — exactly one of the two.
 */
export async function retentionCutoff(
  store: Store,
  retentionDays: number | undefined,
  before: Date | undefined,
  rule: { name: string; before: string; minDays: number; why: string },
): Promise<Date> {
  if ((retentionDays === undefined) === (before === undefined)) {
    throw new ValidationError(`${rule.name} needs exactly one of retentionDays or ${rule.before}`, 'retentionDays');
  }
  if (retentionDays !== undefined && (typeof retentionDays !== 'number' || !Number.isFinite(retentionDays) || retentionDays < rule.minDays)) {
    throw new ValidationError(`retentionDays must be at least ${rule.minDays}, got ${String(retentionDays)}: ${rule.why}`, 'retentionDays');
  }
  if (before !== undefined) {
    if (!(before instanceof Date) || Number.isNaN(before.getTime())) throw new ValidationError(`${rule.before} must be a valid Date`, rule.before);
    return before;
  }
  return new Date((await store.now()).getTime() - retentionDays! * 86_400_000);
}

/**
 * Runs `batch` (which answers how many rows it handled) until a batch comes
 * back short or `maxBatches` ran; returns how many batches ran.
 */
export async function inBatches(options: { batchSize?: number; maxBatches?: number }, batch: (batchSize: number) => Promise<number>): Promise<number> {
  const batchSize = options.batchSize ?? 500;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000)
    throw new ValidationError('batchSize must be an integer from 1 to 10000', 'batchSize');
  const maxBatches = options.maxBatches ?? Infinity;
  if (maxBatches !== Infinity && (!Number.isInteger(maxBatches) || maxBatches < 1))
    throw new ValidationError('maxBatches must be a positive integer', 'maxBatches');
  let batches = 0;
  while (batches < maxBatches) {
    batches += 1;
    if ((await batch(batchSize)) < batchSize) break;
  }
  return batches;
}
