/**
 * PostgreSQL pickup latency, step by step: submit → submit answered →
 * notification heard by the worker's store → claim sent → claim answered →
 * handler started. Producer and worker use separate stores (separate
 * connections, as separate processes would) in one process, so that one
 * clock times every step.
 * Run: npx tsx bench/pg-latency-probe.ts [samples=300]
 * ASYNC_CLAIM=1: every commit of the worker's connections with synchronous_commit = off
 * (claims made alone already commit so; this makes the outcomes asynchronous too).
 */
import pg from 'pg';
import { createClient, createWorker, defineTask } from '../src/index.js';
import { PostgresStore } from '../src/postgres.js';
const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = `probe_lat_${process.pid}`;
const samples = Number(process.argv[2] ?? 300);
const producerStore = new PostgresStore({ connectionString: url, schema, poolSize: 2 });
await producerStore.migrate();
const workerUrl = process.env.ASYNC_CLAIM === '1' ? `${url}?options=${encodeURIComponent('-c synchronous_commit=off')}` : url;
const workerStore = new PostgresStore({ connectionString: workerUrl, schema, poolSize: 4 });
const marks = { submitted: 0, heard: 0, claimSent: 0, claimAnswered: 0, started: 0 };
let t0 = 0;
let onStart: (() => void) | null = null;
const subscribe = workerStore.subscribe.bind(workerStore);
workerStore.subscribe = (listener) =>
  subscribe((event) => {
    if (!marks.heard && t0) marks.heard = performance.now();
    listener(event);
  });
const claimTasks = workerStore.claimTasks.bind(workerStore);
workerStore.claimTasks = async (p) => {
  const sent = performance.now();
  const tasks = await claimTasks(p);
  if (tasks.length > 0) {
    marks.claimSent = sent;
    marks.claimAnswered = performance.now();
  }
  return tasks;
};
const task = defineTask({
  type: 'ping',
  execute: () => {
    marks.started = performance.now();
    onStart?.();
  },
});
const worker = createWorker({ store: workerStore, tasks: [task], concurrency: 10, prefetch: 500, recoveryIntervalMs: 0 });
worker.start();
const client = createClient({ store: producerStore, tasks: [task] });
await new Promise((r) => setTimeout(r, 500));
const rows: number[][] = [];
for (let i = 0; i < samples; i++) {
  for (const k of Object.keys(marks) as (keyof typeof marks)[]) marks[k] = 0;
  const started = new Promise<void>((r) => {
    onStart = r;
  });
  const begin = performance.now();
  t0 = begin;
  await client.submit('ping', {});
  marks.submitted = performance.now();
  await started;
  t0 = 0;
  // Steps may overlap (the notification can arrive before the submit's answer): each is measured from the submit call.
  rows.push([marks.submitted, marks.heard, marks.claimSent, marks.claimAnswered, marks.started].map((m) => (m ? m - begin : NaN)));
  await new Promise((r) => setTimeout(r, Math.random() * 20));
}
const names = ['submit answered', 'notification heard', 'claim sent', 'claim answered', 'handler started'];
const pct = (xs: number[], q: number): number => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
console.log(`${samples} samples, ms after the submit call: p50 / p95 / p99`);
names.forEach((name, i) => {
  const xs = rows
    .map((r) => r[i]!)
    .filter((x) => !Number.isNaN(x))
    .sort((a, b) => a - b);
  console.log(`${name.padEnd(20)} ${pct(xs, 0.5).toFixed(2)} / ${pct(xs, 0.95).toFixed(2)} / ${pct(xs, 0.99).toFixed(2)}  (${xs.length} seen)`);
});
await worker.stop();
await workerStore.close();
await producerStore.close();
const admin = new pg.Client(url);
await admin.connect();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();
