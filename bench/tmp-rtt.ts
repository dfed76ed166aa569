import pg from 'pg';
import { PostgresStore } from '../src/postgres.js';
const url = 'postgres://postgres@127.0.0.1:5432/test' + (process.env.PGOPTS ? '?options=' + encodeURIComponent(process.env.PGOPTS) : '');
const schema = `probe_rtt_${process.pid}`;
const store = new PostgresStore({ connectionString: url, schema, poolSize: 2 });
await store.migrate();
const N = 8000;
const now = new Date();
import { uuidv7 } from '../src/core/ids.js';
const tasks = Array.from({ length: N }, () => ({ id: uuidv7(), taskType: 'noop', payloadJson: '{}', priority: 0, delayMs: 0, maxAttempts: 3, availableAt: null, deadlineAt: null, owner: null, idempotencyKey: null, traceId: null }));
for (let i = 0; i < N; i += 1000) await (store as any).insertTasks({ tasks: tasks.slice(i, i + 1000).map((t) => ({ ...t })) }).catch((e: any) => { console.error(e.message); process.exit(1); });
const params = { workerId: 'w', taskTypes: ['noop'], limit: 500, leaseMs: 60000, globalConcurrency: 20, typeConcurrency: 5, ...(process.env.NOLIVE ? {} : { liveWithinMs: 30000 }) };
let held = await store.claimTasks(params);
const lease = (t: any) => ({ taskId: t.id, workerId: 'w', attempt: t.attemptCount, token: t.leaseToken });
const admin = new pg.Client(url); await admin.connect();
const t0 = performance.now(); let n = 0; let rounds = 0;
while (held.length > 0 && rounds < 600) {
  const r = await store.finishAndClaim({ outcomes: held.map((t) => ({ kind: 'SUCCESS', lease: lease(t), artifactId: null, resultJson: null, progress: null })), claim: params });
  n += held.length; held = r.claimed; rounds++;
}
const t1 = performance.now();
console.log(`finish+claim: ${rounds} rounds, ${((t1 - t0) / rounds).toFixed(3)} ms each, ${(n / ((t1 - t0) / 1000)).toFixed(0)} tasks/s`);
// split: finish only, then claim only
let f = 0, c = 0; rounds = 0;
while (held.length > 0 && rounds < 600) {
  const a = performance.now();
  await store.finishAttempts({ outcomes: held.map((t) => ({ kind: 'SUCCESS', lease: lease(t), artifactId: null, resultJson: null, progress: null })) });
  const b = performance.now();
  held = await store.claimTasks(params);
  const d = performance.now(); f += b - a; c += d - b; rounds++;
}
console.log(`finish alone ${(f / rounds).toFixed(3)} ms, claim alone ${(c / rounds).toFixed(3)} ms`);
let s = performance.now(); for (let i = 0; i < 300; i++) await admin.query('SELECT 1'); console.log(`SELECT 1 ${((performance.now() - s) / 300).toFixed(3)} ms`);
await store.close(); await admin.query(`DROP SCHEMA ${schema} CASCADE`); await admin.end();
