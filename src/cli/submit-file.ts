/**
 * Bulk submit from a file: records are streamed (memory stays flat for any
 * file size) and submitted `batchSize` at a time with submitMany — one
 * statement per batch, all or nothing per batch. A bad record stops the run;
 * the message names its line and how many tasks earlier batches submitted.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TaskLeaseClient } from '../client/client.js';
import type { SubmitOptions, SubmitRequest } from '../client/submit.js';
import { TaskLeaseError, ValidationError } from '../core/errors.js';
import type { CommandContext } from './context.js';
import { UsageError } from './exit-codes.js';
import { startProgress, type Progress } from './progress.js';
import { formatOfPath, readRecords, type PayloadRecord } from './records.js';
import { submitClient, submitOptions, type SubmitFlags } from './submit-options.js';

export interface FileSubmitSummary {
  file: string;
  taskType: string;
  /** Records read and submitted. */
  submitted: number;
  /** New tasks (the rest already existed under their idempotency key). */
  created: number;
  existing: number;
  batches: number;
  elapsedMs: number;
}

export async function submitFile(ctx: CommandContext, flags: SubmitFlags & { type: string }, extraArgument: string | undefined): Promise<void> {
  if (extraArgument !== undefined) throw new UsageError('with --file, payloads come from the file: drop the payload argument', 'payload');
  if (flags.idempotencyKey !== undefined) throw new UsageError('with --file, use --idempotency-key-field: one key cannot serve many tasks', 'idempotencyKey');
  const path = resolve(ctx.io.cwd, flags.file!);
  if (!existsSync(path) || !statSync(path).isFile()) throw new UsageError(`file ${flags.file} does not exist`, 'file');
  const format = flags.format ?? formatOfPath(path);
  if (!format) throw new UsageError(`cannot tell the format of ${flags.file} from its name: give --format jsonl or --format csv`, 'format');
  const shared = submitOptions(ctx, flags);
  const client = await submitClient(ctx, flags, flags.type);
  const summary: FileSubmitSummary = { file: flags.file!, taskType: flags.type, submitted: 0, created: 0, existing: 0, batches: 0, elapsedMs: 0 };
  const started = Date.now();
  const progress = startProgress(ctx.io, {
    total: statSync(path).size,
    format: 'submit |{bar}| {percentage}% | {tasks} tasks | {eta_formatted} left',
    fields: { tasks: 0 },
  });
  try {
    let batch: PayloadRecord[] = [];
    for await (const record of readRecords(path, format)) {
      batch.push(record);
      if (batch.length < flags.batchSize) continue;
      await submitBatch(client, batch, { flags, shared, summary, progress });
      batch = [];
    }
    if (batch.length > 0) await submitBatch(client, batch, { flags, shared, summary, progress });
  } catch (error) {
    if (summary.submitted > 0) ctx.output.note(`stopped: ${summary.submitted} tasks from earlier lines were submitted (${summary.created} new)`);
    throw error;
  } finally {
    progress.stop();
  }
  summary.elapsedMs = Date.now() - started;
  ctx.output.result(
    summary,
    () =>
      `submitted ${summary.submitted} ${summary.taskType} tasks from ${summary.file} in ${summary.batches} batches (${summary.created} new, ${summary.existing} already there) in ${(summary.elapsedMs / 1000).toFixed(2)} s`,
  );
}

async function submitBatch(
  client: TaskLeaseClient,
  batch: readonly PayloadRecord[],
  run: { flags: SubmitFlags & { type: string }; shared: SubmitOptions; summary: FileSubmitSummary; progress: Progress },
): Promise<void> {
  const requests = batch.map((record) => request(record, run.flags, run.shared));
  let results;
  try {
    results = await client.submitMany(requests);
  } catch (error) {
    throw locate(error, batch);
  }
  const created = results.filter((r) => r.created).length;
  Object.assign(run.summary, {
    submitted: run.summary.submitted + results.length,
    created: run.summary.created + created,
    existing: run.summary.existing + results.length - created,
    batches: run.summary.batches + 1,
  });
  run.progress.update(batch[batch.length - 1]!.bytesRead, { tasks: run.summary.submitted });
}

function request(record: PayloadRecord, flags: SubmitFlags & { type: string }, shared: SubmitOptions): SubmitRequest {
  const field = flags.idempotencyKeyField;
  if (field === undefined) return { ...shared, type: flags.type, payload: record.payload };
  const key = (record.payload as Record<string, unknown> | null)?.[field];
  if ((typeof key !== 'string' && typeof key !== 'number') || String(key).length === 0) {
    throw new UsageError(`${flags.file}:${record.line}: no value in field ${field} for the idempotency key`, 'idempotencyKeyField');
  }
  return { ...shared, type: flags.type, payload: record.payload, idempotencyKey: String(key) };
}

/** submitMany labels a bad request "task #i" of its batch: say the file's line instead. */
function locate(error: unknown, batch: readonly PayloadRecord[]): unknown {
  if (!(error instanceof TaskLeaseError)) return error;
  const match = /^task #(\d+): /.exec(error.message);
  const where = match ? `line ${batch[Number(match[1])]?.line}` : `lines ${batch[0]!.line}–${batch[batch.length - 1]!.line}`;
  const message = `${where}: ${match ? error.message.slice(match[0].length) : error.message}`;
  return error instanceof ValidationError ? new ValidationError(message, error.field, error.code, { cause: error }) : error;
}
