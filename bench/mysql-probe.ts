/**
 * MySQL/MariaDB hot-path probe: bulk enqueue rate and one worker's drain rate,
 * through the public API (createClient / createWorker), against a database of
 * its own that it drops afterwards.
 *
 *   npx tsx bench/mysql-probe.ts [--n=20000] [--prefetch=10,100,500] [--limits] [--chunk=1000] [--concurrency=10]
 *
 * --trace prints, per statement shape, how many ran during the drain and their
 * client-observed time (mysql2's diagnostics channel): where the drain waits.
 * --limits adds a run with binding limits (global 20, per type 5), as the
 * bench's limits workload. Besides tasks/s it prints the round trips this
 * process made per task during the drain, and the server-wide deltas of
 * statements (Questions), commits and redo-log fsyncs per task over the drain:
 * server-wide, so other clients of the same server inflate them a little.
 * Environment: PROBE_MYSQL_URL (default mysql://root@127.0.0.1:3306).
 */
import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { loadavg } from 'node:os';
import mysql from 'mysql2/promise';
import { createClient, createWorker, defineTask } from '../src/index.js';
import { MysqlStore } from '../src/store/mysql/store.js';

const SERVER = (process.env.PROBE_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306').replace(/\/+$/, '');
const TASK_TYPE = 'probe';
const HIGH = 1_000_000;

interface Args {
  n: number;
  prefetch: number[];
  limits: boolean;
  chunk: number;
  concurrency: number;
  trace: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const get = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return {
    n: Number(get('n') ?? 20_000),
    prefetch: (get('prefetch') ?? '10,100,500').split(',').map(Number),
    limits: argv.includes('--limits'),
    chunk: Number(get('chunk') ?? 1000),
    concurrency: Number(get('concurrency') ?? 10),
    trace: argv.includes('--trace'),
  };
}

interface Run {
  label: string;
  prefetch: number;
  globalConcurrency: number;
  typeConcurrency: number;
}

interface Counters {
  questions: number;
  commits: number;
  fsyncs: number;
}

async function serverCounters(admin: mysql.Connection): Promise<Counters> {
  const [rows] = await admin.query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_commit', 'Handler_commit', 'Innodb_data_fsyncs')");
  const map = new Map((rows as { Variable_name: string; Value: string }[]).map((r) => [r.Variable_name, Number(r.Value)]));
  // Handler_commit counts autocommitted statements too (Com_commit only explicit COMMITs).
  return { questions: map.get('Questions') ?? 0, commits: map.get('Handler_commit') ?? 0, fsyncs: map.get('Innodb_data_fsyncs') ?? 0 };
}

/** Statement shape → count and total client-observed milliseconds (drain only). */
class StatementTrace {
  readonly shapes = new Map<string, { count: number; ms: number }>();
  /** Queries this process sent (a multi-statement batch is one): round trips. */
  roundTrips = 0;
  private on = false;
  private subscribe(): void {
    const channel = diagnostics.tracingChannel('mysql2:query');
    const started = new WeakMap<object, number>();
    channel.subscribe({
      start: (context: object) => void started.set(context, performance.now()),
      asyncStart: (context: object) => {
        const at = started.get(context);
        if (!this.on || at === undefined) return;
        this.roundTrips += 1;
        if (!this.detail) return;
        const sql = String((context as { query?: unknown }).query ?? '');
        const shape = sql
          .replace(/\s+/g, ' ')
          .replace(/'[^']*'/g, '?')
          .replace(/\b\d+(\.\d+)?\b/g, 'N')
          .replace(/(\?, ?|N, ?)+/g, '…')
          .slice(0, 110);
        const entry = this.shapes.get(shape) ?? { count: 0, ms: 0 };
        entry.count += 1;
        entry.ms += performance.now() - at;
        this.shapes.set(shape, entry);
      },
      end: () => undefined,
      asyncEnd: () => undefined,
      error: () => undefined,
    } as never);
  }
  constructor(private readonly detail: boolean) {
    this.subscribe();
  }
  start(): void {
    this.shapes.clear();
    this.roundTrips = 0;
    this.on = true;
  }
  stop(n: number): void {
    this.on = false;
    if (!this.detail) return;
    const sorted = [...this.shapes.entries()].sort((a, b) => b[1].ms - a[1].ms);
    for (const [shape, { count, ms }] of sorted.slice(0, 20)) {
      console.log(
        `  ${ms.toFixed(0).padStart(7)} ms ${String(count).padStart(6)}× ${(ms / count).toFixed(2).padStart(6)} ms ${(count / n).toFixed(3)}/task  ${shape}`,
      );
    }
  }
}

async function probe(admin: mysql.Connection, args: Args, run: Run, trace: StatementTrace): Promise<void> {
  const database = `tasklease_probe_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE \`${database}\``);
  const store = new MysqlStore({ uri: `${SERVER}/${database}` });
  try {
    await store.migrate();
    const client = createClient({ store, tasks: [defineTask({ type: TASK_TYPE })] });

    const enqueueStart = performance.now();
    for (let done = 0; done < args.n; done += args.chunk) {
      const size = Math.min(args.chunk, args.n - done);
      await client.submitMany(Array.from({ length: size }, () => ({ type: TASK_TYPE, payload: {} })));
    }
    const enqueueMs = performance.now() - enqueueStart;

    let completed = 0;
    const worker = createWorker({
      store,
      tasks: [defineTask({ type: TASK_TYPE, execute: () => undefined })],
      concurrency: args.concurrency,
      prefetch: run.prefetch,
      globalConcurrency: run.globalConcurrency,
      typeConcurrency: run.typeConcurrency,
      recoveryIntervalMs: 0,
    });
    const errors: string[] = [];
    worker.on('error', ({ operation, error }) => errors.push(`${operation}: ${(error as Error).message}`));
    const done = new Promise<void>((resolve) => {
      worker.on('completed', () => {
        completed += 1;
        if (completed === args.n) resolve();
      });
    });
    const before = await serverCounters(admin);
    trace.start();
    const drainStart = performance.now();
    worker.start();
    await done;
    const drainMs = performance.now() - drainStart;
    trace.stop(args.n);
    const after = await serverCounters(admin);
    await worker.stop();

    const per = (a: number, b: number) => ((a - b) / args.n).toFixed(2);
    console.log(
      JSON.stringify({
        run: run.label,
        n: args.n,
        concurrency: args.concurrency,
        prefetch: run.prefetch,
        limits: `${run.globalConcurrency}/${run.typeConcurrency}`,
        enqueuePerSec: Math.round(args.n / (enqueueMs / 1000)),
        drainPerSec: Math.round(args.n / (drainMs / 1000)),
        roundTripsPerTask: (trace.roundTrips / args.n).toFixed(3),
        statementsPerTask: per(after.questions, before.questions),
        commitsPerTask: per(after.commits, before.commits),
        fsyncsPerTask: per(after.fsyncs, before.fsyncs),
        errors: errors.length,
        ...(errors.length > 0 ? { firstError: errors[0] } : {}),
      }),
    );
  } finally {
    await store.close();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const runs: Run[] = args.prefetch.map((prefetch) => ({ label: 'unlimited', prefetch, globalConcurrency: HIGH, typeConcurrency: HIGH }));
  if (args.limits) runs.push({ label: 'limits 20/5', prefetch: Math.max(...args.prefetch), globalConcurrency: 20, typeConcurrency: 5 });
  console.log(
    `# load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; server ${SERVER}`,
  );
  const admin = await mysql.createConnection({ uri: SERVER });
  try {
    const trace = new StatementTrace(args.trace);
    for (const run of runs) await probe(admin, args, run, trace);
  } finally {
    await admin.end();
  }
}

await main();
