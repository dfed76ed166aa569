/**
 * PostgreSQL: the database's work per task, tasklease vs graphile-worker
 * (issue 25) — the figures a change to the write path is judged by. One
 * process; N no-op tasks submitted in calls of BATCH, then drained by one
 * worker at CONCURRENCY (tasklease: prefetch 500, limits on but not binding;
 * graphile-worker: localQueue 500, completeJobBatchDelay 0 — as in the bench),
 * each system on a fresh schema, in interleaved rounds (A B, then B A, …).
 * Every phase runs on connections of its own, closed at its end, so that
 * their statistics are flushed (see pg-work.ts). Per task, per phase (submit,
 * drain, total): own WAL (records on the system's relations and of its
 * transactions; FPI apart), server-wide WAL, commits (database-wide; the
 * system's writing ones), rows written (ins/upd/del; HOT); then the medians,
 * tasklease / graphile-worker, and for the last round the rows per table,
 * the own WAL per record type and each table's size on disk after the drain.
 * Run: npx tsx bench/pg-wal-probe.ts [N=20000] [rounds=3]
 * Environment: CONCURRENCY (10), BATCH (1000); DIST=1: tasklease from the built
 * dist/ (npx tsc -p tsconfig.build.json first) instead of src/ through tsx.
 */
import pg from 'pg';
import { makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import { PG_URL, chunks, ownedName } from './config.js';
import { perTask, sumPerTask, type WorkTotals } from './db-work.js';
import { dropWalInspect, pgMeter } from './pg-work.js';
import { isResult, type Line } from './report-lines.js';
import { summarizeWork, workLine, workRatios, workTable } from './report-work.js';
import { COMPLETE_JOB_BATCH_DELAY, LOCAL_QUEUE_SIZE, quietLogger } from './systems/graphile-worker.js';
import { dropSchema } from './systems/postgres.js';
import { HIGH_LIMIT, PREFETCH } from './systems/tasklease.js';
import { library, storeModule } from './systems/tasklease-lib.js';

const n = Number(process.argv[2] ?? 20_000);
const rounds = Number(process.argv[3] ?? 3);
const concurrency = Number(process.env.CONCURRENCY ?? 10);
const batch = Number(process.env.BATCH ?? 1000);
const dist = process.env.DIST === '1';
const { createClient, createWorker, defineTask } = dist ? await library() : await import('../src/index.js');
const { PostgresStore } = dist ? await storeModule('postgres') : await import('../src/postgres.js');
const TYPE = 'noop';

interface ProbeSystem {
  name: string;
  schema: string;
  setup(): Promise<void>;
  /** Opens its own connections, submits `n` tasks, closes them. */
  submit(): Promise<void>;
  /** Opens a worker, runs until `n` handlers have started, stops it (completions flushed) and closes its connections. */
  drain(): Promise<void>;
}

/** Resolves once `count` calls of the returned handler have happened. */
function counter(count: number): { handler: () => void; done: Promise<void> } {
  let seen = 0;
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  return { handler: () => void (++seen === count && resolve()), done };
}

function tasklease(): ProbeSystem {
  const schema = ownedName('wal_tl');
  const open = (): InstanceType<typeof PostgresStore> => new PostgresStore({ connectionString: PG_URL, schema });
  return {
    name: 'tasklease-postgres',
    schema,
    async setup() {
      await dropSchema(schema);
      const store = open();
      await store.migrate();
      await store.close();
    },
    async submit() {
      const store = open();
      const client = createClient({ store, tasks: [defineTask({ type: TYPE })] });
      for (const size of chunks(n, batch)) await client.submitMany(Array.from({ length: size }, () => ({ type: TYPE, payload: {} })));
      await store.close();
    },
    async drain() {
      const store = open();
      const { handler, done } = counter(n);
      const worker = createWorker({
        store,
        tasks: [defineTask({ type: TYPE, execute: handler })],
        concurrency,
        prefetch: PREFETCH,
        globalConcurrency: HIGH_LIMIT,
        typeConcurrency: HIGH_LIMIT,
      });
      worker.on('error', ({ operation, error }) => console.error(`[tasklease worker] ${operation}: ${(error as Error).message}`));
      worker.start();
      await done;
      await worker.stop();
      await store.close();
    },
  };
}

function graphileWorker(): ProbeSystem {
  const schema = ownedName('wal_graphile');
  return {
    name: 'graphile-worker',
    schema,
    async setup() {
      await dropSchema(schema);
      await runMigrations({ connectionString: PG_URL, schema, logger: quietLogger });
    },
    async submit() {
      const utils = await makeWorkerUtils({ connectionString: PG_URL, schema, logger: quietLogger });
      for (const size of chunks(n, batch)) await utils.addJobs(Array.from({ length: size }, () => ({ identifier: TYPE, payload: {} })));
      await utils.release();
    },
    async drain() {
      const pgPool = new pg.Pool({ connectionString: PG_URL, max: Math.max(10, concurrency + 2) });
      pgPool.on('error', (error) => console.error(`[graphile-worker pool] ${error.message}`));
      pgPool.on('connect', (client) => client.on('error', (error) => console.error(`[graphile-worker client] ${error.message}`)));
      const { handler, done } = counter(n);
      const runner = await run({
        pgPool,
        schema,
        concurrency,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: { [TYPE]: async () => handler() },
        preset: { worker: { localQueue: { size: LOCAL_QUEUE_SIZE }, completeJobBatchDelay: COMPLETE_JOB_BATCH_DELAY } },
      });
      await done;
      await runner.stop();
      await pgPool.end();
    },
  };
}

const lines: Line[] = [];
const last = new Map<string, { submit: WorkTotals; drain: WorkTotals }>();
/** Per system, of the last round: each table's size on disk after the drain (with its indexes and TOAST; before any vacuum). */
const atRest = new Map<string, Record<string, number>>();

async function tableSizes(schema: string): Promise<Record<string, number>> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
       WHERE ns.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    return Object.fromEntries(rows.map((row) => [row.name, Number(row.bytes)]));
  } finally {
    await client.end();
  }
}

