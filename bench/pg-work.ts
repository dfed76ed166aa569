/**
 * PostgreSQL work per phase (see db-work.ts):
 * - WAL: pg_current_wal_insert_lsn() at the phase's start and end — server-wide,
 *   so every other session's WAL in that window is in it;
 * - own WAL, where pg_walinspect can be used: the records between those LSNs
 *   that touch the system's relations (its schema's tables, indexes, sequences
 *   and their TOAST), plus every record of the transactions that wrote them
 *   (their commit records among them) — other sessions' WAL is not in it;
 * - commits: xact_commit + xact_rollback of the database (pg_stat_database;
 *   other sessions' transactions in the same database are in it), and, from
 *   the WAL, the commit records of the system's writing transactions;
 * - rows: n_tup_ins / n_tup_upd / n_tup_del (n_tup_hot_upd apart) over the
 *   schema's tables (pg_stat_user_tables).
 * PostgreSQL 15 backends flush their statistics at most once a second, an idle
 * one up to 10 s later (pg_stat_force_next_flush() is 16+), and at exit at
 * once. So a phase begins and ends once the connections that did work have
 * closed (the workers exited, the producer released), and the counters are
 * read when they have stopped moving. Each read is a transaction of its own,
 * so it never sees a cached snapshot (pg_stat_clear_snapshot is implied).
 */
import pg from 'pg';
import { PG_URL, ownedName, quoteIdent, sleep } from './config.js';
import type { Meter, WorkTotals } from './db-work.js';

const SETTLE_POLL_MS = 150;
/** Identical reads in a row that count as settled. */
const SETTLE_READS = 3;
const SETTLE_LIMIT_MS = 5000;

type TableCounters = [ins: number, upd: number, del: number, hot: number, scans: number];
interface Counters {
  xacts: number;
  tables: Record<string, TableCounters>;
}

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'tasklease-bench-meter' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const quoteAny = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** One statement: the database's transactions and the schema's per-table counters. */
async function readCounters(client: pg.Client, schema: string): Promise<Counters> {
  const { rows } = await client.query<{ xacts: number; tables: Record<string, TableCounters> }>(
    `select (select (xact_commit + xact_rollback)::float8 from pg_stat_database where datname = current_database()) as xacts,
            coalesce((select json_object_agg(relname, json_build_array(n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd,
                                                                       coalesce(seq_scan, 0) + coalesce(idx_scan, 0)))
                        from pg_stat_user_tables where schemaname = $1), '{}'::json) as tables`,
    [schema],
  );
  return rows[0]!;
}

const sameTables = (a: Counters, b: Counters): boolean => JSON.stringify(a.tables) === JSON.stringify(b.tables);

/** Reads until the schema's counters stop moving (SETTLE_READS identical reads), or gives up after SETTLE_LIMIT_MS. */
async function settle(client: pg.Client, schema: string): Promise<{ counters: Counters; settled: boolean }> {
  const deadline = performance.now() + SETTLE_LIMIT_MS;
  let last = await readCounters(client, schema);
  for (let same = 1; same < SETTLE_READS;) {
    if (performance.now() > deadline) return { counters: last, settled: false };
    await sleep(SETTLE_POLL_MS);
    const next = await readCounters(client, schema);
    same = sameTables(last, next) ? same + 1 : 1;
    last = next;
  }
  return { counters: last, settled: true };
}

const lsnBytes = (lsn: string): number => {
  const [hi, lo] = lsn.split('/');
  return parseInt(hi!, 16) * 2 ** 32 + parseInt(lo!, 16);
};

async function insertLsn(client: pg.Client): Promise<string> {
  return (await client.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]!.lsn;
}

/** The schema's relations as WAL block references name them: tablespace/database/relfilenode. */
async function relations(client: pg.Client, schema: string): Promise<string[]> {
  const { rows } = await client.query<{ rel: string }>(
    `with own as (select c.oid, c.reltoastrelid from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1),
          toast as (select reltoastrelid as oid from own where reltoastrelid <> 0
                    union all select indexrelid from pg_index where indrelid in (select reltoastrelid from own))
     select coalesce(nullif(c.reltablespace, 0), d.dattablespace)::text || '/' || d.oid::text || '/' || c.relfilenode::text as rel
       from pg_class c join pg_database d on d.datname = current_database()
      where c.relfilenode <> 0 and c.oid in (select oid from own union all select oid from toast)`,
    [schema],
  );
  return rows.map((row) => row.rel);
}

// pg_walinspect: an installed copy is used where it is; otherwise the bench creates one in a schema of its own
// (dropped by dropWalInspect). Null when neither works (not installed, not a superuser): own WAL is then left out.
let inspector: Promise<string | null> | null = null;
let ownedInspector: string | null = null;
let inspectorNote = '';

function walInspect(): Promise<string | null> {
  inspector ??= withClient(async (client) => {
    const found = await client.query<{ nspname: string }>(
      `select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_walinspect'`,
    );
    if (found.rows[0]) return found.rows[0].nspname;
    const schema = ownedName('walinspect');
    try {
      await client.query(`create schema if not exists ${quoteIdent(schema)}`);
      ownedInspector = schema;
      await client.query(`create extension pg_walinspect schema ${quoteIdent(schema)}`);
      return schema;
    } catch (error) {
      inspectorNote = `pg_walinspect unavailable (${(error as Error).message}): own WAL not measured`;
      return null;
    }
  });
  return inspector;
}

