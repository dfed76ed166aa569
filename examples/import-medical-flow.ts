/**
 * The seed's medical import as a flow (issue 26): split → parts → merge →
 * report, each step a task that keeps every single-task guarantee.
 *
 *   IMPORT.MEDICAL.SPLIT  reads the header and counts the rows, then fans out one
 *                         PART per `partSize` rows (TaskResult.awaitChildren) and
 *                         waits for them, holding no lease and no slot; run again
 *                         once they have ended, it adds up their counts.
 *   IMPORT.MEDICAL.PART   imports its rows — a batch handler: up to 8 parts per
 *                         call write their valid claims in one sink.writeBatch
 *                         (one round trip to the business database), each part
 *                         with its own outcome, retry and dead letter.
 *   IMPORT.MEDICAL.MERGE  waits for the split: writes the report of the rejected
 *                         rows (its artifact) from the parts' results;
 *                         PARTIAL_SUCCESS when any row was rejected.
 *   IMPORT.MEDICAL.REPORT waits for the merge, CONTINUE: runs even when the merge
 *                         failed, and records the import's summary (what an
 *                         operator or a mail would read).
 *
 * Idempotent per row as the single-task import (examples/import-medical.ts):
 * the sink skips keys it holds, so a part retried, taken over after a crash or
 * run twice by two flows of the same file imports each claim once.
 *
 * From this repository:
 *   TASKLEASE_IMPORT_DIR=./medical-data npx tsx src/cli/main.ts worker examples/import-medical-flow.ts
 *   npx tsx src/cli/main.ts flow submit flow.json   (see submitMedicalImportFlow for the nodes)
 */
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import type { TaskLeaseClient } from '../src/client/client.js';
import type { FlowSubmission } from '../src/client/flows.js';
import { defineTask, TaskResult } from '../src/index.js';
import { checkRow, COLUMNS, parseCsv, rowKey, type ClaimRecord } from './medical-csv.js';
import { JsonLinesSink, writeReport, type Rejected } from './medical-sink.js';

export const SPLIT = 'IMPORT.MEDICAL.SPLIT';
export const PART = 'IMPORT.MEDICAL.PART';
export const MERGE = 'IMPORT.MEDICAL.MERGE';
export const REPORT = 'IMPORT.MEDICAL.REPORT';

const file = z.object({ csvPath: z.string().min(1).max(1000) });
const splitPayload = file.extend({ partSize: z.number().int().min(1).max(100_000).default(100) });
const partPayload = file.extend({ from: z.number().int().min(0), to: z.number().int().min(1) });

export interface PartResult {
  imported: number;
  skipped: number;
  rejected: Rejected[];
}
export interface SplitResult extends Omit<PartResult, 'rejected'> {
  parts: number;
  rows: number;
  rejected: Rejected[];
}

/** A sink that says which keys one write stored (JsonLinesSink does): the parts of a call count their own imports. */
export interface NewKeysSink {
  writeNew(rows: { key: string; record: ClaimRecord }[]): Promise<Set<string>>;
}

export interface MedicalImportFlowOptions {
  /** Where CSV paths are resolved, claims are stored (claims.jsonl) and reports written (reports/). */
  dataDir: string;
  sink?: NewKeysSink;
}

