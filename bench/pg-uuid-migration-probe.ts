/**
 * PostgreSQL: how long migration 16 (text ids → uuid, in place) holds its
 * tables, for the upgrade notes. Builds a schema as the release before it
 * left one (migrations 1–15), fills N finished tasks, each with one attempt
 * row, every tenth with a failure row, then times migrate() and reports the
 * tables' size on disk before and after.
 * Run: npx tsx bench/pg-uuid-migration-probe.ts [N=1000000]
 */
import pg from 'pg';
import { PG_URL, ownedName } from './config.js';
import { PG_MIGRATIONS } from '../src/store/postgres/migrations.js';
import { PostgresStore } from '../src/postgres.js';

const n = Number(process.argv[2] ?? 1_000_000);
const UUID_VERSION = 16;
const name = ownedName('uuid_mig');
const s = `"${name}"`;
const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });

async function sizes(): Promise<string> {
  const { rows } = await admin.query<{ relname: string; bytes: string }>(
    `SELECT c.relname, pg_total_relation_size(c.oid) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname IN ('system_async_task', 'system_async_task_attempt', 'system_async_task_failure')
     ORDER BY c.relname`,
    [name],
  );
  return rows.map((r) => `${r.relname} ${(Number(r.bytes) / 2 ** 20).toFixed(0)} MiB`).join(', ');
}

try {
  await admin.query(`CREATE SCHEMA ${s}`);
  await admin.query(`CREATE TABLE ${s}.tasklease_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const migration of PG_MIGRATIONS.filter((m) => m.version < UUID_VERSION)) {
    await admin.query(migration.sql(s));
    await admin.query(`INSERT INTO ${s}.tasklease_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
  }
  const filled = Date.now();
  await admin.query(
    `INSERT INTO ${s}.system_async_task (id, task_type, status, priority, payload_json, available_at, attempt_count, max_attempts, create_time,
       update_time, start_time, finish_time)
     SELECT ${s}.tasklease_uuid_v7(), 'probe', 'SUCCESS', 0, '{"n":' || i || '}', now(), 1, 3, now(), now(), now(), now() FROM generate_series(1, $1) i`,
    [n],
  );
  await admin.query(
    `INSERT INTO ${s}.system_async_task_attempt (task_id, attempt, worker_id, started_at, finished_at, outcome)
     SELECT id, 1, 'probe-worker', now(), now(), 'SUCCESS' FROM ${s}.system_async_task`,
  );
  await admin.query(
    `INSERT INTO ${s}.system_async_task_failure (id, task_id, attempt, error_code, error_message, retryable, failed_at)
     SELECT ${s}.tasklease_uuid_v7(), id, 1, 'BOOM', 'probe', true, now() FROM ${s}.system_async_task WHERE right(id, 1) = '0'`,
  );
  await admin.query(`VACUUM ANALYZE ${s}.system_async_task, ${s}.system_async_task_attempt, ${s}.system_async_task_failure`);
  process.stdout.write(`filled ${n} tasks in ${((Date.now() - filled) / 1000).toFixed(1)} s; before: ${await sizes()}\n`);
  const store = new PostgresStore({ connectionString: PG_URL, schema: name, poolSize: 1 });
  try {
    const started = process.hrtime.bigint();
    await store.migrate();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    process.stdout.write(`migration 16 on ${n} tasks: ${seconds.toFixed(1)} s (${((seconds / n) * 1e6).toFixed(1)} s per million); after: ${await sizes()}\n`);
  } finally {
    await store.close();
  }
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await admin.end();
}
