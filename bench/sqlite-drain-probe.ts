/**
 * SQLite drain in one process: rate, CPU (user/system), claims and outcome
 * writes. Run: npx tsx bench/sqlite-drain-probe.ts [tasks=20000]
 * Experiments (environment):
 * - DROPIDX=a;b: drop these indexes after migrating (what an index costs a drain);
 * - PRAGMAS=x=y;…: extra pragmas on the store's connection;
 * - PROF=file.cpuprofile: a CPU profile of the drain only (open in Chrome DevTools);
 * - LIMITS=20/5: the worker's global / per-type limits (default: high, not binding);
 * - HISTORY=1: the queue history recorder on the worker (observe/queue-history.ts; its last write at stop is timed too).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createWorker, defineTask, recordQueueHistory } from '../src/index.js';
import { SqliteStore } from '../src/sqlite.js';

const file = join(tmpdir(), `sqlite_probe_${process.pid}.db`);
const store = new SqliteStore({ path: file });
await store.migrate();
// The probe reaches into the store's connection on purpose: these are experiments, not options.
const db = (store as unknown as { db: { pragma(p: string): unknown; exec(sql: string): unknown } }).db;
for (const pragma of (process.env.PRAGMAS ?? '').split(';').filter(Boolean)) db.pragma(pragma);
for (const index of (process.env.DROPIDX ?? '').split(';').filter(Boolean)) db.exec(`DROP INDEX ${index}`);
const task = defineTask({ type: 'noop', execute: () => undefined });
const client = createClient({ store, tasks: [task] });
const n = Number(process.argv[2] ?? 20000);
for (let i = 0; i < n; i += 1000) await client.submitMany(Array.from({ length: Math.min(1000, n - i) }, () => ({ type: 'noop', payload: {} })));

const calls = { claims: 0, claimed: 0, writes: 0, combined: 0 };
const claimTasks = store.claimTasks.bind(store);
store.claimTasks = async (p) => {
  calls.claims++;
  const r = await claimTasks(p);
  calls.claimed += r.length;
  return r;
};
const finishAttempts = store.finishAttempts.bind(store);
store.finishAttempts = async (p) => {
  calls.writes++;
  return finishAttempts(p);
};
const finishAndClaim = store.finishAndClaim.bind(store);
store.finishAndClaim = async (p) => {
  calls.combined++;
  const r = await finishAndClaim(p);
  calls.claimed += r.claimed.length;
  return r;
};
const [globalConcurrency, typeConcurrency] = (process.env.LIMITS ?? '1000000/1000000').split('/').map(Number);
const worker = createWorker({ store, tasks: [task], concurrency: 10, prefetch: 500, globalConcurrency, typeConcurrency });
const history = process.env.HISTORY === '1' ? recordQueueHistory({ store, worker }) : null;
let done = 0;
const drained = new Promise<void>((resolve) =>
  worker.on('completed', () => {
    if (++done === n) resolve();
  }),
);

const session = new Session();
if (process.env.PROF) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
const cpu0 = process.cpuUsage();
const t0 = performance.now();
worker.start();
await drained;
await history?.flush({ all: true });
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
if (process.env.PROF) writeFileSync(process.env.PROF, JSON.stringify((await session.post('Profiler.stop')).profile));
console.log(
  `${n} drained in ${Math.round(ms)} ms = ${Math.round((n / ms) * 1000)}/s; CPU user ${Math.round(cpu.user / 1000)} ms, system ${Math.round(cpu.system / 1000)} ms; ${calls.claims} claims, ${calls.writes} outcome writes, ${calls.combined} outcome writes with a claim (${calls.claimed} rows claimed)`,
);
await worker.stop();
await store.close();
for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
