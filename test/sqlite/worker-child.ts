/**
 * A worker process for the multi-process SQLite test: runs until it receives
 * SIGTERM, then prints the ids it executed as one JSON line.
 */
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';

const path = process.argv[2]!;
const executed: string[] = [];
const store = new SqliteStore({ path, busyTimeoutMs: 10_000 });
const task = defineTask({ type: 'count', execute: (ctx) => { executed.push(ctx.taskId); } });
// argv[3]: the poll interval (default 20 ms); a long one leaves only the cross-process wake-up to find work.
const pollIntervalMs = Number(process.argv[3] ?? 20);
const worker = createWorker({
  store, tasks: [task], concurrency: 8, prefetch: 8, claimBatchSize: 50, pollIntervalMs, minPollIntervalMs: pollIntervalMs, recoveryIntervalMs: 0,
});
worker.on('error', ({ operation, error }) => process.stderr.write(`${operation}: ${String(error)}\n`));
worker.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker.stop().then(async () => {
    await store.close();
    process.stdout.write(`${JSON.stringify({ executed })}\n`);
    process.exit(0);
  });
});
