/**
 * History at scale (issue 25): what retention cleanup costs beside a live
 * drain once the task table holds millions of finished tasks. Fills `--rows`
 * finished tasks (SUCCESS, one closed attempt each), their finish times
 * spread evenly over the `--days` before the run (UUIDv7-shaped ids in
 * finish order, as the store draws them); then runs a live loop on the
 * store's own calls — submit 10, claim 10 (timed), finish 10 — for
 * `--baseline` seconds alone, then beside the client's cleanup
 * (retentionDays `--keep`, batches of `--batch`) until the cleanup returns.
 *
 * Reports: claim latency p50/p99 and drain rate before and during cleanup;
 * cleanup rows/s; tables with indexes before and after (PostgreSQL:
 * pg_total_relation_size; MySQL: information_schema data_length +
 * index_length after ANALYZE; SQLite: page_count × page_size and the free
 * list); PostgreSQL: WAL written during cleanup (pg_current_wal_insert_lsn on
 * a cluster of the probe's own, initdb + pg_ctl on another port), less what
 * the live loop writes per task in the baseline.
 *
 * Run: npx tsx bench/history-probe.ts --dialect postgres|mysql|sqlite [--rows 10000000] [--days 30] [--keep 27]
 *      [--batch 500] [--baseline 15] [--history]
 * `--history` (PostgreSQL): the store's partitioned history (historyMoveAfterMs 6 h): fill chunks older than a day
 * go into the history partitions, as earlier cleanups would have moved them, the last day's into the task table;
 * the cleanup then drops the days past retention and moves the tasks finished more than 6 hours ago.
 * MySQL uses a database of its own on BENCH_MYSQL_URL (dropped at the end); SQLite a file under the temp dir.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { clusterTools, TestCluster } from '../test/faults/cluster.js';
import { cleanup } from '../src/client/cleanup.js';
import { createClient, defineTask } from '../src/index.js';
import { leaseOf } from '../src/core/task.js';
import type { Store } from '../src/store/types.js';
import { MYSQL_URL } from './config.js';

const { values } = parseArgs({
  options: {
    dialect: { type: 'string', default: 'postgres' },
    rows: { type: 'string', default: '10000000' },
    days: { type: 'string', default: '30' },
    keep: { type: 'string', default: '27' },
    batch: { type: 'string', default: '500' },
    baseline: { type: 'string', default: '15' },
    history: { type: 'boolean', default: false },
  },
});
const DIALECT = values.dialect!;
const ROWS = Number(values.rows);
const DAYS = Number(values.days);
const KEEP = Number(values.keep);
const BATCH = Number(values.batch);
const BASELINE_S = Number(values.baseline);
const HISTORY = values.history!;
const DAY = 86_400_000;
/** The newest history row finished this long before the run. */
const NEWEST_MS = 3_600_000;
/** --history: the store moves tasks finished this long ago; the fill put those older than a day in the partitions. */
const MOVE_AFTER_MS = 6 * 3_600_000;
const TYPE = 'live';
const PAYLOAD = '{"order":12345,"customer":"c-0001","items":[1,2,3],"note":"history"}';

interface Target {
  store: Store;
  /** Inserts rows [from, to) of the history (row i finishes at finishMs(i)). */
  fill(from: number, to: number): Promise<void>;
  /** After the fill: what a long-lived table has (vacuumed, analyzed, checkpointed). */
  settle(): Promise<void>;
  /** Tables with their indexes, bytes. */
  sizes(): Promise<Record<string, number>>;
  /** WAL position (PostgreSQL) or redo written (MySQL, server-wide), bytes; null when not measured. */
  wal(): Promise<number | null>;
  close(): Promise<void>;
}

