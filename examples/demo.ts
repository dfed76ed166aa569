/**
 * `npm run demo`: tasklease on an embedded SQLite file, no server needed.
 * Submits example tasks — a batched import with progress, a flaky task that
 * succeeds on retry, one that always fails into the dead-letter queue, a slow
 * one that gets cancelled, a delayed one and one that misses its deadline —
 * runs a worker, prints their lifecycle live and ends with a summary.
 *
 * Ctrl-C stops the worker gracefully and still prints the summary, whenever it
 * comes: the handler is installed before anything else, and a terminal's
 * Ctrl-C arrives twice (directly and forwarded by npm), so repeats are ignored
 * rather than taken as "force quit". The stop is bounded (shutdownGraceMs).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { createClient, createWorker, defineTask, TaskFailure, type Task } from '../src/index.js';
import { SqliteStore } from '../src/sqlite.js';
import { ImportLedger, importTask } from './import-task.js';

const t0 = Date.now();
const log = (message: string): void => console.log(`${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s  ${message}`);

let ctrlC = false;
const interrupted = new Promise<void>((resolve) => {
  process.on('SIGINT', () => {
    if (!ctrlC) log('Ctrl-C: stopping gracefully (a few seconds at most), then the summary…');
    ctrlC = true;
    resolve();
  });
});
log('tasklease demo: a worker on an embedded SQLite file (Ctrl-C stops it and prints the summary)');

const dir = process.env.TASKLEASE_DEMO_DIR ?? join(process.cwd(), '.tasklease-demo');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const store = new SqliteStore({ path: join(dir, 'demo.db') });
await store.migrate();

const ledger = new ImportLedger();
let flakyCalls = 0;
const tasks = [
  importTask(ledger),
  defineTask({
    type: 'report.render',
    schema: z.object({ reportId: z.string() }),
    execute: () => {
      if (++flakyCalls === 1) throw new TaskFailure('renderer busy', { code: 'RENDERER_BUSY' });
      return { status: 'SUCCESS', artifactId: 'report.pdf' };
    },
  }),
  defineTask({
    type: 'email.send',
    schema: z.object({ to: z.string() }),
    maxAttempts: 2,
    execute: () => {
      throw new TaskFailure('mailbox does not exist', { code: 'MAILBOX_UNKNOWN' });
    },
  }),
  defineTask({
    type: 'video.transcode',
    execute: async (ctx) => {
      for (let second = 0; second < 60; second++) {
        ctx.reportProgress({ total: 60, processed: second });
        await new Promise<void>((resolve, reject) => {
          const onAbort = (): void => (clearTimeout(timer), reject(ctx.signal.reason));
          const timer = setTimeout(() => (ctx.signal.removeEventListener('abort', onAbort), resolve()), 100);
          ctx.signal.addEventListener('abort', onAbort, { once: true });
        });
      }
    },
  }),
  defineTask({ type: 'reminder.send', execute: () => ({ status: 'SUCCESS', result: { sent: true } }) }),
  defineTask({
    type: 'export.archive',
    timeoutMs: 500,
    execute: (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
  }),
];

const client = createClient({ store, tasks });
const worker = createWorker({
  store,
  tasks,
  concurrency: 4,
  pollIntervalMs: 200,
  heartbeatIntervalMs: 1000,
  leaseMs: 10_000,
  recoveryIntervalMs: 1000,
  retry: { baseDelayMs: 1000, multiplier: 2, jitter: 0.2, maxDelayMs: 5000 },
  progressFlushIntervalMs: 250,
  shutdownGraceMs: 2000,
  shutdownAbortWaitMs: 1000,
});

const name = (task: Task): string => `${task.taskType} ${task.id.slice(-6)}`;
worker.on('started', ({ task }) => log(`▶ ${name(task)} started (attempt ${task.attemptCount}/${task.maxAttempts})`));
worker.on('progress', ({ task, progress }) => log(`  ${name(task)} ${progress.processed}/${progress.total} ${progress.message ?? ''}`));
worker.on('completed', ({ task, status, durationMs }) => log(`✔ ${name(task)} ${status} in ${Math.round(durationMs)} ms`));
worker.on('retryScheduled', ({ task, failure, retryDelayMs }) =>
  log(`↻ ${name(task)} failed (${failure.errorCode}), retry in ${(retryDelayMs / 1000).toFixed(1)} s`),
);
worker.on('deadLettered', ({ task, failure }) => log(`✖ ${name(task)} FAILED (${failure.errorCode}) → dead-letter queue`));
worker.on('cancelled', ({ task }) => log(`⊘ ${name(task)} CANCELLED`));
worker.on('timedOut', ({ task }) => log(`⏱ ${name(task)} timed out`));
worker.on('error', ({ operation, error }) => log(`! ${operation} failed: ${String(error)}`));

const submitted = await client.submitMany([
  {
    type: 'patients.import',
    payload: { fileName: 'patients-2026-11.csv', totalRows: 2000, batchSize: 100, batchDelayMs: 60 },
    idempotencyKey: 'patients-2026-11',
    owner: 'clinic-7',
  },
  { type: 'report.render', payload: { reportId: 'monthly' }, priority: 5 },
  { type: 'email.send', payload: { to: 'nobody@example.invalid' } },
  { type: 'video.transcode', payload: {} },
  { type: 'reminder.send', payload: {}, delayMs: 3000 },
  { type: 'export.archive', payload: {} },
]);
// Submitting the same import again returns the same task: no second import.
const again = await client.submit(
  'patients.import',
  { fileName: 'patients-2026-11.csv', totalRows: 2000 },
  { idempotencyKey: 'patients-2026-11', owner: 'clinic-7' },
);
log(`submitted ${submitted.length} tasks; resubmitting the import returned the same task: ${again.task.id === submitted[0]!.task.id}`);
const ids = submitted.map((s) => s.task.id);

const video = submitted[3]!.task;
worker.on('progress', ({ task, progress }) => {
  if (task.id === video.id && progress.processed >= 10) void client.requestCancellation(video.id).catch(() => undefined);
});

if (!ctrlC) worker.start();
await Promise.race([interrupted, allEnded(ids)]);
await worker.stop();
await printSummary(ids);
await store.close();
process.exit(0);

/** Resolves once every task reached a final status (checked every 250 ms). */
async function allEnded(taskIds: string[]): Promise<void> {
  const final = new Set(['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED']);
  for (;;) {
    const all = await Promise.all(taskIds.map((id) => client.get(id)));
    if (all.every((task) => task && final.has(task.status))) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function printSummary(taskIds: string[]): Promise<void> {
  console.log('\nSummary');
  console.log('type                status           attempts  progress      error');
  for (const id of taskIds) {
    const task = (await client.get(id))!;
    const progress = task.progress ? `${task.progress.processed}/${task.progress.total}` : '';
    console.log(`${task.taskType.padEnd(20)}${task.status.padEnd(17)}${String(task.attemptCount).padEnd(10)}${progress.padEnd(14)}${task.lastErrorCode ?? ''}`);
  }
  const letters = await client.deadLetters.list();
  console.log(`\ndead letters: ${letters.length} (${letters.map((l) => `${l.taskType}: ${l.errorCode}`).join(', ')})`);
  console.log(`imported rows: ${ledger.rows.length}; database: ${join(dir, 'demo.db')}`);
}
