/**
 * HTTP load, loopback only: the tasklease server against a bare Fastify
 * baseline on the same database, table and driver, in interleaved rounds.
 *
 * Per store (SQLite file, PostgreSQL schema, MySQL database, each fresh and
 * dropped afterwards), this process runs two servers on 127.0.0.1, neither
 * with a worker:
 *   - tasklease: startServer (its auth, validation, logging, client, store),
 *     POST /api/v1/tasks (submit) and GET /api/v1/tasks/:id (get) with a user token;
 *   - baseline: Fastify (same version), no auth, no schemas, logger off, one
 *     pool of the same driver and size as the store's (pg.Pool max 10,
 *     mysql2 connectionLimit 10, one better-sqlite3 connection in WAL): POST
 *     /tasks inserts one row of the same shape into the same system_async_task
 *     table (plain INSERT, no NOTIFY, no idempotency read-back), GET /tasks/:id
 *     selects it by id and answers the row.
 * The load generator (autocannon) runs in a child process of its own
 * (http-load-child.ts). Each round runs submit then get, the two servers in
 * turn (tasklease first in odd rounds, baseline first in even ones), after one
 * untimed warm-up of each. Prints a JSON line per run, then per store and
 * operation the medians and the median of the per-round ratios
 * tasklease / baseline.
 *
 *   npx tsx bench/http-load.ts
 *   STORES=postgres ROUNDS=5 DURATION=5 CONNECTIONS=20 npx tsx bench/http-load.ts
 *   PROF=/tmp/prof npx tsx bench/http-load.ts   # CPU profile of this process (the servers) per store, server and operation, last round
 *
 * Environment: STORES (sqlite,postgres,mysql), ROUNDS (3), DURATION (s per run, 5),
 * WARMUP (s, 2), CONNECTIONS (20), PG_URL (postgres://postgres@127.0.0.1:5432/test),
 * MYSQL_URL (mysql://root@127.0.0.1:3306/test), PROF (a directory: .cpuprofile files).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { defineTask } from '../src/index.js';
import { uuidv7 } from '../src/core/ids.js';
import { startServer } from '../src/server/index.js';
import type { LoadResult, LoadSpec } from './http-load-child.js';

type StoreName = 'sqlite' | 'postgres' | 'mysql';
type Target = 'tasklease' | 'before' | 'baseline';
type Op = 'submit' | 'get';

const env = process.env;
const stores = (env.STORES ?? 'sqlite,postgres,mysql').split(',') as StoreName[];
const rounds = Number(env.ROUNDS ?? 3);
const durationS = Number(env.DURATION ?? 5);
const warmupS = Number(env.WARMUP ?? 2);
const connections = Number(env.CONNECTIONS ?? 20);
const pgUrl = env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const mysqlUrl = env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
const profDir = env.PROF;
const beforeTree = env.BEFORE;
const targetNames: Target[] = beforeTree ? ['tasklease', 'before', 'baseline'] : ['tasklease', 'baseline'];
const POOL_SIZE = 10; // the PostgreSQL and MySQL stores' default pool size
const name = `bench_http_${process.pid}`;
const BODY = { type: 'bench.noop', payload: { hello: 'world' } };

// ---------- the load generator's process ----------

class LoadGenerator {
  private constructor(private readonly child: ChildProcess) {}

  static async start(): Promise<LoadGenerator> {
    const child = fork(new URL('./http-load-child.ts', import.meta.url).pathname, [], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`load generator exited with ${code}`)));
    });
    return new LoadGenerator(child);
  }

  run(spec: LoadSpec): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      this.child.once('message', (message: { type: 'result'; result: LoadResult } | { type: 'error'; message: string }) =>
        message.type === 'result' ? resolve(message.result) : reject(new Error(message.message)),
      );
      this.child.send({ type: 'run', spec });
    });
  }

  stop(): void {
    this.child.send({ type: 'exit' });
  }
}

// ---------- the baseline: a bare Fastify route over the same driver ----------

interface Baseline {
  url: string;
  close(): Promise<void>;
}

interface BareDb {
  insert(id: string, type: string, payloadJson: string, owner: string): Promise<Date>;
  select(id: string): Promise<unknown>;
  close(): Promise<void>;
}

async function bareDb(store: StoreName, where: string): Promise<BareDb> {
  if (store === 'sqlite') {
    const db = new Database(where);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 20');
    const insert = db.prepare(
      `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, owner, create_time, update_time)
       VALUES (?, ?, 'QUEUED', 0, ?, ?, 3, ?, ?, ?)`,
    );
    const select = db.prepare('SELECT * FROM system_async_task WHERE id = ?');
    return {
      async insert(id, type, payloadJson, owner) {
        const now = new Date();
        const at = now.toISOString().replace('T', ' ').slice(0, 23);
        insert.run(id, type, payloadJson, at, owner, at, at);
        return now;
      },
      async select(id) {
        return select.get(id);
      },
      async close() {
        db.close();
      },
    };
  }
  if (store === 'postgres') {
    const pool = new pg.Pool({ connectionString: pgUrl, max: POOL_SIZE });
    const table = `"${where}".system_async_task`;
    return {
      async insert(id, type, payloadJson, owner) {
        const result = await pool.query<{ create_time: Date }>(
          `INSERT INTO ${table} (id, task_type, status, priority, payload_json, available_at, max_attempts, owner, create_time, update_time)
           VALUES ($1, $2, 'QUEUED', 0, $3, now(), 3, $4, now(), now()) RETURNING create_time`,
          [id, type, payloadJson, owner],
        );
        return result.rows[0]!.create_time;
      },
      async select(id) {
        return (await pool.query(`SELECT * FROM ${table} WHERE id = $1`, [id])).rows[0];
      },
      close: () => pool.end(),
    };
  }
  const pool = mysql.createPool({ uri: where, connectionLimit: POOL_SIZE, dateStrings: true, timezone: 'Z', supportBigNumbers: true, charset: 'utf8mb4' });
  return {
    async insert(id, type, payloadJson, owner) {
      const now = new Date();
      await pool.query(
        `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, owner, create_time, update_time)
         VALUES (?, ?, 'QUEUED', 0, ?, NOW(3), 3, ?, NOW(3), NOW(3))`,
        [id, type, payloadJson, owner],
      );
      return now;
    },
    async select(id) {
      const [rows] = await pool.query('SELECT * FROM system_async_task WHERE id = ?', [id]);
      return (rows as unknown[])[0];
    },
    close: () => pool.end(),
  };
}

async function startBaseline(db: BareDb): Promise<Baseline> {
  const app: FastifyInstance = Fastify({ logger: false });
  app.post('/tasks', async (request, reply) => {
    const body = request.body as { type: string; payload: unknown };
    const id = uuidv7();
    const createdAt = await db.insert(id, body.type, JSON.stringify(body.payload ?? null), 'bench');
    return reply.code(202).send({ created: true, task: { id, taskType: body.type, status: 'QUEUED', payload: body.payload, owner: 'bench', createdAt } });
  });
  app.get('/tasks/:id', async (request, reply) => {
    const row = await db.select((request.params as { id: string }).id);
    return row ?? reply.code(404).send({ success: false });
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    async close() {
      await app.close();
      await db.close();
    },
  };
}

// ---------- per store: a fresh database, the servers ----------

type StartServer = typeof startServer;
type DefineTask = typeof defineTask;

/** The tasklease server of another source tree (BEFORE=<tree>: its src/ through tsx), for before/after figures in one run. */
async function loadBefore(tree: string): Promise<{ startServer: StartServer; defineTask: DefineTask }> {
  const server = (await import(join(tree, 'src/server/index.ts'))) as { startServer: StartServer };
  const index = (await import(join(tree, 'src/index.ts'))) as { defineTask: DefineTask };
  return { startServer: server.startServer, defineTask: index.defineTask };
}