const start = Date.now() - DAYS * DAY;
const span = DAYS * DAY - NEWEST_MS;
const finishMs = (i: number): number => start + Math.floor((i * span) / ROWS);
/** A UUIDv7-shaped id: the finish time's milliseconds, then the row number (unique, in finish order). */
function historyId(i: number): string {
  const x = finishMs(i).toString(16).padStart(12, '0') + i.toString(16).padStart(20, '0');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-7${x.slice(13, 16)}-8${x.slice(17, 20)}-${x.slice(20)}`;
}

async function postgresTarget(): Promise<Target> {
  const tools = await clusterTools();
  if (!tools) throw new Error('initdb and pg_ctl are needed (and, as root, a postgres user)');
  const cluster = await TestCluster.create(tools);
  const { PostgresStore } = await import('../src/postgres.js');
  const store = new PostgresStore({ connectionString: cluster.url, schema: 'tasklease', ...(HISTORY ? { historyMoveAfterMs: MOVE_AFTER_MS } : {}) });
  await store.migrate();
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  const s = 'tasklease';
  // The same id shape as historyId(), in SQL; finish times as finishMs().
  const rowsSql = (from: number, to: number): string => `
    SELECT (substr(x, 1, 8) || '-' || substr(x, 9, 4) || '-7' || substr(x, 14, 3) || '-8' || substr(x, 18, 3) || '-' || substr(x, 21, 12)) AS id, ft
    FROM (SELECT lpad(to_hex(ms), 12, '0') || lpad(to_hex(i), 20, '0') AS x, to_timestamp(ms / 1000.0) AS ft
          FROM (SELECT i, (${start}::bigint + (i::numeric * ${span} / ${ROWS})::bigint) AS ms FROM generate_series(${from}::bigint, ${to - 1}::bigint) i) g) h`;
  const taskColumns = `id, task_type, status, priority, payload_json, available_at, max_attempts, attempt_count, create_time, update_time, start_time, finish_time`;
  const taskValues = `id, 'history', 'SUCCESS', 0, '${PAYLOAD}', ft - interval '2 seconds', 3, 1, ft - interval '2 seconds', ft, ft - interval '1 second', ft`;
  return {
    store,
    async fill(from, to) {
      // With --history the rows older than a day go straight into the partitions, as the move would have put them.
      const oldEnough = HISTORY ? finishMs(to - 1) < Date.now() - DAY : false;
      if (oldEnough) {
        await admin.query(`SELECT ${s}.tasklease_history_partitions(to_timestamp(${finishMs(from)} / 1000.0), to_timestamp(${finishMs(to - 1)} / 1000.0))`);
        await admin.query(`WITH t AS (INSERT INTO ${s}.system_async_task_history (${taskColumns}) SELECT ${taskValues} FROM (${rowsSql(from, to)}) r
            RETURNING id, start_time, finish_time)
          INSERT INTO ${s}.system_async_task_attempt_history (task_id, attempt, worker_id, started_at, finished_at, outcome, task_finish_time)
          SELECT id, 1, 'worker-history', start_time, finish_time, 'SUCCESS', finish_time FROM t`);
        return;
      }
      await admin.query(`WITH t AS (INSERT INTO ${s}.system_async_task (${taskColumns}) SELECT ${taskValues} FROM (${rowsSql(from, to)}) r
          RETURNING id, start_time, finish_time)
        INSERT INTO ${s}.system_async_task_attempt (task_id, attempt, worker_id, started_at, finished_at, outcome)
        SELECT id, 1, 'worker-history', start_time, finish_time, 'SUCCESS' FROM t`);
    },
    async settle() {
      await admin.query(`VACUUM (ANALYZE)`);
      await admin.query('CHECKPOINT');
    },
    async sizes() {
      const { rows } = await admin.query<{ name: string; bytes: string }>(
        `SELECT c.relname AS name, sum(pg_total_relation_size(c.oid)) OVER (PARTITION BY c.relname) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT c.relispartition
         UNION ALL
         SELECT p.relname, sum(pg_total_relation_size(c.oid)) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
         JOIN pg_namespace n ON n.oid = p.relnamespace WHERE n.nspname = $1 AND p.relkind = 'p' GROUP BY p.relname`,
        [s],
      );
      return Object.fromEntries(rows.map((row) => [row.name, Number(row.bytes)]));
    },
    async wal() {
      const { rows } = await admin.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint AS b`);
      return Number(rows[0]!.b);
    },
    async close() {
      await admin.end();
      await store.close();
      await cluster.destroy();
    },
  };
}

async function mysqlTarget(): Promise<Target> {
  const database = `tasklease_history_${randomBytes(4).toString('hex')}`;
  const admin = await mysql.createConnection({ uri: MYSQL_URL });
  await admin.query(`CREATE DATABASE \`${database}\``);
  await admin.query(`USE \`${database}\``);
  const { MysqlStore } = await import('../src/mysql.js');
  const store = new MysqlStore({ uri: `${MYSQL_URL}/${database}` });
  await store.migrate();
  const time = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
  return {
    store,
    async fill(from, to) {
      const tasks: unknown[][] = [];
      const attempts: unknown[][] = [];
      for (let i = from; i < to; i++) {
        const ft = finishMs(i);
        const id = historyId(i);
        tasks.push([id, 'history', 'SUCCESS', 0, PAYLOAD, time(ft - 2000), 3, 1, time(ft - 2000), time(ft), time(ft - 1000), time(ft)]);
        attempts.push([id, 1, 'worker-history', time(ft - 1000), time(ft), 'SUCCESS']);
      }
      await admin.query(
        `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, attempt_count, create_time, update_time, start_time, finish_time) VALUES ?`,
        [tasks],
      );
      await admin.query(`INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at, finished_at, outcome) VALUES ?`, [attempts]);
    },
    async settle() {
      await admin.query('ANALYZE TABLE system_async_task, system_async_task_attempt');
    },
    async sizes() {
      await admin.query('ANALYZE TABLE system_async_task, system_async_task_attempt');
      const [rows] = await admin.query<mysql.RowDataPacket[]>(
        'SELECT table_name AS name, data_length + index_length AS bytes FROM information_schema.TABLES WHERE table_schema = ?',
        [database],
      );
      return Object.fromEntries(rows.map((row) => [String(row.name), Number(row.bytes)]));
    },
    async wal() {
      const [rows] = await admin.query<mysql.RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Innodb_os_log_written'");
      return rows[0] ? Number(rows[0].Value) : null;
    },
    async close() {
      await store.close();
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.end();
    },
  };
}

