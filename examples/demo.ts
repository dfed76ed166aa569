/**
 * `npm run demo`: tasklease on an embedded SQLite file, no server needed.
 * Submits example tasks — a batched import with progress, a flaky task that
 * succeeds on retry, one that always fails into the dead-letter queue, a slow
 * one that gets cancelled, a delayed one and one that misses its deadline —
 * runs a worker, prints their lifecycle live and ends with a summary.
 * Ctrl-C stops the worker gracefully.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { createClient, createWorker, defineTask, TaskFailure, type Task } from '../src/index.js';
import { SqliteStore } from '../src/sqlite.js';
import { ImportLedger, importTask } from './import-task.js';

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
    execute: () => { throw new TaskFailure('mailbox does not exist', { code: 'MAILBOX_UNKNOWN' }); },
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
  defineTask({ type: 'export.archive', timeoutMs: 500, execute: (ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))) }),
];

const client = createClient({ store, tasks });
const worker = createWorker({
  store, tasks, concurrency: 4, pollIntervalMs: 200, heartbeatIntervalMs: 1000, leaseMs: 10_000, recoveryIntervalMs: 1000,
  retry: { baseDelayMs: 1000, multiplier: 2, jitter: 0.2, maxDelayMs: 5000 }, progressFlushIntervalMs: 250,
});

const t0 = Date.now();
const log = (message: string): void => console.log(`${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s  ${message}`);
const name = (task: Task): string => `${task.taskType} ${task.id.slice(-6)}`;
worker.on('started', ({ task }) => log(`▶ ${name(task)} started (attempt ${task.attemptCount}/${task.maxAttempts})`));
worker.on('progress', ({ task, progress }) => log(`  ${name(task)} ${progress.processed}/${progress.total} ${progress.message ?? ''}`));
worker.on('completed', ({ task, status, durationMs }) => log(`✔ ${name(task)} ${status} in ${durationMs} ms`));
worker.on('retryScheduled', ({ task, failure, retryDelayMs }) => log(`↻ ${name(task)} failed (${failure.errorCode}), retry in ${(retryDelayMs / 1000).toFixed(1)} s`));
worker.on('deadLettered', ({ task, failure }) => log(`✖ ${name(task)} FAILED (${failure.errorCode}) → dead-letter queue`));
worker.on('cancelled', ({ task }) => log(`⊘ ${name(task)} CANCELLED`));
worker.on('timedOut', ({ task }) => log(`⏱ ${name(task)} timed out`));
worker.on('error', ({ operation, error }) => log(`! ${operation} failed: ${String(error)}`));

const submitted = await client.submitMany([
  { type: 'patients.import', payload: { fileName: 'patients-2026-11.csv', totalRows: 2000, batchSize: 100, batchDelayMs: 60 }, idempotencyKey: 'patients-2026-11', owner: 'clinic-7' },
  { type: 'report.render', payload: { reportId: 'monthly' }, priority: 5 },
  { type: 'email.send', payload: { to: 'nobody@example.invalid' } },
  { type: 'video.transcode', payload: {} },
  { type: 'reminder.send', payload: {}, delayMs: 3000 },
  { type: 'export.archive', payload: {} },
]);
// Submitting the same import again returns the same task: no second import.
const again = await client.submit('patients.import', { fileName: 'patients-2026-11.csv', totalRows: 2000 }, { idempotencyKey: 'patients-2026-11', owner: 'clinic-7' });
log(`submitted ${submitted.length} tasks; resubmitting the import returned the same task: ${again.task.id === submitted[0]!.task.id}`);

const video = submitted[3]!.task;
worker.on('progress', ({ task, progress }) => {
  if (task.id === video.id && progress.processed >= 10) void client.requestCancellation(video.id).catch(() => undefined);
});

let stopping = false;
process.on('SIGINT', () => {
  if (stopping) process.exit(130);
  stopping = true;
  log('Ctrl-C: stopping gracefully (again to force)…');
  void finish(130);
});

worker.start();
const ids = submitted.map((s) => s.task.id);
const timer = setInterval(async () => {
  const all = await Promise.all(ids.map((id) => client.get(id)));
  if (all.every((task) => task && ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'].includes(task.status))) void finish(0);
}, 250);

async function finish(code: number): Promise<void> {
  clearInterval(timer);
  await worker.stop();
  console.log('\nSummary');
  console.log('type                status           attempts  progress      error');
  for (const id of ids) {
    const task = (await client.get(id))!;
    const progress = task.progress ? `${task.progress.processed}/${task.progress.total}` : '';
    console.log(`${task.taskType.padEnd(20)}${task.status.padEnd(17)}${String(task.attemptCount).padEnd(10)}${progress.padEnd(14)}${task.lastErrorCode ?? ''}`);
  }
  const letters = await client.deadLetters.list();
  console.log(`\ndead letters: ${letters.length} (${letters.map((l) => `${l.taskType}: ${l.errorCode}`).join(', ')})`);
  console.log(`imported rows: ${ledger.rows.length}; database: ${join(dir, 'demo.db')}`);
  await store.close();
  process.exit(code);
}
