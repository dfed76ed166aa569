/**
 * What each lever of issue 25 could save in PostgreSQL's WAL per task, as an
 * upper bound, before any of it is built: the store's writes for one task
 * (submit, claim, outcome) replayed in plain SQL against copies of its
 * tables that differ in one thing each, on a cluster of the probe's own
 * (initdb + pg_ctl on another port: no other session's WAL in the figures).
 *
 * Run: npx tsx bench/pg-wal-levers-probe.ts [--tasks 20000] [--batch 10] [--rounds 2] [--waldump]
 *
 * Variants (each a schema with the store's columns and indexes as migrated today):
 *   text      the schema as it is (37-byte text ids)
 *   uuid      ids as `uuid` (16 bytes) in the task and attempt tables
 *   once      the attempt row inserted once, with its outcome, instead of at the claim and closed at the outcome
 *   uuid+once both
 *   narrow    text ids, the payload kept in a side table written once at submit (the hot row without it)
 *   side      text ids; no index on the task row's status: the claimable and the leased sets are narrow side
 *             tables (a row inserted and deleted per task each), so that the task row's status changes are HOT
 *             updates (fillfactor 50)
 *
 * Each task: submitted in statements of 100 rows (one commit each); claimed in
 * batches (`--batch`, the worker's claim size) and finished in batches, one
 * commit per claim and per outcome batch, as the worker does. It prints WAL
 * bytes per task for the submit and for the drain (claim + outcome), and
 * each variant's total against `text`. The payload is 60 bytes of JSON. A
 * CHECKPOINT before each variant gives each the same full-page images.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import type { TestCluster } from '../test/faults/cluster.js';
import { withOwnCluster } from './own-cluster.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
    waldump: { type: 'boolean', default: false },
  },
});
const TASKS = Number(values.tasks);
const BATCH = Number(values.batch);
const ROUNDS = Number(values.rounds);

interface Variant {
  name: string;
  uuid: boolean;
  once: boolean;
  narrow: boolean;
  side?: boolean;
}
const VARIANTS: Variant[] = [
  { name: 'text', uuid: false, once: false, narrow: false },
  { name: 'uuid', uuid: true, once: false, narrow: false },
  { name: 'once', uuid: false, once: true, narrow: false },
  { name: 'uuid+once', uuid: true, once: true, narrow: false },
  { name: 'narrow', uuid: false, once: false, narrow: true },
  { name: 'side', uuid: false, once: false, narrow: false, side: true },
];

/** The task and attempt tables as migrated today (src/store/postgres/migrations.ts), one type changed per variant. */
function schemaSql(s: string, v: Variant): string {
  const id = v.uuid ? 'uuid' : 'text';
  return `
DROP SCHEMA IF EXISTS ${s} CASCADE; CREATE SCHEMA ${s};
CREATE TABLE ${s}.task (
  id ${id} PRIMARY KEY, task_type text NOT NULL, status text NOT NULL, priority integer NOT NULL DEFAULT 0,
  ${v.narrow ? '' : 'payload_json text NOT NULL,'} available_at timestamptz NOT NULL, deadline_at timestamptz,
  lease_owner text, lease_until timestamptz, attempt_count integer NOT NULL DEFAULT 0, attempt_base integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL, artifact_id text, owner text, idempotency_key text,
  progress_total bigint, progress_processed bigint, progress_succeeded bigint, progress_failed bigint, progress_skipped bigint,
  progress_message text, result_json text, last_error_code text, trace_id text,
  create_time timestamptz NOT NULL, update_time timestamptz NOT NULL, start_time timestamptz, finish_time timestamptz,
  lease_expiries integer NOT NULL DEFAULT 0, unique_key text, unique_states integer, trace_parent text,
  lease_token text NOT NULL DEFAULT ''
);
${v.narrow ? `CREATE TABLE ${s}.payload (id ${id} PRIMARY KEY, payload_json text NOT NULL);` : ''}
${
  v.side
    ? `ALTER TABLE ${s}.task SET (fillfactor = 50);
CREATE TABLE ${s}.ready (task_type text NOT NULL, priority integer NOT NULL, available_at timestamptz NOT NULL, create_time timestamptz NOT NULL, id ${id} NOT NULL);
CREATE INDEX ON ${s}.ready (task_type, priority DESC, available_at, create_time, id);
CREATE TABLE ${s}.leased (id ${id} PRIMARY KEY, task_type text NOT NULL, lease_until timestamptz NOT NULL);`
    : `CREATE INDEX ON ${s}.task (task_type, priority DESC, available_at, create_time, id) WHERE status IN ('QUEUED', 'RETRY_WAIT');
CREATE INDEX ON ${s}.task (task_type, lease_until) WHERE status IN ('RUNNING', 'CANCEL_REQUESTED');`
}
CREATE UNIQUE INDEX ON ${s}.task (task_type, COALESCE(owner, ''), idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX ON ${s}.task (owner, id) WHERE owner IS NOT NULL;
${
  v.side
    ? ''
    : `CREATE INDEX ON ${s}.task (deadline_at) WHERE status IN ('QUEUED', 'RETRY_WAIT', 'PAUSED') AND deadline_at IS NOT NULL;
CREATE INDEX ON ${s}.task (available_at) WHERE status = 'RETRY_WAIT';`
}
CREATE TABLE ${s}.attempt (
  task_id ${id} NOT NULL, attempt integer NOT NULL, worker_id text NOT NULL, started_at timestamptz NOT NULL,
  finished_at timestamptz, outcome text, error_code text, PRIMARY KEY (task_id, attempt)
) WITH (fillfactor = 70);
CREATE INDEX ON ${s}.attempt (started_at);`;
}

