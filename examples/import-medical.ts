/**
 * The import the seed centres on (IMPORT.MEDICAL): a CSV of insurance claims
 * read in batches, every row checked, each batch written with its idempotent
 * marks, progress reported, a cancellation check before every batch, and a
 * report of the rejected rows as the task's artifact (PARTIAL_SUCCESS when
 * any row was rejected).
 *
 * Idempotent per row: a claim is keyed by patient, insurance number and visit
 * date; the sink skips keys it holds already. A retried attempt, a task
 * another worker took over after a lease expired, or the same file submitted
 * twice never imports a claim twice.
 *
 * Run it as a task module (the default export is the definition); from this
 * repository, the CLI through tsx (a TypeScript module):
 *   TASKLEASE_IMPORT_DIR=./medical-data npx tsx src/cli/main.ts worker examples/import-medical.ts
 *   npx tsx src/cli/main.ts submit IMPORT.MEDICAL '{"csvPath": "claims.csv"}'
 * The rejected rows are reported in <dir>/reports/import-medical-<task id>.csv
 * (the task's artifactId); the claims land in <dir>/claims.jsonl.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { defineTask, TaskResult, type TaskContext } from '../src/index.js';
import { checkRow, COLUMNS, parseCsv, rowKey, type ClaimRecord } from './medical-csv.js';
import { JsonLinesSink, writeReport, type ClaimSink, type Rejected } from './medical-sink.js';

export const IMPORT_MEDICAL = 'IMPORT.MEDICAL';

export const importMedicalPayload = z.object({
  /** The CSV file, relative to the data directory unless absolute. */
  csvPath: z.string().min(1).max(1000),
  batchSize: z.number().int().min(1).max(10_000).default(500),
});

export interface MedicalImportOptions {
  /** Where CSV paths are resolved, claims are stored (claims.jsonl) and reports are written (reports/). */
  dataDir: string;
  /** Where imported claims go. Default: a JSON-lines file in dataDir. */
  sink?: ClaimSink;
}

export function createMedicalImportTask(options: MedicalImportOptions) {
  const dataDir = resolve(options.dataDir);
  const sink = options.sink ?? new JsonLinesSink(join(dataDir, 'claims.jsonl'));
  return defineTask({
    type: IMPORT_MEDICAL,
    schema: importMedicalPayload,
    maxAttempts: 3,
    async execute(ctx, payload) {
      const csvPath = isAbsolute(payload.csvPath) ? payload.csvPath : join(dataDir, payload.csvPath);
      const rows = parseCsv(await readFile(csvPath, 'utf8'));
      const header = rows.shift() ?? [];
      if (header.join(',').toLowerCase() !== COLUMNS.join(',')) {
        throw Object.assign(new Error(`the header must be ${COLUMNS.join(',')}`), { name: 'CsvHeaderError', retryable: false });
      }
      const counts = await importInBatches(ctx, rows, payload.batchSize, sink);
      const artifactId = await writeReport(join(dataDir, 'reports'), ctx.taskId, payload.csvPath, counts.rejected);
      const result = { imported: counts.imported, alreadyImported: counts.skipped, rejected: counts.rejected.length, report: artifactId };
      return counts.rejected.length > 0 ? TaskResult.partial({ artifactId, result }) : TaskResult.success({ artifactId, result });
    },
  });
}

interface Counts {
  imported: number;
  skipped: number;
  rejected: Rejected[];
}

/** Cancellation is checked before each batch: a batch is the unit that is either written whole or not at all. */
async function importInBatches(ctx: TaskContext, rows: string[][], batchSize: number, sink: ClaimSink): Promise<Counts> {
  const counts: Counts = { imported: 0, skipped: 0, rejected: [] };
  for (let start = 0; start < rows.length; start += batchSize) {
    await ctx.checkCancellation();
    const valid: ClaimRecord[] = [];
    rows.slice(start, start + batchSize).forEach((fields, i) => {
      const checked = checkRow(fields, start + i + 2); // line 1 is the header
      if (checked.ok) valid.push(checked.record);
      else counts.rejected.push({ line: checked.line, reason: checked.reason });
    });
    const written = await sink.writeBatch(valid.map((record) => ({ key: rowKey(record), record })));
    counts.imported += written;
    counts.skipped += valid.length - written;
    const processed = Math.min(start + batchSize, rows.length);
    ctx.reportProgress({
      total: rows.length,
      processed,
      succeeded: counts.imported,
      failed: counts.rejected.length,
      skipped: counts.skipped,
      message: `batch ${start / batchSize + 1} of ${Math.ceil(rows.length / batchSize)}`,
    });
  }
  return counts;
}

/** The module a worker loads: data under TASKLEASE_IMPORT_DIR (default ./medical-import). */
const importMedical = createMedicalImportTask({ dataDir: process.env.TASKLEASE_IMPORT_DIR ?? 'medical-import' });
export default importMedical;
export const tasks = [importMedical];
