/**
 * The seed's "best practice" handler: a batched import that checks for
 * cancellation between batches, skips batches it already processed (so a
 * retry or a reclaimed task never imports a row twice), and reports progress.
 */
import { z } from 'zod';
import { defineTask, TaskResult } from '../src/index.js';

/** Stands in for the business database: which batches of which task are done. */
export class ImportLedger {
  private readonly done = new Set<string>();
  readonly rows: string[] = [];

  isBatchProcessed(taskId: string, batchId: number): boolean {
    return this.done.has(`${taskId}#${batchId}`);
  }

  /** Imports a batch and marks it done together (in real code: one transaction). */
  processBatch(taskId: string, batchId: number, rows: string[]): void {
    this.rows.push(...rows);
    this.done.add(`${taskId}#${batchId}`);
  }
}

export const importPayload = z.object({
  fileName: z.string().min(1),
  totalRows: z.number().int().positive().max(10_000_000),
  batchSize: z.number().int().positive().max(10_000).default(100),
  /** Milliseconds each batch takes, to make the demo watchable. */
  batchDelayMs: z.number().int().min(0).max(10_000).default(0),
});

export function importTask(ledger: ImportLedger) {
  return defineTask({
    type: 'patients.import',
    schema: importPayload,
    maxAttempts: 3,
    async execute(ctx, payload) {
      const { totalRows, batchSize, batchDelayMs } = payload;
      let processed = 0;
      for (let batchId = 0; processed < totalRows; batchId++) {
        await ctx.checkCancellation();
        const size = Math.min(batchSize, totalRows - processed);
        if (!ledger.isBatchProcessed(ctx.taskId, batchId)) {
          const rows = Array.from({ length: size }, (_, i) => `${payload.fileName}:${processed + i}`);
          if (batchDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, batchDelayMs));
          ledger.processBatch(ctx.taskId, batchId, rows);
        }
        processed += size;
        ctx.reportProgress({ total: totalRows, processed, succeeded: processed, message: `batch ${batchId + 1}` });
      }
      return TaskResult.success({ artifactId: `import-report-${ctx.taskId}`, result: { rows: processed } });
    },
  });
}
