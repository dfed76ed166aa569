/**
 * Many worker processes on one PostgreSQL schema (issue 24, "claims at
 * scale"): drains one backlog of no-op tasks with 1, 4, 16 and 64 worker
 * processes, directly and through PgBouncer in transaction mode, and
 * samples the advisory-lock waits (pg_locks, every 20 ms) and the server
 * connections the run holds (pg_stat_activity) meanwhile.
 *
 * Run (tasklease from dist/: `npx tsc -p tsconfig.build.json` first):
 *   npx tsx bench/pg-scale-probe.ts [--processes 1,4,16,64] [--tasks 20000] [--concurrency 2]
 *     [--modes direct,pgbouncer] [--server-pool 20] [--limits 100000/100000]
 * `--limits G/T`: the workers' global / per-type limits (default far above
 * what the run can lease: no limit can bind, claims go side by side; 20/5,
 * the seed's: every claim takes the schema's lock alone).
 *
 * Direct runs hold poolSize 1 + leasePoolSize 2 (its minimum) + 1 LISTEN
 * connection per process: 64 processes need 256 server connections, more than a default
 * max_connections (100) — the probe skips a direct run that would not fit
 * (that is what the pooler is for). Through PgBouncer the workers use
 * `pooler: 'transaction'` and `pollOnly` (no LISTEN through a transaction
 * pooler; see docs/production.md) on at most --server-pool server connections.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../test/helpers/pgbouncer.js';
import { PG_URL } from './config.js';
import { library, storeModule } from './systems/tasklease-lib.js';

export interface ScaleChildSpec {
  connectionString: string;
  schema: string;
  concurrency: number;
  transactionPooler: boolean;
  globalConcurrency: number;
  typeConcurrency: number;
}

const TYPE = 'scale.noop';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '1,4,16,64' },
    tasks: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '2' },
    modes: { type: 'string', default: 'direct,pgbouncer' },
    'server-pool': { type: 'string', default: '20' },
    limits: { type: 'string', default: '100000/100000' },
    child: { type: 'string' },
  },
});

if (values.child) await runChild(JSON.parse(values.child) as ScaleChildSpec);
else await main();

async function main(): Promise<void> {
  const counts = values.processes.split(',').map(Number);
  const tasks = Number(values.tasks);
  const concurrency = Number(values.concurrency);
  const serverPool = Number(values['server-pool']);
  const [globalConcurrency, typeConcurrency] = values.limits.split('/').map(Number) as [number, number];
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  const maxConnections = Number((await admin.query('SHOW max_connections')).rows[0].max_connections);
  console.log(
    `machine: ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}; ${tasks} tasks; concurrency ${concurrency} per process; limits ${globalConcurrency}/${typeConcurrency}; max_connections ${maxConnections}`,
  );
  let bouncer: PgBouncer | null = null;
  try {
    for (const mode of values.modes.split(',')) {
      if (mode === 'pgbouncer') {
        const binary = pgbouncerBinary('bench/pg-scale-probe.ts');
        if (!binary) continue;
        bouncer = await startPgBouncer(binary, 'transaction', serverPool);
      }
      for (const processes of counts) {
        const perProcess = mode === 'direct' ? 4 : 0;
        if (mode === 'direct' && processes * perProcess + 10 > maxConnections) {
          console.log(JSON.stringify({ mode, processes, skipped: `needs ${processes * perProcess} server connections; max_connections is ${maxConnections}` }));
          continue;
        }
        const line = await drain(admin, {
          mode,
          processes,
          tasks,
          concurrency,
          globalConcurrency,
          typeConcurrency,
          url: mode === 'direct' ? PG_URL : bouncer!.url,
        });
        console.log(JSON.stringify(line));
      }
      await bouncer?.stop();
      bouncer = null;
    }
  } finally {
    await bouncer?.stop();
    await admin.end();
  }
}

interface DrainSpec {
  mode: string;
  processes: number;
  tasks: number;
  concurrency: number;
  globalConcurrency: number;
  typeConcurrency: number;
  url: string;
}

async function drain(admin: pg.Client, spec: DrainSpec) {
  const { createClient, defineTask, Scope } = await library();
  const { PostgresStore } = await storeModule('postgres');
  const schema = `scale_${process.pid}_${spec.mode}_${spec.processes}`;
  const store = new PostgresStore({ connectionString: PG_URL, schema, poolSize: 4 });
  await store.migrate();
  const client = createClient({ store, tasks: [defineTask({ type: TYPE, execute: () => undefined })] });
  for (let i = 0; i < spec.tasks; i += 5000) {
    await client.submitMany(Array.from({ length: Math.min(5000, spec.tasks - i) }, () => ({ type: TYPE, payload: {} })));
  }
  const children: ChildProcess[] = [];
  const errors: string[] = [];
  try {
    const ready: Promise<void>[] = [];
    for (let i = 0; i < spec.processes; i += 1) {
      const childSpec: ScaleChildSpec = {
        connectionString: spec.url,
        schema,
        concurrency: spec.concurrency,
        transactionPooler: spec.mode === 'pgbouncer',
        globalConcurrency: spec.globalConcurrency,
        typeConcurrency: spec.typeConcurrency,
      };
      const child = fork(new URL(import.meta.url).pathname, ['--child', JSON.stringify(childSpec)], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(child);
      child.on('message', (message: { type: string; message?: string }) => {
        if (message.type === 'error') errors.push(message.message ?? '');
      });
      ready.push(new Promise((resolve) => child.on('message', (message: { type: string }) => message.type === 'ready' && resolve())));
      // Start them a few at a time: 64 processes loading at once on 2 cores only time out.
      if (i % 4 === 3) await Promise.all(ready.slice(-4));
    }
    await Promise.all(ready);
    const lockSamples: number[] = [];
    const connectionSamples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const row = (
          await admin.query(
            `SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)::int AS waiting,
                    (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid())::int AS connections`,
          )
        ).rows[0] as { waiting: number; connections: number };
        lockSamples.push(row.waiting);
        connectionSamples.push(row.connections);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const load = loadavg()[0]!;
    const started = performance.now();
    for (const child of children) child.send({ type: 'go' });
    for (;;) {
      const done = (await store.countByStatus({ scope: Scope.global() })).SUCCESS;
      if (done >= spec.tasks) break;
      if (errors.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    sampling = false;
    await sampler;
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    return {
      mode: spec.mode,
      processes: spec.processes,
      concurrency: spec.concurrency,
      tasks: spec.tasks,
      seconds: Number(seconds.toFixed(2)),
      tasksPerSecond: Math.round(spec.tasks / seconds),
      advisoryWaitersMean: Number(mean(lockSamples).toFixed(2)),
      advisoryWaitersMax: Math.max(0, ...lockSamples),
      serverConnectionsMax: Math.max(0, ...connectionSamples),
      errors: errors.length,
      firstError: errors[0]?.slice(0, 300),
      loadAtStart: Number(load.toFixed(2)),
      loadAtEnd: Number(loadavg()[0]!.toFixed(2)),
    };
  } finally {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.send({ type: 'stop' });
          }),
      ),
    );
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}

async function runChild(spec: ScaleChildSpec): Promise<void> {
  const { createWorker, defineTask } = await library();
  const { PostgresStore } = await storeModule('postgres');
  const store = new PostgresStore({
    connectionString: spec.connectionString,
    schema: spec.schema,
    poolSize: 1,
    leasePoolSize: 2,
    ...(spec.transactionPooler ? { pooler: 'transaction' as const, pollOnly: true } : {}),
  });
  const worker = createWorker({
    store,
    tasks: [defineTask({ type: TYPE, execute: () => undefined })],
    concurrency: spec.concurrency,
    globalConcurrency: spec.globalConcurrency,
    typeConcurrency: spec.typeConcurrency,
    logger: false,
  });
  worker.on('error', ({ operation, error }) => process.send?.({ type: 'error', message: `${operation}: ${(error as Error).message}` }));
  await store.now();
  process.on('message', (message: { type: string }) => {
    if (message.type === 'go') worker.start();
    if (message.type === 'stop')
      void worker
        .stop()
        .then(() => store.close())
        .then(() => process.exit(0));
  });
  process.send?.({ type: 'ready' });
}