interface Setup {
  /** Base URL of each target's task routes, and its request headers. */
  targets: Map<Target, { tasks: string; headers: Record<string, string> }>;
  taskId: string;
  teardown(): Promise<void>;
}

async function setUp(store: StoreName): Promise<Setup> {
  let databaseUrl: string;
  let where: string;
  let drop: () => Promise<void>;
  if (store === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-http-'));
    where = join(dir, 'bench.db');
    databaseUrl = `sqlite:${where}`;
    drop = async () => rmSync(dir, { recursive: true, force: true });
  } else if (store === 'postgres') {
    where = name;
    databaseUrl = `${pgUrl}?schema=${name}`;
    drop = async () => {
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
      await client.end();
    };
  } else {
    const admin = await mysql.createConnection({ uri: mysqlUrl });
    await admin.query(`CREATE DATABASE IF NOT EXISTS \`${name}\``);
    await admin.end();
    const url = new URL(mysqlUrl);
    url.pathname = `/${name}`;
    databaseUrl = where = url.toString();
    drop = async () => {
      const conn = await mysql.createConnection({ uri: mysqlUrl });
      await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await conn.end();
    };
  }
  const start = (serve: StartServer, define: DefineTask) =>
    serve({ databaseUrl, migrate: true, port: 0, logger: false, tasks: [define({ type: 'bench.noop', execute: () => undefined })] });
  const tasklease = await start(startServer, defineTask);
  const closers: (() => Promise<void>)[] = [() => tasklease.close()];
  const { token } = await tasklease.client.tokens.create({ name: 'bench', role: 'user', owner: 'bench' });
  const { task } = await tasklease.client.submit('bench.noop', { hello: 'world' }, { owner: 'bench' });
  const json = { 'content-type': 'application/json' };
  const auth = { ...json, authorization: `Bearer ${token}` };
  const targets: Setup['targets'] = new Map([['tasklease', { tasks: `${tasklease.url}/api/v1/tasks`, headers: auth }]]);
  if (beforeTree) {
    const other = await loadBefore(beforeTree);
    const before = await start(other.startServer, other.defineTask);
    closers.push(() => before.close());
    targets.set('before', { tasks: `${before.url}/api/v1/tasks`, headers: auth });
  }
  const baseline = await startBaseline(await bareDb(store, where));
  closers.unshift(() => baseline.close());
  targets.set('baseline', { tasks: `${baseline.url}/tasks`, headers: json });
  return {
    targets,
    taskId: task.id,
    async teardown() {
      for (const close of closers) await close();
      await drop();
    },
  };
}

