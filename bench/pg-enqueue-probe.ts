/**
 * PostgreSQL bulk enqueue: where the time goes. Submits N tasks in batches
 * of K through client.submitMany and prints the rate, this process's CPU and
 * the machine's (PostgreSQL is most of the rest).
 * Run: npx tsx bench/pg-enqueue-probe.ts [N=20000] [K=1000]
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { createClient, defineTask } from '../src/index.js';
import { PostgresStore } from '../src/postgres.js';
const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `probe_${process.pid}`;
const n = Number(process.argv[2] ?? 20000);
const k = Number(process.argv[3] ?? 1000);
const store = new PostgresStore({ connectionString: url, schema, poolSize: 4 });
await store.migrate();
const client = createClient({ store, tasks: [defineTask({ type: 'noop' })] });
await client.submitMany(Array.from({ length: k }, (_, i) => ({ type: 'noop', payload: { i } }))); // warm up: plans, connections
for (let round = 0; round < 3; round++) {
  const cpu0 = process.cpuUsage();
  const sys0 = systemTicks();
  const t0 = performance.now();
  for (let i = 0; i < n; i += k) await client.submitMany(Array.from({ length: k }, (_, j) => ({ type: 'noop', payload: { i: i + j } })));
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const sys1 = systemTicks();
  console.log(
    `${n} in batches of ${k}: ${Math.round(n / (wall / 1000))}/s; wall ${Math.round(wall)} ms, this process CPU ${Math.round((cpu.user + cpu.system) / 1000)} ms, machine busy ${(sys1.busy - sys0.busy) * 10} ms`,
  );
}
await store.close();
const admin = new pg.Client(url);
await admin.connect();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();

function systemTicks(): { busy: number; idle: number } {
  const n = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { busy: n[0]! + n[1]! + n[2]! + n[5]! + n[6]! + n[7]!, idle: n[3]! + n[4]! };
}