async function measure(system: ProbeSystem, phase: () => Promise<void>): Promise<WorkTotals> {
  const started = await pgMeter(system.schema).begin();
  await phase();
  return started.end(n);
}

async function round(system: ProbeSystem, index: number): Promise<void> {
  await system.setup();
  try {
    const submit = await measure(system, () => system.submit());
    const drain = await measure(system, () => system.drain());
    last.set(system.name, { submit, drain });
    atRest.set(system.name, await tableSizes(system.schema));
    const [e, d] = [perTask(submit), perTask(drain)];
    const line = workLine(system.name, index, e, d, sumPerTask(e, d));
    lines.push(line);
    console.log(JSON.stringify(line));
  } finally {
    await dropSchema(system.schema);
  }
}

/** Per task: rows written per table and own WAL per record type (largest first), of one round's phases. */
function breakdown(name: string, phases: { submit: WorkTotals; drain: WorkTotals }): string[] {
  const out = [`${name}, last round, per task:`];
  for (const [phase, totals] of Object.entries(phases)) {
    const tables = Object.entries(totals.tables ?? {})
      .filter(([, t]) => t.ins + t.upd + t.del > 0)
      .map(
        ([table, t]) => `${table} ins ${(t.ins / n).toFixed(2)} upd ${(t.upd / n).toFixed(2)} (HOT ${(t.hot / n).toFixed(2)}) del ${(t.del / n).toFixed(2)}`,
      );
    out.push(`  ${phase} rows: ${tables.join('; ') || 'none'}`);
    const records = Object.entries(totals.records ?? {})
      .filter(([, r]) => r.bytes / n >= 0.5)
      .sort(([, a], [, b]) => b.bytes - a.bytes)
      .map(([type, r]) => `${type} ${Math.round(r.bytes / n)} B (${(r.count / n).toFixed(2)} records)`);
    out.push(`  ${phase} own WAL, record types of 0.5 B/task or more: ${records.join(', ') || 'not measured'}`);
  }
  const sizes = Object.entries(atRest.get(name) ?? {}).filter(([, bytes]) => bytes / n >= 20);
  const total = sizes.reduce((sum, [, bytes]) => sum + bytes, 0);
  out.push(
    `  on disk after the drain (tables of 20 B/task or more, with their indexes; before any vacuum): ${sizes.map(([table, bytes]) => `${table} ${Math.round(bytes / n)} B`).join(', ')}; total ${Math.round(total / n)} B/task`,
  );
  return out;
}

const systems = [tasklease(), graphileWorker()];
console.log(
  `${n} no-op tasks, submitted in calls of ${batch}, drained at concurrency ${concurrency}; ${rounds} rounds; tasklease from ${dist ? 'dist/' : 'src/'}`,
);
try {
  for (let index = 1; index <= rounds; index += 1) {
    for (const system of index % 2 === 1 ? systems : [...systems].reverse()) await round(system, index);
    for (const line of workRatios(lines, index)) {
      lines.push(line);
      console.log(JSON.stringify(line));
    }
  }
} finally {
  await dropWalInspect();
}
lines.push(...summarizeWork(lines));
const ratio = lines.filter(isResult).find((l) => l.workload === 'work-ratio' && l.round === undefined);
const phases =
  '**phases** (this probe): submit = a producer on connections of its own, opened and closed around it; drain = a worker in this process, from its start until every handler has started, then stopped (completions flushed) and its connections closed. Medians over the rounds, each figure on its own.';
console.log(`\n${workTable(lines, phases).join('\n')}\n`);
if (ratio)
  console.log(
    `tasklease / graphile-worker per round (own WAL without full-page images): ${(ratio.rounds as number[]).map((r) => `${r.toFixed(2)}×`).join(', ')}\n`,
  );
for (const system of systems) {
  const phases = last.get(system.name);
  if (phases) console.log(`${breakdown(system.name, phases).join('\n')}\n`);
}