async function sqliteTarget(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-history-'));
  const { SqliteStore } = await import('../src/sqlite.js');
  const store = new SqliteStore({ path: join(dir, 'history.db') });
  await store.migrate();
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(join(dir, 'history.db'));
  db.pragma('busy_timeout = 10000');
  const time = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
  const task = db.prepare(
    `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, attempt_count, create_time, update_time, start_time, finish_time)
     VALUES (?, 'history', 'SUCCESS', 0, ?, ?, 3, 1, ?, ?, ?, ?)`,
  );
  const attempt = db.prepare(
    `INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at, finished_at, outcome) VALUES (?, 1, 'worker-history', ?, ?, 'SUCCESS')`,
  );
  const fillRange = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const ft = finishMs(i);
      const id = historyId(i);
      task.run(id, PAYLOAD, time(ft - 2000), time(ft - 2000), time(ft), time(ft - 1000), time(ft));
      attempt.run(id, time(ft - 1000), time(ft));
    }
  });
  return {
    store,
    async fill(from, to) {
      fillRange(from, to);
    },
    async settle() {
      db.exec('ANALYZE');
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    async sizes() {
      const pageSize = Number(db.pragma('page_size', { simple: true }));
      return {
        file: Number(db.pragma('page_count', { simple: true })) * pageSize,
        freelist: Number(db.pragma('freelist_count', { simple: true })) * pageSize,
      };
    },
    async wal() {
      return null;
    },
    async close() {
      db.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The live drain: submit 10, claim 10 (timed), finish 10, until `stop()`; one loop, as one worker's tick would. */
function liveLoop(store: Store): { latencies: () => number[]; drained: () => number; stop: () => Promise<void> } {
  const client = createClient({ store, tasks: [defineTask({ type: TYPE })] });
  let latencies: number[] = [];
  let drained = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      await client.submitMany(Array.from({ length: 10 }, (_, i) => ({ type: TYPE, payload: { i } })));
      const began = performance.now();
      const tasks = await store.claimTasks({
        workerId: 'probe',
        taskTypes: [TYPE],
        limit: 10,
        leaseMs: 60_000,
        globalConcurrency: 1000,
        typeConcurrency: 1000,
      });
      latencies.push(performance.now() - began);
      await store.finishAttempts({
        outcomes: tasks.map((task) => ({ kind: 'SUCCESS' as const, lease: leaseOf(task), artifactId: null, resultJson: null, progress: null })),
      });
      drained += tasks.length;
      // SQLite answers without I/O waits: let timers (and the cleanup) run between ticks.
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    latencies: () => {
      const taken = latencies;
      latencies = [];
      return taken;
    },
    drained: () => {
      const taken = drained;
      drained = 0;
      return taken;
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
}

const percentile = (xs: number[], p: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
};
const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(0)} MiB`;
const ms = (x: number): string => `${x.toFixed(2)} ms`;

const target = DIALECT === 'postgres' ? await postgresTarget() : DIALECT === 'mysql' ? await mysqlTarget() : await sqliteTarget();
try {
  const chunk = DIALECT === 'postgres' ? 500_000 : DIALECT === 'mysql' ? 2_000 : 50_000;
  let began = performance.now();
  for (let from = 0; from < ROWS; from += chunk) {
    await target.fill(from, Math.min(ROWS, from + chunk));
    if (from % (chunk * Math.max(1, Math.floor(1_000_000 / chunk))) === 0)
      console.error(`filled ${from + chunk} rows, ${((performance.now() - began) / 1000).toFixed(0)} s`);
  }
  const fillSeconds = (performance.now() - began) / 1000;
  began = performance.now();
  await target.settle();
  const settleSeconds = (performance.now() - began) / 1000;
  const before = await target.sizes();
  console.log(
    JSON.stringify({
      dialect: DIALECT,
      history: HISTORY,
      rows: ROWS,
      days: DAYS,
      keep: KEEP,
      batch: BATCH,
      fillSeconds: Math.round(fillSeconds),
      settleSeconds: Math.round(settleSeconds),
      before,
    }),
  );

  const loop = liveLoop(target.store);
  const walBaseline = await target.wal();
  let t0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, BASELINE_S * 1000));
  const baseLatencies = loop.latencies();
  const baseDrained = loop.drained();
  const baseSeconds = (performance.now() - t0) / 1000;
  const walAtCleanup = await target.wal();

  t0 = performance.now();
  // Each batch waits for a turn of the event loop first: SQLite answers without I/O waits, and the live loop in this
  // process must get its turn between batches, as a worker in another process would between the cleanup's transactions.
  const yielding = new Proxy(target.store, {
    get: (store, key) =>
      key === 'purgeTerminalTasks'
        ? async (params: Parameters<Store['purgeTerminalTasks']>[0]) => {
            await new Promise((resolve) => setImmediate(resolve));
            return store.purgeTerminalTasks(params);
          }
        : Reflect.get(store, key),
  });
  const result = await cleanup(yielding, { retentionDays: KEEP, batchSize: BATCH });
  const cleanupSeconds = (performance.now() - t0) / 1000;
  const walAfter = await target.wal();
  const cleanLatencies = loop.latencies();
  const cleanDrained = loop.drained();
  await loop.stop();
  const after = await target.sizes();

  const loopWalPerTask = walBaseline !== null && walAtCleanup !== null ? (walAtCleanup - walBaseline) / baseDrained : null;
  const cleanupWal = walAtCleanup !== null && walAfter !== null && loopWalPerTask !== null ? walAfter - walAtCleanup - loopWalPerTask * cleanDrained : null;
  const summary = {
    dialect: DIALECT,
    history: HISTORY,
    rows: ROWS,
    cleanup: { ...result, seconds: Number(cleanupSeconds.toFixed(1)), rowsPerSecond: Math.round(result.tasks / cleanupSeconds) },
    baseline: {
      claims: baseLatencies.length,
      p50: percentile(baseLatencies, 50),
      p99: percentile(baseLatencies, 99),
      drainPerSecond: Math.round(baseDrained / baseSeconds),
    },
    duringCleanup: {
      claims: cleanLatencies.length,
      p50: percentile(cleanLatencies, 50),
      p99: percentile(cleanLatencies, 99),
      drainPerSecond: Math.round(cleanDrained / cleanupSeconds),
    },
    walBytes:
      cleanupWal === null
        ? null
        : {
            cleanup: Math.round(cleanupWal),
            perTaskRemovedOrMoved: Math.round(cleanupWal / Math.max(1, result.tasks + (result.tasksMoved ?? 0))),
            loopPerTask: Math.round(loopWalPerTask!),
          },
    before,
    after,
  };
  console.log(JSON.stringify(summary));
  console.log(`\n${DIALECT}${HISTORY ? ' (partitioned history)' : ''}: ${ROWS.toLocaleString('en')} finished tasks over ${DAYS} days, cleanup keeps ${KEEP}`);
  console.log(
    `cleanup: ${result.tasks.toLocaleString('en')} tasks removed${result.tasksMoved === undefined ? '' : `, ${result.tasksMoved.toLocaleString('en')} moved, ${result.historyPartitionsDropped} partitions dropped,`} in ${cleanupSeconds.toFixed(1)} s (${summary.cleanup.rowsPerSecond.toLocaleString('en')}/s)`,
  );
  console.log(
    `claim latency p50/p99: before ${ms(summary.baseline.p50)} / ${ms(summary.baseline.p99)}, during cleanup ${ms(summary.duringCleanup.p50)} / ${ms(summary.duringCleanup.p99)}`,
  );
  console.log(`drain: before ${summary.baseline.drainPerSecond}/s, during cleanup ${summary.duringCleanup.drainPerSecond}/s`);
  if (summary.walBytes)
    console.log(
      `WAL: cleanup ${mib(summary.walBytes.cleanup)} (${summary.walBytes.perTaskRemovedOrMoved} B per task removed or moved; the live loop's ${summary.walBytes.loopPerTask} B/task taken out)`,
    );
  for (const name of Object.keys(before)) if ((before[name] ?? 0) > 1048576) console.log(`${name}: ${mib(before[name]!)} → ${mib(after[name] ?? 0)}`);
} finally {
  await target.close();
}
