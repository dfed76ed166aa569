/**
 * Issue 25, design option (a) measured before choosing: the task table itself
 * declaratively partitioned by finish time (live rows, finish_time NULL, in
 * the DEFAULT partition; finished ones in day partitions) against the table
 * as it is. Each task is submitted, claimed and finished in plain SQL, in
 * batches of `--batch`, one commit each, as the worker does; the finish then
 * moves the row across partitions (a delete and an insert, with every index
 * entry of the new partition). Prints WAL bytes per task for each phase.
 *
 * The partitioned variant cannot keep `id` unique (a primary key must hold
 * the partition key, and finish_time is NULL until the finish): it keeps a
 * plain index on id, which is already a loss of the store's guarantee.
 *
 * Run: npx tsx bench/pg-partition-move-probe.ts [--tasks 20000] [--batch 10]
 * On a cluster of the probe's own (initdb + pg_ctl on another port).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { withOwnCluster } from './own-cluster.js';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '20000' }, batch: { type: 'string', default: '10' } } });
const TASKS = Number(values.tasks);
const BATCH = Number(values.batch);

const COLUMNS = `id text NOT NULL, task_type text NOT NULL, status text NOT NULL, priority integer NOT NULL DEFAULT 0,
  payload_json text NOT NULL, available_at timestamptz NOT NULL, lease_owner text, lease_until timestamptz,
  attempt_count integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL, owner text, idempotency_key text,
  result_json text, create_time timestamptz NOT NULL, update_time timestamptz NOT NULL, start_time timestamptz,
  finish_time timestamptz, lease_token text NOT NULL DEFAULT ''`;
const INDEXES = (t: string): string => `
CREATE INDEX ON ${t} (task_type, priority DESC, available_at, create_time, id) WHERE status IN ('QUEUED', 'RETRY_WAIT');
CREATE INDEX ON ${t} (task_type, lease_until) WHERE status IN ('RUNNING', 'CANCEL_REQUESTED');
CREATE INDEX ON ${t} (owner, id) WHERE owner IS NOT NULL;`;

const VARIANTS = {
  plain: (s: string) => `CREATE TABLE ${s}.task (${COLUMNS}, PRIMARY KEY (id)) WITH (fillfactor = 50); ${INDEXES(`${s}.task`)}`,
  partitioned: (s: string) => `CREATE TABLE ${s}.task (${COLUMNS}) PARTITION BY RANGE (finish_time);
CREATE TABLE ${s}.task_live PARTITION OF ${s}.task DEFAULT WITH (fillfactor = 50);
CREATE TABLE ${s}.task_today PARTITION OF ${s}.task FOR VALUES FROM (now() - interval '1 day') TO (now() + interval '1 day');
CREATE INDEX ON ${s}.task (id); ${INDEXES(`${s}.task`)}`,
};

async function runVariant(client: pg.Client, name: keyof typeof VARIANTS): Promise<{ submit: number; claim: number; finish: number }> {
  const s = `probe_${name}`;
  await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE; CREATE SCHEMA ${s}; ${VARIANTS[name](s)}`);
  await client.query('CHECKPOINT');
  const lsn = async (): Promise<string> => (await client.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]!.l;
  const since = async (from: string): Promise<number> =>
    Number((await client.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS d', [from])).rows[0]!.d);
  const wal = { submit: 0, claim: 0, finish: 0 };
  let mark = await lsn();
  for (let done = 0; done < TASKS; done += 100) {
    await client.query(
      `INSERT INTO ${s}.task (id, task_type, status, payload_json, available_at, max_attempts, create_time, update_time)
       SELECT md5(random()::text), 'probe', 'QUEUED', '{"order":12345,"customer":"c-0001","items":[1,2,3]}', now(), 3, now(), now()
       FROM generate_series(1, ${Math.min(100, TASKS - done)})`,
    );
  }
  wal.submit += await since(mark);
  for (;;) {
    mark = await lsn();
    const claimed = await client.query<{ id: string }>(
      `UPDATE ${s}.task t SET status = 'RUNNING', lease_owner = 'w1', lease_token = md5(random()::text), lease_until = now() + interval '30 s',
         attempt_count = attempt_count + 1, start_time = now(), update_time = now()
       WHERE t.id IN (SELECT id FROM ${s}.task WHERE task_type = 'probe' AND status IN ('QUEUED', 'RETRY_WAIT') AND available_at <= now()
                      ORDER BY task_type, priority DESC, available_at, create_time, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
       RETURNING t.id`,
    );
    wal.claim += await since(mark);
    if (claimed.rowCount === 0) break;
    mark = await lsn();
    await client.query(
      `UPDATE ${s}.task SET status = 'SUCCESS', lease_owner = NULL, lease_until = NULL, finish_time = now(), update_time = now()
       WHERE id = ANY ($1::text[]) AND status = 'RUNNING' AND lease_owner = 'w1'`,
      [claimed.rows.map((row) => row.id)],
    );
    wal.finish += await since(mark);
  }
  await client.query(`DROP SCHEMA ${s} CASCADE`);
  return { submit: Math.round(wal.submit / TASKS), claim: Math.round(wal.claim / TASKS), finish: Math.round(wal.finish / TASKS) };
}

await withOwnCluster(async (client) => {
  console.log(`${TASKS} tasks, claim and finish batches of ${BATCH}: WAL bytes per task`);
  for (const name of ['plain', 'partitioned', 'plain', 'partitioned'] as const) {
    const wal = await runVariant(client, name);
    console.log(JSON.stringify({ variant: name, ...wal, total: wal.submit + wal.claim + wal.finish }));
  }
});
