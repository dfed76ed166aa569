/**
 * A worker process for the SQLite poison-pill test (config as JSON in env
 * TL_CHILD, spawned by test/process/harness.ts): payload `{ exit: true }`
 * kills the process at once (process.exit(1)); any other sleeps `ms`.
 */
import { defineTask } from '../../src/core/definition.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { createWorker } from '../../src/worker/worker.js';

const config = JSON.parse(process.env.TL_CHILD!) as { label: string; path: string };
const store = new SqliteStore({ path: config.path, busyTimeoutMs: 5_000 });
const work = defineTask<{ exit?: boolean; ms?: number }>({
  type: 'work',
  execute: async (ctx, payload) => {
    if (payload.exit) process.exit(1);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, payload.ms ?? 10);
      ctx.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  },
});
const worker = createWorker({
  store,
  tasks: [work],
  workerId: config.label,
  concurrency: 4,
  // FAULTS.md's short timings, as the PostgreSQL fault suite uses them.
  leaseMs: 2000,
  heartbeatIntervalMs: 500,
  recoveryIntervalMs: 1000,
  pollIntervalMs: 100,
  globalConcurrency: 1000,
  typeConcurrency: 1000,
  logger: false,
});
worker.start();
process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid })}\n`);
process.on('SIGTERM', () => {
  void worker.stop().then(async () => {
    await store.close();
    process.stdout.write(`${JSON.stringify({ event: 'stopped', completed: [] })}\n`);
    process.exit(0);
  });
});
