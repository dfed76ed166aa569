/**
 * Retention cleanup: terminal tasks finished before a cut-off are deleted in
 * batches with their attempts and failures (dead letters archived first).
 * Safe while workers run: only terminal rows are touched, re-checked at delete.
 */
import { ValidationError } from '../core/errors.js';
import type { PurgeResult, Store } from '../store/types.js';

export interface CleanupOptions {
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

export async function cleanup(store: Store, options: CleanupOptions): Promise<PurgeResult> {
  const { retentionDays, finishedBefore } = options ?? {};
  if ((retentionDays === undefined) === (finishedBefore === undefined)) {
    throw new ValidationError('cleanup needs exactly one of retentionDays or finishedBefore', 'retentionDays');
  }
  if (retentionDays !== undefined && (typeof retentionDays !== 'number' || !Number.isFinite(retentionDays) || retentionDays < 1)) {
    throw new ValidationError(`retentionDays must be at least 1, got ${String(retentionDays)}: a retention of 0 would delete tasks that just finished`, 'retentionDays');
  }
  if (finishedBefore !== undefined && (!(finishedBefore instanceof Date) || Number.isNaN(finishedBefore.getTime()))) {
    throw new ValidationError('finishedBefore must be a valid Date', 'finishedBefore');
  }
  const batchSize = options.batchSize ?? 500;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new ValidationError('batchSize must be an integer from 1 to 10000', 'batchSize');
  const maxBatches = options.maxBatches ?? Infinity;
  const cutoff = finishedBefore ?? new Date((await store.now()).getTime() - retentionDays! * 86_400_000);
  const total: PurgeResult = { tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0 };
  for (let batch = 0; batch < maxBatches; batch++) {
    const result = await store.purgeTerminalTasks({ finishedBefore: cutoff, batchSize });
    total.tasks += result.tasks;
    total.attempts += result.attempts;
    total.failures += result.failures;
    total.deadLettersArchived += result.deadLettersArchived;
    options.onBatch?.({ ...total });
    if (result.tasks < batchSize) break;
  }
  return total;
}