/** A UUIDv7-shaped id (time first), as the store draws them. */
const idSql = `(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(md5(random()::text), 1, 20))`;
const uuidText = `(substr(x, 1, 8) || '-' || substr(x, 9, 4) || '-7' || substr(x, 14, 3) || '-8' || substr(x, 18, 3) || '-' || substr(x, 21, 12))`;

async function runVariant(client: pg.Client, v: Variant): Promise<{ submit: number; drain: number }> {
  const s = `probe_${v.name.replace('+', '_')}`;
  await client.query(schemaSql(s, v));
  const id = v.uuid ? `${uuidText}::uuid` : uuidText;
  const payload = `'{"order":12345,"customer":"c-0001","items":[1,2,3],"note":"probe"}'`;
  await client.query('CHECKPOINT');
  const lsn = async (): Promise<string> => (await client.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
  const diff = async (from: string): Promise<number> =>
    Number((await client.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS d', [from])).rows[0]!.d);
  const start = await lsn();
  for (let done = 0; done < TASKS; done += 100) {
    const rows = Math.min(100, TASKS - done);
    const insert = v.side
      ? `WITH ins AS (INSERT INTO ${s}.task (id, task_type, status, payload_json, available_at, max_attempts, create_time, update_time)
           SELECT ${id}, 'probe', 'QUEUED', ${payload}, now(), 3, now(), now() FROM (SELECT ${idSql} AS x FROM generate_series(1, ${rows})) g
           RETURNING id, task_type, priority, available_at, create_time)
         INSERT INTO ${s}.ready (task_type, priority, available_at, create_time, id) SELECT task_type, priority, available_at, create_time, id FROM ins`
      : v.narrow
        ? `WITH ins AS (INSERT INTO ${s}.task (id, task_type, status, available_at, max_attempts, create_time, update_time)
           SELECT ${id}, 'probe', 'QUEUED', now(), 3, now(), now() FROM (SELECT ${idSql} AS x FROM generate_series(1, ${rows})) g RETURNING id)
         INSERT INTO ${s}.payload SELECT id, ${payload} FROM ins`
        : `INSERT INTO ${s}.task (id, task_type, status, payload_json, available_at, max_attempts, create_time, update_time)
         SELECT ${id}, 'probe', 'QUEUED', ${payload}, now(), 3, now(), now() FROM (SELECT ${idSql} AS x FROM generate_series(1, ${rows})) g`;
    await client.query(insert);
  }
  const submitted = await diff(start);
  const drainStart = await lsn();
  for (;;) {
    // The claim: lease a batch in claim order, with its attempt rows unless they are written once at the outcome.
    const claimed = await client.query<{ id: string; attempt_count: number; start_time: Date }>(
      `WITH picked AS (${
        v.side
          ? `DELETE FROM ${s}.ready r WHERE r.ctid = ANY (ARRAY(
               SELECT ctid FROM ${s}.ready WHERE task_type = 'probe' AND available_at <= now()
               ORDER BY task_type, priority DESC, available_at, create_time, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)) RETURNING r.id`
          : `SELECT id FROM ${s}.task WHERE task_type = 'probe' AND status IN ('QUEUED', 'RETRY_WAIT') AND available_at <= now()
         ORDER BY task_type, priority DESC, available_at, create_time, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`
      }),
       leased AS (
         UPDATE ${s}.task t SET status = 'RUNNING', lease_owner = 'worker-probe-1', lease_token = md5(random()::text),
           lease_until = now() + interval '30 seconds', attempt_count = t.attempt_count + 1, start_time = now(), update_time = now()
         FROM picked WHERE t.id = picked.id RETURNING t.id, t.attempt_count, t.start_time, t.task_type, t.lease_until)
       ${v.side ? `, lease_rows AS (INSERT INTO ${s}.leased SELECT id, task_type, lease_until FROM leased)` : ''}
       ${v.once ? 'SELECT * FROM leased' : `, att AS (INSERT INTO ${s}.attempt (task_id, attempt, worker_id, started_at) SELECT id, attempt_count, 'worker-probe-1', start_time FROM leased) SELECT * FROM leased`}`,
    );
    if (claimed.rowCount === 0) break;
    const ids = claimed.rows.map((r) => r.id);
    // The outcome: the task row ends SUCCESS, fenced by its lease; its attempt closes (or is written whole).
    await client.query(
      `WITH done AS (
         UPDATE ${s}.task t SET status = 'SUCCESS', lease_owner = NULL, lease_until = NULL, finish_time = now(), update_time = now(),
           result_json = NULL, progress_message = t.progress_message
         WHERE t.id = ANY ($1::${v.uuid ? 'uuid' : 'text'}[]) AND t.status = 'RUNNING' AND t.lease_owner = 'worker-probe-1'
         RETURNING t.id, t.attempt_count, t.start_time)
       ${v.side ? `, unleased AS (DELETE FROM ${s}.leased l USING done WHERE l.id = done.id)` : ''}
       ${
         v.once
           ? `INSERT INTO ${s}.attempt (task_id, attempt, worker_id, started_at, finished_at, outcome) SELECT id, attempt_count, 'worker-probe-1', start_time, now(), 'SUCCESS' FROM done`
           : `UPDATE ${s}.attempt a SET finished_at = now(), outcome = 'SUCCESS' FROM done WHERE a.task_id = done.id AND a.attempt = done.attempt_count`
       }`,
      [ids],
    );
  }
  const drained = await diff(drainStart);
  if (values.waldump) await waldump(v.name, drainStart, await lsn());
  await client.query(`DROP SCHEMA ${s} CASCADE`);
  return { submit: submitted / TASKS, drain: drained / TASKS };
}

/** The probe's own cluster, for waldump (set once it runs). */
let cluster: TestCluster;

/** `--waldump`: the drain's WAL by record type (pg_waldump --stats=record), to see where the bytes go. */
async function waldump(name: string, from: string, to: string): Promise<void> {
  const dataDir = join((cluster as unknown as { dir: string }).dir, 'data');
  const bin = ['/usr/lib/postgresql/15/bin/pg_waldump', 'pg_waldump'].find((path) => path === 'pg_waldump' || existsSync(path))!;
  const { stdout } = await promisify(execFile)(bin, ['--stats=record', '-p', join(dataDir, 'pg_wal'), '-s', from, '-e', to], { maxBuffer: 1 << 24 });
  console.log(`-- ${name}: the drain's WAL by record type\n${stdout}`);
}

await withOwnCluster(async (client, own) => {
  cluster = own;
  console.log(`${TASKS} tasks per variant, claim and outcome batches of ${BATCH}, ${ROUNDS} rounds (interleaved, order reversed each round)`);
  const results = new Map<string, { submit: number[]; drain: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
    for (const v of order) {
      const r = await runVariant(client, v);
      const entry = results.get(v.name) ?? { submit: [], drain: [] };
      entry.submit.push(r.submit);
      entry.drain.push(r.drain);
      results.set(v.name, entry);
      console.log(JSON.stringify({ round: round + 1, variant: v.name, walPerTaskSubmit: Math.round(r.submit), walPerTaskDrain: Math.round(r.drain) }));
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const base = results.get('text')!;
  const baseTotal = median(base.submit) + median(base.drain);
  console.log('\nvariant      submit B/task  drain B/task  total B/task  vs text');
  for (const v of VARIANTS) {
    const r = results.get(v.name)!;
    const total = median(r.submit) + median(r.drain);
    console.log(
      `${v.name.padEnd(12)} ${String(Math.round(median(r.submit))).padStart(13)} ${String(Math.round(median(r.drain))).padStart(13)} ${String(Math.round(total)).padStart(13)}  ${(total / baseTotal).toFixed(2)}×`,
    );
  }
});
