/**
 * PostgreSQL drain rate over a long backlog, per 100k tasks.
 * Run: npx tsx bench/pg-backlog-probe.ts <backlog> <tasks to measure> [autovac|vacuum|bgvac]
 * e.g. npx tsx bench/pg-backlog-probe.ts 1000000 600000
 */
import pg from 'pg';
import { PostgresStore, createClient, createWorker, defineTask } from '../src/index.js';
const schema = `probe_${process.pid}`;
const store = new PostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', schema, poolSize: 10 });
await store.migrate();
const t = defineTask({ type: 'noop', execute: () => undefined });
const client = createClient({ store, tasks: [t] });
const backlog = Number(process.argv[2]); const measure = Number(process.argv[3]);
for (let i = 0; i < backlog; i += 5000) await client.submitMany(Array.from({ length: 5000 }, () => ({ type: 'noop', payload: {} })));
const admin = new pg.Client('postgres://postgres@127.0.0.1:5432/test'); await admin.connect();
if (process.argv[4] === "autovac") await admin.query(`ALTER TABLE ${schema}.system_async_task SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05)`);
if (process.argv[4] === "vacuum") await admin.query(`VACUUM ANALYZE ${schema}.system_async_task`);
const worker = createWorker({ store, tasks: [t], concurrency: 10, prefetch: 500, globalConcurrency: 1e6, typeConcurrency: 1e6, recoveryIntervalMs: 0 });
let done = 0; const marks: number[] = [];
let vac = false;
const fin = new Promise<void>((r) => worker.on('completed', () => { done++; if (done % 100000 === 0) marks.push(performance.now());
  if (process.argv[4] === 'bgvac' && done % 100000 === 0 && !vac) { vac = true; const s = performance.now(); void admin.query(`VACUUM ${schema}.system_async_task`).then(() => { console.log('vacuum ms', Math.round(performance.now() - s)); vac = false; }); }
  if (done === measure) r(); }));
const t0 = performance.now(); worker.start(); await fin;
console.log(`backlog ${backlog}: ${measure} drained at ${Math.round(measure / ((performance.now() - t0) / 1000))}/s; per 100k:`, marks.map((m, i) => Math.round(100000 / ((m - (i ? marks[i - 1]! : t0)) / 1000))).join(' '));
await worker.stop(); await store.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.end();
