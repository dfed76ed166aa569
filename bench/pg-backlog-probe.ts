/**
 * PostgreSQL drain rate over a long backlog, per 100k tasks.
 * Run: npx tsx bench/pg-backlog-probe.ts <backlog> <tasks to measure> [autovac|vacuum|bgvac]
 * e.g. npx tsx bench/pg-backlog-probe.ts 1000000 600000
 */
import { readFileSync } from 'node:fs';
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
const variant = process.env.VARIANT ?? '';
if (variant.includes('collate')) await admin.query(`ALTER TABLE ${schema}.system_async_task ALTER COLUMN id TYPE text COLLATE "C", ALTER COLUMN task_type TYPE text COLLATE "C"; ALTER TABLE ${schema}.system_async_task_attempt ALTER COLUMN task_id TYPE text COLLATE "C"`);
if (variant.includes('noattempt')) {
  const def = (await admin.query(`SELECT pg_get_functiondef('${schema}.tasklease_claim'::regproc) AS d`)).rows[0].d as string;
  const cut = def.replace(/,\s*attempts AS \(\s*INSERT[\s\S]*?FROM claimed\s*\)/, '');
  if (cut === def) throw new Error('noattempt: pattern not found');
  await admin.query(cut);
}
if (process.argv[4] === "autovac") await admin.query(`ALTER TABLE ${schema}.system_async_task SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05)`);
if (process.argv[4] === "vacuum") await admin.query(`VACUUM ANALYZE ${schema}.system_async_task`);
const worker = createWorker({ store, tasks: [t], concurrency: 10, prefetch: 500, globalConcurrency: 1e6, typeConcurrency: 1e6, recoveryIntervalMs: 0 });
let done = 0; const marks: number[] = [];
let vac = false;
const fin = new Promise<void>((r) => worker.on('completed', () => { done++; if (done % 100000 === 0) marks.push(performance.now());
  if (process.argv[4] === 'bgvac' && done % 100000 === 0 && !vac) { vac = true; const s = performance.now(); void admin.query(`VACUUM ${schema}.system_async_task`).then(() => { console.log('vacuum ms', Math.round(performance.now() - s)); vac = false; }); }
  if (done === measure) r(); }));
const cpu0 = process.cpuUsage(); const sys0 = systemTicks();
const t0 = performance.now(); worker.start(); await fin;
const cpu = process.cpuUsage(cpu0); const sys1 = systemTicks();
const wallMs = performance.now() - t0;
// CPU split over the drain: this process (the worker) against the whole machine (PostgreSQL is most of the rest).
console.log(`drain wall ${Math.round(wallMs)} ms; worker CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms; machine busy ${(sys1.busy - sys0.busy) * 10} ms, idle ${(sys1.idle - sys0.idle) * 10} ms (2 cores)`);
console.log(`backlog ${backlog}: ${measure} drained at ${Math.round(measure / ((performance.now() - t0) / 1000))}/s; per 100k:`, marks.map((m, i) => Math.round(100000 / ((m - (i ? marks[i - 1]! : t0)) / 1000))).join(' '));
await worker.stop(); await store.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.end();

function systemTicks(): { busy: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const n = fields.map(Number);
  return { busy: n[0]! + n[1]! + n[2]! + n[5]! + n[6]! + n[7]!, idle: n[3]! + n[4]! };
}