function specOf(setup: Setup, target: Target, op: Op, seconds: number): LoadSpec {
  const { tasks, headers } = setup.targets.get(target)!;
  return op === 'submit'
    ? { url: tasks, method: 'POST', headers, body: JSON.stringify(BODY), connections, durationS: seconds }
    : { url: `${tasks}/${setup.taskId}`, method: 'GET', headers, connections, durationS: seconds };
}

// ---------- the run ----------

interface Row {
  store: StoreName;
  op: Op;
  target: Target;
  round: number;
  result: LoadResult;
  /** CPU time of this process (both servers; only the one under load works) per answered request, µs. */
  cpuUs: number;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function profiled<T>(file: string | null, work: () => Promise<T>): Promise<T> {
  if (file === null) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  }
}

const generator = await LoadGenerator.start();
const rows: Row[] = [];
console.log(`tasklease HTTP load vs bare Fastify: ${stores.join(', ')}; ${rounds} rounds, ${durationS} s per run, ${connections} connections, loopback`);
if (profDir) mkdirSync(profDir, { recursive: true });
try {
  for (const store of stores) {
    const setup = await setUp(store);
    try {
      for (const op of ['submit', 'get'] as const) {
        for (const target of targetNames) await generator.run(specOf(setup, target, op, warmupS));
      }
      for (let round = 1; round <= rounds; round += 1) {
        // Each target first in turn, and the order reversed every other round.
        const rotated = targetNames.map((_, i) => targetNames[(i + round - 1) % targetNames.length]!);
        const order = round % 2 === 1 ? rotated : rotated.reverse();
        for (const op of ['submit', 'get'] as const) {
          for (const target of order) {
            const file = profDir && round === rounds ? join(profDir, `${store}-${target}-${op}.cpuprofile`) : null;
            const cpu = process.cpuUsage();
            const result = await profiled(file, () => generator.run(specOf(setup, target, op, durationS)));
            const used = process.cpuUsage(cpu);
            const cpuUs = Math.round((used.user + used.system) / Math.max(1, result.requests));
            rows.push({ store, op, target, round, result, cpuUs });
            console.log(JSON.stringify({ store, op, target, round, ...result, rps: Math.round(result.rps), cpuUs }));
          }
        }
      }
    } finally {
      await setup.teardown();
    }
  }
} finally {
  generator.stop();
}

console.log("\nmedians over the rounds; cpu = CPU of the servers' process per request (µs); ratio = median of the per-round ratios to baseline (req/s)");
console.log('store     op      target        req/s   p50   p99   cpu   ratio  (per round)');
for (const store of stores) {
  for (const op of ['submit', 'get'] as const) {
    const rowsOf = (target: Target) => rows.filter((r) => r.store === store && r.op === op && r.target === target);
    const base = rowsOf('baseline');
    for (const target of targetNames) {
      const own = rowsOf(target);
      const ratios = own.map((row) => row.result.rps / base.find((b) => b.round === row.round)!.result.rps);
      const errors = own.reduce((sum, r) => sum + r.result.errors, 0);
      const cell = (pick: (row: Row) => number, width: number) => String(Math.round(median(own.map(pick)))).padStart(width);
      const ratio = target === 'baseline' ? '' : `${median(ratios).toFixed(2).padStart(6)}  (${ratios.map((r) => r.toFixed(2)).join(' ')})`;
      console.log(
        `${store.padEnd(9)} ${op.padEnd(7)} ${target.padEnd(10)} ${cell((r) => r.result.rps, 8)} ${cell((r) => r.result.p50, 5)} ${cell((r) => r.result.p99, 5)} ${cell((r) => r.cpuUs, 5)} ${ratio}${errors ? `  ${errors} errors` : ''}`,
      );
    }
  }
}
