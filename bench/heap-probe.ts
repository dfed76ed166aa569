/**
 * Does a worker retain memory per task processed? Drains 6 × 50,000 SQLite
 * tasks in one process and prints the heap after a forced GC each time.
 * Run: node --expose-gc --import tsx bench/heap-probe.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createWorker, defineTask } from '../src/index.js';
import { SqliteStore } from '../src/sqlite.js';
const dir = mkdtempSync(join(tmpdir(), 'tasklease-heap-'));
const store = new SqliteStore({ path: join(dir, 'db.sqlite') });
await store.migrate();
const t = defineTask({ type: 'noop', execute: () => undefined });
const client = createClient({ store, tasks: [t] });
const worker = createWorker({ store, tasks: [t], concurrency: 10, prefetch: 500, globalConcurrency: 1e6, typeConcurrency: 1e6, recoveryIntervalMs: 0 });
let done = 0;
let target = 0;
let wake = () => {};
worker.on('completed', () => {
  if (++done === target) wake();
});
worker.start();
for (let round = 1; round <= 6; round++) {
  target = round * 50000;
  const fin = new Promise<void>((r) => (wake = r));
  for (let i = 0; i < 50000; i += 5000) await client.submitMany(Array.from({ length: 5000 }, () => ({ type: 'noop', payload: {} })));
  await fin;
  (globalThis as unknown as { gc: () => void }).gc();
  const m = process.memoryUsage();
  console.log(`${target} done: heapUsed ${(m.heapUsed / 1e6).toFixed(1)} MB rss ${(m.rss / 1e6).toFixed(1)} MB`);
}
await worker.stop();
await store.close();
rmSync(dir, { recursive: true, force: true });
