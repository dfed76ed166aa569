/**
 * A worker process for the multi-process SQLite test: runs until it receives
 * SIGTERM, then prints the ids it executed as one JSON line.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';

const path = process.argv[2]!;
// argv[4]: a start barrier, a folder where each process marks its first task: no task completes until
// both processes have one, so both take part however the machine schedules them.
const barrier = process.argv[4];
let barrierPassed = barrier === undefined;
const executed: string[] = [];
const store = new SqliteStore({ path, busyTimeoutMs: 10_000 });
const task = defineTask({
  type: 'count',
  execute: async (ctx) => {
    if (!barrierPassed) await passBarrier(barrier!);
    executed.push(ctx.taskId);
  },
});

async function passBarrier(folder: string): Promise<void> {
  writeFileSync(join(folder, String(process.pid)), '');
  const deadline = Date.now() + 30_000;
  while (readdirSync(folder).length < 2) {
    if (Date.now() > deadline) throw new Error('the other worker process never started a task');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  barrierPassed = true;
}
// argv[3]: the poll interval (default 20 ms); a long one leaves only the cross-process wake-up to find work.
const pollIntervalMs = Number(process.argv[3] ?? 20);
const worker = createWorker({
  store,
  tasks: [task],
  concurrency: 8,
  prefetch: 8,
  claimBatchSize: 50,
  pollIntervalMs,
  minPollIntervalMs: pollIntervalMs,
  recoveryIntervalMs: 0,
  // Limits above what two processes hold: the seed's defaults (5 per type) would let one process take every slot.
  globalConcurrency: 1000,
  typeConcurrency: 1000,
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