/** Drops the pg_walinspect schema this process created, if any. */
export async function dropWalInspect(): Promise<void> {
  const schema = ownedInspector;
  if (!schema) return;
  ownedInspector = null;
  inspector = null;
  await withClient((client) => client.query(`drop schema if exists ${quoteIdent(schema)} cascade`));
}

interface OwnWal {
  bytes: number;
  fpiBytes: number;
  commits: number;
  records: Record<string, { count: number; bytes: number }>;
}

/** The WAL between two LSNs that is the system's: records on its relations, and every record of the transactions that wrote them. */
async function ownWal(client: pg.Client, ext: string, start: string, end: string, rels: string[]): Promise<OwnWal> {
  // pg_walinspect reads only flushed WAL; the walwriter flushes within wal_writer_delay.
  for (let waited = 0; waited < 3000; waited += 50) {
    const { rows } = await client.query<{ ok: boolean }>('select pg_current_wal_flush_lsn() >= $1::pg_lsn as ok', [end]);
    if (rows[0]?.ok) break;
    await sleep(50);
  }
  const { rows } = await client.query<{ rm: string; type: string; n: number; bytes: number; fpi: number }>(
    `with recs as (
       select r.xid::text::bigint as xid, r.resource_manager as rm, split_part(r.record_type, '+', 1) as type, r.fpi_length as fpi,
              pg_wal_lsn_diff(r.end_lsn, r.start_lsn) as bytes,
              coalesce(exists (select 1 from regexp_matches(r.block_ref, 'rel (\\d+/\\d+/\\d+)', 'g') m where m[1] = any ($3::text[])), false) as mine
         from ${quoteAny(ext)}.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) r),
     xids as (select distinct xid from recs where mine and xid <> 0)
     select rm, type, count(*)::float8 as n, sum(bytes)::float8 as bytes, sum(fpi)::float8 as fpi
       from recs where mine or xid in (select xid from xids)
      group by rm, type`,
    [start, end, rels],
  );
  const records: OwnWal['records'] = {};
  let bytes = 0;
  let fpiBytes = 0;
  let commits = 0;
  for (const row of rows) {
    records[`${row.rm} ${row.type}`] = { count: row.n, bytes: row.bytes };
    bytes += row.bytes;
    fpiBytes += row.fpi;
    if (row.rm === 'Transaction' && /^(COMMIT|ABORT)/.test(row.type)) commits += row.n;
  }
  return { bytes, fpiBytes, commits, records };
}

function tableDiff(before: Counters, after: Counters): NonNullable<WorkTotals['tables']> {
  const out: NonNullable<WorkTotals['tables']> = {};
  for (const [name, [ins, upd, del, hot]] of Object.entries(after.tables)) {
    const [ins0, upd0, del0, hot0] = before.tables[name] ?? [0, 0, 0, 0, 0];
    out[name] = { ins: ins - ins0, upd: upd - upd0, del: del - del0, hot: hot - hot0 };
  }
  return out;
}

/** A meter over one schema. */
export function pgMeter(schema: string): Meter {
  return {
    async begin() {
      const ext = await walInspect();
      const start = await withClient(async (client) => {
        const { counters, settled } = await settle(client, schema);
        return { counters, settled, lsn: await insertLsn(client), rels: await relations(client, schema) };
      });
      return {
        end: (tasks) =>
          withClient(async (client): Promise<WorkTotals> => {
            const lsn = await insertLsn(client); // first: the phase's WAL is all inserted by now
            const { counters, settled } = await settle(client, schema);
            const rels = [...new Set([...start.rels, ...(await relations(client, schema))])];
            const notes = [...(start.settled && settled ? [] : ['statistics still moving when read']), ...(inspectorNote && !ext ? [inspectorNote] : [])];
            let own: OwnWal | null = null;
            try {
              if (ext) own = await ownWal(client, ext, start.lsn, lsn, rels);
            } catch (error) {
              notes.push(`own WAL not measured: ${(error as Error).message}`); // e.g. the segment was recycled after a checkpoint
            }
            const tables = tableDiff(start.counters, counters);
            const sum = (index: 'ins' | 'upd' | 'del' | 'hot'): number => Object.values(tables).reduce((total, t) => total + t[index], 0);
            return {
              tasks,
              walBytes: lsnBytes(lsn) - lsnBytes(start.lsn),
              ...(own ? { ownWalBytes: own.bytes, ownFpiBytes: own.fpiBytes, writeCommits: own.commits, records: own.records } : {}),
              commits: counters.xacts - start.counters.xacts,
              inserted: sum('ins'),
              updated: sum('upd'),
              deleted: sum('del'),
              hotUpdated: sum('hot'),
              tables,
              ...(notes.length > 0 ? { notes } : {}),
            };
          }),
      };
    },
  };
}
