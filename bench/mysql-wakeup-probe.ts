/**
 * MySQL/MariaDB: what the wake-up counter poll costs an idle worker, and how
 * soon a worker in another process sees a submit, by wakeupPollMs, in
 * interleaved rounds (A B A B …).
 *
 *   npx tsx bench/mysql-wakeup-probe.ts [--poll=0,10,20] [--rounds=3] [--idle-seconds=5] [--probes=40]
 *
 * Per round and setting: an idle worker (its own store, as another process
 * would have: the submits reach it only through the counters, never the
 * in-process bus) runs `idle-seconds`; then the reads it made per second
 * (counted on mysql2's diagnostics channel, this process only) and its
 * process's CPU per second. Then `probes` single submits through a separate
 * store, each timed from before the submit to the handler start; the
 * producer's store is on another bus (a different host spelling, so that
 * only the counters can wake the worker). Database of its own, dropped after.
 * Environment: PROBE_MYSQL_URL (default mysql://root@127.0.0.1:3306).
 */
import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import mysql from 'mysql2/promise';
import { createClient, createWorker, defineTask } from '../src/index.js';
import { MysqlStore } from '../src/store/mysql/store.js';

const SERVER = (process.env.PROBE_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/+$/, '');
const get = (name: string, fallback: string): string => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const polls = get('poll', '0,10,20').split(',').map(Number);
const rounds = Number(get('rounds', '3'));
const idleSeconds = Number(get('idle-seconds', '5'));
const probes = Number(get('probes', '40'));

let statements = 0;
const ignore = (): void => undefined;
diagnostics.tracingChannel('mysql2:query').subscribe({ start: () => (statements += 1), end: ignore, asyncStart: ignore, asyncEnd: ignore, error: ignore });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function round(database: string, pollMs: number): Promise<{ steps: string; readsPerSecond: number; cpuMsPerSecond: number; p50: number; p90: number }> {
  const store = new MysqlStore({ uri: `${SERVER}/${database}`, wakeupPollMs: pollMs, poolSize: 4 });
  // Another spelling of the same server: another in-process bus, as for a producer in another process.
  const producerStore = new MysqlStore({ uri: `${SERVER.replace('127.0.0.1', 'localhost')}/${database}`, wakeupPollMs: 0, poolSize: 2 });
  let started: ((at: number) => void) | null = null;
  // Per probe, ms after the submit call: the submit's answer, the counter read that saw it, the claim that took it.
  const marks = { submitted: 0, heard: 0, claimSent: 0, claimAnswered: 0 };
  let t0 = 0;
  store.subscribe((event) => {
    if (t0 && !marks.heard && event.kind === 'submitted' && event.taskTypes.length === 0) marks.heard = performance.now() - t0;
  });
  const claimTasks = store.claimTasks.bind(store);
  store.claimTasks = async (params) => {
    const sent = performance.now();
    const tasks = await claimTasks(params);
    if (t0 && tasks.length > 0 && !marks.claimAnswered) {
      marks.claimSent = sent - t0;
      marks.claimAnswered = performance.now() - t0;
    }
    return tasks;
  };
  const steps: number[][] = [];
  const task = defineTask<unknown>({ type: 'probe', execute: () => started?.(performance.now()) });
  const worker = createWorker({ store, tasks: [task], concurrency: 10, logger: false });
  const client = createClient({ store: producerStore, tasks: [task] });
  worker.start();
  await sleep(1500); // its first claims done, its claim poll backed off to pollIntervalMs
  const before = { statements, cpu: process.cpuUsage(), at: performance.now() };
  await sleep(idleSeconds * 1000);
  const cpu = process.cpuUsage(before.cpu);
  const seconds = (performance.now() - before.at) / 1000;
  const waits: number[] = [];
  for (let i = 0; i < probes; i += 1) {
    const done = new Promise<number>((resolve) => (started = resolve));
    for (const key of Object.keys(marks) as (keyof typeof marks)[]) marks[key] = 0;
    const at = performance.now();
    t0 = at;
    await client.submit('probe', {});
    marks.submitted = performance.now() - at;
    waits.push((await done) - at);
    t0 = 0;
    steps.push([marks.submitted, marks.heard, marks.claimSent, marks.claimAnswered]);
    await sleep(Math.random() * 30);
  }
  await worker.stop();
  await store.close();
  await producerStore.close();
  waits.sort((a, b) => a - b);
  const median = (i: number): number => {
    const xs = steps
      .map((row) => row[i]!)
      .filter((x) => x > 0)
      .sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)] ?? Number.NaN;
  };
  return {
    steps: `submit answered ${median(0).toFixed(1)}, counter heard ${median(1).toFixed(1)}, claim sent ${median(2).toFixed(1)}, claim answered ${median(3).toFixed(1)} (medians, ms)`,
    readsPerSecond: (statements - before.statements) / seconds,
    cpuMsPerSecond: (cpu.user + cpu.system) / 1000 / seconds,
    p50: waits[Math.floor(waits.length / 2)]!,
    p90: waits[Math.floor(waits.length * 0.9)]!,
  };
}

const database = `probe_wake_${randomBytes(4).toString('hex')}`;
const admin = await mysql.createConnection(SERVER);
await admin.query(`CREATE DATABASE ${database}`);
try {
  const setup = new MysqlStore({ uri: `${SERVER}/${database}` });
  await setup.migrate();
  await setup.close();
  for (let r = 1; r <= rounds; r += 1) {
    for (const pollMs of r % 2 === 1 ? polls : [...polls].reverse()) {
      const result = await round(database, pollMs);
      console.log(
        `round ${r} wakeupPollMs=${pollMs}: idle ${result.readsPerSecond.toFixed(1)} statements/s, ${result.cpuMsPerSecond.toFixed(2)} ms CPU/s; pickup p50 ${result.p50.toFixed(1)} ms, p90 ${result.p90.toFixed(1)} ms; ${result.steps}`,
      );
    }
  }
} finally {
  await admin.query(`DROP DATABASE ${database}`);
  await admin.end();
}
