/**
 * PostgreSQL: the plans each statement of tasklease_claim gets, by table
 * state and by session (PL/pgSQL keeps a statement's plan for the session;
 * claim.ts, "Plans"). One session claims at 10 rows, then ROWS tasks arrive
 * in one INSERT with no ANALYZE (autovacuum is off for the probe's table),
 * a second session starts, then ANALYZE, then a third. Each claim is rolled
 * back. Per claim: each statement's time (auto_explain with ANALYZE) and its
 * scans, whole-table reads marked.
 * Run: npx tsx bench/pg-claim-plan-probe.ts
 *   ROWS=100000   tasks inserted in bulk
 *   LIVE=1        fair share on (workers pass liveWithinMs); OWNERS=1: owners in play (fairOwners)
 *   GENERIC=1     sessions on generic plans (plan_cache_mode = force_generic_plan: what the server may settle on)
 *   ANALYZE_TINY=1  analyze the 10-row table first
 *   FUNCTION_SET='enable_seqscan = off;jit = off'  settings added to the function (ALTER FUNCTION … SET), to try one
 *   VERBOSE=1     every statement's whole plan
 */
import pg from 'pg';
import { CLAIM_ARG_COUNT, claimArgs } from '../src/store/postgres/claim.js';
import { PostgresStore } from '../src/postgres.js';

const URL = process.env.TASKLEASE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROWS = Number(process.env.ROWS ?? 100_000);
const schema = `probe_plan_${process.pid}`;
const SIGNATURE = 'text, text[], integer, double precision, integer, integer, double precision, integer, boolean, text, boolean';
const store = new PostgresStore({ connectionString: URL, schema });
const admin = new pg.Client(URL);
const sessions: pg.Client[] = [];

async function session(): Promise<(label: string) => Promise<void>> {
  const client = new pg.Client(URL);
  await client.connect();
  sessions.push(client);
  const notices: string[] = [];
  client.on('notice', (notice) => notices.push(notice.message ?? ''));
  if (process.env.GENERIC) await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(
    "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice",
  );
  const placeholders = Array.from({ length: CLAIM_ARG_COUNT }, (_, i) => `$${i + 1}`).join(', ');
  const params = {
    workerId: 'w',
    taskTypes: ['flood'],
    limit: 10,
    leaseMs: 60_000,
    globalConcurrency: 1e6,
    typeConcurrency: 1e6,
    fairOwners: Boolean(process.env.OWNERS),
    liveWithinMs: process.env.LIVE ? 60_000 : undefined,
  };
  return async (label) => {
    notices.length = 0;
    await client.query('BEGIN');
    const started = performance.now();
    const result = await client.query(`SELECT id FROM ${schema}.tasklease_claim(${placeholders})`, claimArgs(params, false));
    const ms = performance.now() - started;
    await client.query('ROLLBACK');
    console.log(`${label}: ${ms.toFixed(1)} ms, ${result.rowCount} rows`);
    for (const plan of notices.filter((text) => text.includes('system_async_task '))) {
      const took = /duration: ([\d.]+) ms/.exec(plan)?.[1];
      const query = (/Query Text: ([^\n]*)/.exec(plan)?.[1] ?? '').trim().slice(0, 50);
      const scans = [...plan.matchAll(/(Seq Scan on \S+ \w+|Index (?:Only )?Scan using \S+)/g)].map((m) =>
        /^Seq Scan on system_async_task /.test(m[1]!) ? `${m[1]} (WHOLE TABLE)` : m[1],
      );
      console.log(`  ${took?.padStart(9)} ms  ${query.padEnd(50)}  ${scans.join('; ')}`);
      if (process.env.VERBOSE) console.log(plan);
    }
  };
}

const insert = (count: number, type: string) =>
  admin.query(
    `INSERT INTO ${schema}.system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, create_time, update_time)
     SELECT ${schema}.tasklease_uuid_v7(), $2, 'QUEUED', i % 3, '{}', now(), 3, now(), now() FROM generate_series(1, $1) i`,
    [count, type],
  );

try {
  await store.migrate();
  await admin.connect();
  await admin.query(`ALTER TABLE ${schema}.system_async_task SET (autovacuum_enabled = false)`);
  for (const setting of (process.env.FUNCTION_SET ?? '').split(';').filter(Boolean))
    await admin.query(`ALTER FUNCTION ${schema}.tasklease_claim(${SIGNATURE}) SET ${setting}`);
  await insert(10, 'flood');
  if (process.env.ANALYZE_TINY) await admin.query(`ANALYZE ${schema}.system_async_task`);
  const first = await session();
  for (let call = 1; call <= 7; call++) await first(`10 rows, session 1, call ${call}`);
  await insert(ROWS, 'flood');
  await insert(ROWS / 10, 'other');
  await first(`+${ROWS} in bulk, no ANALYZE, session 1`);
  const second = await session();
  for (let call = 1; call <= 7; call++) await second(`+${ROWS} in bulk, no ANALYZE, session 2, call ${call}`);
  await admin.query(`ANALYZE ${schema}.system_async_task`);
  await first('analyzed, session 1');
  await second('analyzed, session 2');
  const third = await session();
  for (let call = 1; call <= 7; call++) await third(`analyzed, session 3, call ${call}`);
} finally {
  await Promise.all(sessions.map((client) => client.end()));
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
  await admin.end();
}
