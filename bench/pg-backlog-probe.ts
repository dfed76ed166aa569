/**
 * PostgreSQL drain rate over a long backlog, per 100k tasks; the round trip
 * per claimed and per written row; the CPU split between this process (the
 * worker) and the rest of the machine (mostly PostgreSQL).
 * Run: npx tsx bench/pg-backlog-probe.ts <backlog> <tasks to measure> [autovac|vacuum|bgvac]
 * e.g. npx tsx bench/pg-backlog-probe.ts 1000000 600000
 * Experiments (environment):
 * - EXPLAIN_AT=n: after n tasks, EXPLAIN ANALYZE the claim's leased count with and without bitmap scans;
 * - VARIANT=collate: ids and task types in the "C" collation;
 * - VARIANT=noattempt: the claim writes no attempt row (an upper bound of what that row costs);
 * - LIMITS=20/5: the worker's global / per-type limits (default: high, not binding);
 * - PROF=file.cpuprofile: a CPU profile of the worker during the drain only;
 * - HEAPPROF=file.heapprofile: where the drain allocates (sampled, collected objects included);
 * - DIST=1: tasklease from the built dist/ (npx tsc -p tsconfig.build.json first) instead of src/ through tsx.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import pg from 'pg';
import { library, storeModule } from './systems/tasklease-lib.js';
const dist = process.env.DIST === '1';
const { createClient, createWorker, defineTask } = dist ? await library() : await import('../src/index.js');
const { PostgresStore } = dist ? await storeModule('postgres') : await import('../src/postgres.js');
const schema = `probe_${process.pid}`;
const store = new PostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', schema, poolSize: 10 });
await store.migrate();
const t = defineTask({ type: 'noop', execute: () => undefined });
const client = createClient({ store, tasks: [t] });
const backlog = Number(process.argv[2]);
const measure = Number(process.argv[3]);
for (let i = 0; i < backlog; i += 5000) await client.submitMany(Array.from({ length: 5000 }, () => ({ type: 'noop', payload: {} })));
const admin = new pg.Client('postgres://postgres@127.0.0.1:5432/test');
await admin.connect();
const variant = process.env.VARIANT ?? '';
if (variant.includes('collate'))
  await admin.query(
    `ALTER TABLE ${schema}.system_async_task ALTER COLUMN id TYPE text COLLATE "C", ALTER COLUMN task_type TYPE text COLLATE "C"; ALTER TABLE ${schema}.system_async_task_attempt ALTER COLUMN task_id TYPE text COLLATE "C"`,
  );
if (variant.includes('noattempt')) {
  // The current signature: the one with the most arguments (older ones stay for rolling upgrades).
  const def = (
    await admin.query(
      `SELECT pg_get_functiondef(p.oid) AS d FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = $1 AND p.proname = 'tasklease_claim' ORDER BY p.pronargs DESC LIMIT 1`,
      [schema],
    )
  ).rows[0].d as string;
  const cut = def.replace(/,\s*attempts AS \(\s*INSERT[\s\S]*?FROM claimed\s*\)/, '');
  if (cut === def) throw new Error('noattempt: pattern not found');
  await admin.query(cut);
}
if (process.argv[4] === 'autovac')
  await admin.query(
    `ALTER TABLE ${schema}.system_async_task SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000, autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.05)`,
  );
if (process.argv[4] === 'vacuum') await admin.query(`VACUUM ANALYZE ${schema}.system_async_task`);
// Round-trip time of every claim and outcome write, per row.
const spent = { claim: { ms: 0, rows: 0, calls: 0 }, finish: { ms: 0, rows: 0, calls: 0 }, 'finish+claim': { ms: 0, rows: 0, calls: 0 } };
const claimTasks = store.claimTasks.bind(store);
const finishAttempts = store.finishAttempts.bind(store);
const finishAndClaim = store.finishAndClaim.bind(store);
store.claimTasks = async (p) => {
  const s = performance.now();
  const r = await claimTasks(p);
  spent.claim.ms += performance.now() - s;
  spent.claim.rows += r.length;
  spent.claim.calls++;
  return r;
};
store.finishAndClaim = async (p) => {
  const s = performance.now();
  const r = await finishAndClaim(p);
  const x = spent['finish+claim'];
  x.ms += performance.now() - s;
  x.rows += r.applied.length + r.claimed.length;
  x.calls++;
  return r;
};
store.finishAttempts = async (p) => {
  const s = performance.now();
  const r = await finishAttempts(p);
  spent.finish.ms += performance.now() - s;
  spent.finish.rows += r.applied.length;
  spent.finish.calls++;
  return r;
};
const worker = createWorker({
  store,
  tasks: [t],
  concurrency: 10,
  prefetch: 500,
  globalConcurrency: Number(process.env.LIMITS?.split('/')[0] ?? 1e6),
  typeConcurrency: Number(process.env.LIMITS?.split('/')[1] ?? 1e6),
  recoveryIntervalMs: 0,
});
let done = 0;
const marks: number[] = [];
let vac = false;
const fin = new Promise<void>((r) =>
  worker.on('completed', () => {
    done++;
    if (done % 100000 === 0) marks.push(performance.now());
    if (process.argv[4] === 'bgvac' && done % 100000 === 0 && !vac) {
      vac = true;
      const s = performance.now();
      void admin.query(`VACUUM ${schema}.system_async_task`).then(() => {
        console.log('vacuum ms', Math.round(performance.now() - s));
        vac = false;
      });
    }
    if (process.env.EXPLAIN_AT && done === Number(process.env.EXPLAIN_AT)) void explainLeased();
    if (done === measure) r();
  }),
);
async function explainLeased(): Promise<void> {
  for (const bitmap of ['on', 'off', 'on', 'off']) {
    await admin.query(`SET enable_bitmapscan = ${bitmap}`);
    const plan = await admin.query(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT l.task_type, count(*) AS n FROM ${schema}.system_async_task l WHERE l.status IN ('RUNNING', 'CANCEL_REQUESTED') GROUP BY l.task_type`,
    );
    console.log(`-- bitmap ${bitmap}\n` + plan.rows.map((r) => r['QUERY PLAN']).join('\n'));
  }
}
const session = new Session();
if (process.env.PROF) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
}
if (process.env.HEAPPROF) {
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 8192,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  } as never);
}
const cpu0 = process.cpuUsage();
const sys0 = systemTicks();
const t0 = performance.now();
worker.start();
await fin;
const cpu = process.cpuUsage(cpu0);
const sys1 = systemTicks();
if (process.env.PROF) writeFileSync(process.env.PROF, JSON.stringify((await session.post('Profiler.stop')).profile));
if (process.env.HEAPPROF) writeFileSync(process.env.HEAPPROF, JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
const wallMs = performance.now() - t0;
// CPU split over the drain: this process (the worker) against the whole machine (PostgreSQL is most of the rest).
for (const [k, v] of Object.entries(spent))
  if (v.calls > 0)
    console.log(
      `${k}: ${v.calls} calls, ${Math.round(v.rows / v.calls)} rows each, ${(v.ms / v.calls).toFixed(1)} ms each, ${((1000 * v.ms) / v.rows).toFixed(1)} µs/row`,
    );
console.log(
  `drain wall ${Math.round(wallMs)} ms; worker CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms (user ${Math.round(cpu.user / 1000)}, system ${Math.round(cpu.system / 1000)}; ${((cpu.user + cpu.system) / measure).toFixed(1)} µs/task); machine busy ${(sys1.busy - sys0.busy) * 10} ms, idle ${(sys1.idle - sys0.idle) * 10} ms (2 cores)`,
);
console.log(
  `backlog ${backlog}: ${measure} drained at ${Math.round(measure / ((performance.now() - t0) / 1000))}/s; per 100k:`,
  marks.map((m, i) => Math.round(100000 / ((m - (i ? marks[i - 1]! : t0)) / 1000))).join(' '),
);
await worker.stop();
await store.close();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();

function systemTicks(): { busy: number; idle: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const n = fields.map(Number);
  return { busy: n[0]! + n[1]! + n[2]! + n[5]! + n[6]! + n[7]!, idle: n[3]! + n[4]! };
}