export function createMedicalImportFlow(options: MedicalImportFlowOptions) {
  const dataDir = resolve(options.dataDir);
  const sink = options.sink ?? new JsonLinesSink(join(dataDir, 'claims.jsonl'));
  const pathOf = (csvPath: string) => (isAbsolute(csvPath) ? csvPath : join(dataDir, csvPath));
  /** The data rows of the file (header checked), as fields; row i is line i + 2. */
  const readRows = async (csvPath: string): Promise<string[][]> => {
    const rows = parseCsv(await readFile(pathOf(csvPath), 'utf8'));
    const header = rows.shift() ?? [];
    if (header.join(',').toLowerCase() !== COLUMNS.join(',')) {
      throw Object.assign(new Error(`the header must be ${COLUMNS.join(',')}`), { name: 'CsvHeaderError', retryable: false });
    }
    return rows;
  };

  const split = defineTask({
    type: SPLIT,
    schema: splitPayload,
    maxAttempts: 3,
    async execute(ctx, payload) {
      const parts = await ctx.children();
      if (parts.length === 0) {
        const rows = (await readRows(payload.csvPath)).length;
        const children = [];
        for (let from = 0; from < rows; from += payload.partSize) {
          children.push({ type: PART, payload: { csvPath: payload.csvPath, from, to: Math.min(rows, from + payload.partSize) } });
        }
        if (children.length === 0) return TaskResult.success({ result: { parts: 0, rows: 0, imported: 0, skipped: 0, rejected: [] } });
        ctx.reportProgress({ total: children.length, processed: 0, message: `${children.length} parts` });
        return TaskResult.awaitChildren(children);
      }
      // Run again: every part has ended (a failed part would have cancelled this task: CANCEL is the default).
      const results = parts.map((p) => p.result as PartResult);
      const total: SplitResult = { parts: parts.length, rows: 0, imported: 0, skipped: 0, rejected: [] };
      for (const r of results) {
        total.imported += r.imported;
        total.skipped += r.skipped;
        total.rejected.push(...r.rejected);
      }
      total.rows = total.imported + total.skipped + total.rejected.length;
      total.rejected.sort((a, b) => a.line - b.line);
      ctx.reportProgress({ total: parts.length, processed: parts.length, succeeded: total.imported, failed: total.rejected.length, skipped: total.skipped });
      return TaskResult.success({ result: total });
    },
  });

  const part = defineTask({
    type: PART,
    schema: partPayload,
    maxAttempts: 5,
    batch: { maxSize: 8, maxWaitMs: 100 },
    async executeBatch(_ctx, tasks) {
      // Each part checks its own rows; the valid claims of every part go to the sink in one write.
      const checked = await Promise.all(
        tasks.map(async ({ payload }) => {
          const rows = (await readRows(payload.csvPath)).slice(payload.from, payload.to);
          const valid: ClaimRecord[] = [];
          const rejected: Rejected[] = [];
          rows.forEach((fields, i) => {
            const row = checkRow(fields, payload.from + i + 2); // line 1 is the header
            if (row.ok) valid.push(row.record);
            else rejected.push({ line: row.line, reason: row.reason });
          });
          return { valid, rejected };
        }),
      );
      // Written in part order, so that a claim repeated across parts counts as imported by the first.
      const owners: number[] = [];
      const rows = checked.flatMap((c, i) => c.valid.map((record) => (owners.push(i), { key: rowKey(record), record })));
      const fresh = await writeFresh(sink, rows);
      return checked.map((c, i): TaskResult => {
        const imported = owners.filter((owner, r) => owner === i && fresh.has(r)).length;
        return TaskResult.success({ result: { imported, skipped: c.valid.length - imported, rejected: c.rejected } satisfies PartResult });
      });
    },
  });

  const merge = defineTask({
    type: MERGE,
    schema: file,
    maxAttempts: 3,
    async execute(ctx, payload) {
      const [splitTask] = await ctx.parents();
      const total = splitTask!.result as SplitResult;
      const artifactId = await writeReport(join(dataDir, 'reports'), ctx.taskId, payload.csvPath, total.rejected);
      const result = { imported: total.imported, alreadyImported: total.skipped, rejected: total.rejected.length, parts: total.parts, report: artifactId };
      return total.rejected.length > 0 ? TaskResult.partial({ artifactId, result }) : TaskResult.success({ artifactId, result });
    },
  });

  const report = defineTask({
    type: REPORT,
    schema: file,
    maxAttempts: 3,
    async execute(ctx, payload) {
      const [mergeTask] = await ctx.parents();
      const summary = { csvPath: payload.csvPath, merge: mergeTask!.status, ...(mergeTask!.result as object | null), error: mergeTask!.lastErrorCode };
      await mkdir(join(dataDir, 'reports'), { recursive: true });
      const path = join(dataDir, 'reports', `summary-${ctx.taskId}.json`);
      await writeFile(path, `${JSON.stringify(summary, null, 2)}\n`);
      return TaskResult.success({ artifactId: path, result: summary });
    },
  });

  return { split, part, merge, report, tasks: [split, part, merge, report] };
}

/** The sink's write of many rows: the indexes of the rows it stored (the first row of each key new to it). */
async function writeFresh(sink: NewKeysSink, rows: { key: string; record: ClaimRecord }[]): Promise<Set<number>> {
  const stored = await sink.writeNew(rows);
  const fresh = new Set<number>();
  rows.forEach((row, i) => {
    if (stored.delete(row.key)) fresh.add(i);
  });
  return fresh;
}

/** The flow of one file: split (fanning out its parts), merge after it, report after the merge whatever it ended. */
export function submitMedicalImportFlow(
  client: TaskLeaseClient,
  csvPath: string,
  options: { partSize?: number; owner?: string } = {},
): Promise<FlowSubmission> {
  const owner = options.owner === undefined ? {} : { owner: options.owner };
  return client.submitFlow({
    nodes: [
      { key: 'split', type: SPLIT, payload: { csvPath, partSize: options.partSize ?? 100 }, ...owner },
      { key: 'merge', type: MERGE, payload: { csvPath }, dependsOn: ['split'], ...owner },
      { key: 'report', type: REPORT, payload: { csvPath }, dependsOn: [{ key: 'merge', onParentFailure: 'CONTINUE' }], ...owner },
    ],
  });
}

/** The module a worker loads: data under TASKLEASE_IMPORT_DIR (default ./medical-import). */
export const tasks = createMedicalImportFlow({ dataDir: process.env.TASKLEASE_IMPORT_DIR ?? 'medical-import' }).tasks;
