/**
 * PostgreSQL test plumbing. TASKLEASE_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/test) names the server; each test file
 * creates its own schema `tl_test_<random>` and drops it afterwards.
 * No server: on CI (CI=true) the file fails; elsewhere it is skipped with one
 * console line saying how to start PostgreSQL.
 */
import { randomBytes } from 'node:crypto';
import { openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { PostgresStoreOptions } from '../../src/store/postgres/options.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { migratedStoreFactory, onServerArea, type StoreFactory } from './factory.js';

export const PG_URL = process.env.TASKLEASE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const START_HINT = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';
const TABLES = [
  'system_async_task',
  'system_async_task_attempt',
  'system_async_task_bulk',
  'system_async_task_failure',
  'system_async_task_dead_letter',
  'system_async_task_policy',
  'system_async_task_worker',
  'system_async_task_action',
  'system_async_task_step',
  'system_async_task_log',
  'system_async_task_subscription',
  'system_async_task_rate_start',
  'system_async_task_sequence',
  'system_async_task_adaptive',
  'system_async_task_limit_change',
  'system_async_task_queue_stat',
  'system_async_task_history',
  'system_async_task_attempt_history',
  'system_async_task_failure_history',
  'system_async_task_action_history',
];

/** True when the server answers. Throws on CI when it does not; elsewhere prints the one skip line. */
export async function postgresAvailable(file: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    const reason = (error as { code?: string }).code ?? String(error);
    if (process.env.CI === 'true') throw new Error(`PostgreSQL at ${redacted()} is unreachable (${reason}); on CI the PostgreSQL tests must run`);
    if (firstSkipInThisRun())
      console.log(`PostgreSQL tests skipped (${file} and the others): no server at ${redacted()} (${reason}); start it with: ${START_HINT}`);
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * One skip line per test run, not one per file: test files run in worker
 * processes of one vitest process (their parent), which names the marker.
 */
function firstSkipInThisRun(): boolean {
  try {
    closeSync(openSync(join(tmpdir(), `tasklease-pg-skip-${process.ppid}`), 'wx'));
    return true;
  } catch {
    return false;
  }
}

export interface TestSchema {
  name: string;
  /** Empties every tasklease table (keeps the schema and its version). */
  clean(): Promise<void>;
  /** Runs raw SQL as the test (seed diagnostics, samplers, pg_terminate_backend). */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<R[]>;
  /** Drops the schema and closes the admin pool. */
  drop(): Promise<void>;
}

export function uniqueSchemaName(): string {
  return `tl_test_${randomBytes(6).toString('hex')}`;
}

/** A schema name for this file; migrate() creates it, drop() removes it. */
export async function createTestSchema(name = uniqueSchemaName()): Promise<TestSchema> {
  const admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
  admin.on('error', () => undefined);
  return {
    name,
    async clean() {
      const present = await admin.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [name]);
      const tables = present.rows.map((row) => row.table_name).filter((table) => TABLES.includes(table));
      if (tables.length === 0) return;
      // A statement of the previous test's worker may still hold rows the TRUNCATE's locks cross: PostgreSQL then
      // aborts one of the two as a deadlock (40P01); the TRUNCATE is tried again, the other has finished by then.
      for (let tries = 1; ; tries += 1) {
        try {
          await admin.query(`TRUNCATE ${tables.map((table) => `"${name}".${table}`).join(', ')}`);
          return;
        } catch (error) {
          if ((error as { code?: string }).code !== '40P01' || tries === 5) throw error;
        }
      }
    },
    async query<R extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
      return (await admin.query<R>(sql, values)).rows;
    },
    async drop() {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}

/**
 * A factory for the shared suites: every create() is a migrated, emptied schema of this file.
 * `options`: how the stores connect (another address, a pooler mode); the test's own SQL stays direct.
 */
export function postgresStoreFactory(schema: () => TestSchema, poolSize = 4, options: () => PostgresStoreOptions = () => ({})): StoreFactory {
  return migratedStoreFactory(
    'postgres',
    () => new PostgresStore({ connectionString: PG_URL, schema: schema().name, poolSize, ...options() }),
    () => schema().clean(),
    async () => {
      // A schema name nobody created: its migrate() in the test creates it, dispose drops it.
      const fresh = await createTestSchema();
      const store = new PostgresStore({ connectionString: PG_URL, schema: fresh.name, poolSize: 2, ...options() });
      return {
        store,
        dispose: async () => {
          await store.close();
          await fresh.drop();
        },
      };
    },
  );
}

function redacted(): string {
  const url = new URL(PG_URL);
  url.password = url.password ? '***' : '';
  return url.toString();
}

/**
 * Runs a shared suite on PostgreSQL: a fresh schema for the file, dropped
 * afterwards. No server: fails on CI, else skipped with one line (postgresAvailable).
 * `through`: the stores connect another way (a PgBouncer the file starts), read when each store opens.
 */
export async function onPostgres(
  file: string,
  title: string,
  suite: (factory: StoreFactory) => void,
  through?: { available: boolean; needs: string; options: () => PostgresStoreOptions },
): Promise<void> {
  onServerArea(
    {
      available: (await postgresAvailable(file)) && (through?.available ?? true),
      title: `${title} on postgres`,
      needs: through?.needs ?? 'PostgreSQL',
      create: () => createTestSchema(),
      factory: (schema) => postgresStoreFactory(schema, 4, through?.options),
    },
    suite,
  );
}

/**
 * Inside a describe: a migrated PostgresStore on a fresh schema for the
 * file's tests, closed and dropped after them. Returns a getter of both (they
 * exist once beforeAll has run).
 */
export function sharedPostgresStore(poolSize = 2): () => { store: PostgresStore; schema: TestSchema } {
  let schema: TestSchema | undefined;
  let store: PostgresStore | undefined;
  beforeAll(async () => {
    schema = await createTestSchema();
    store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize });
    await store.migrate();
  });
  afterAll(async () => {
    await store?.close();
    await schema?.drop();
  });
  return () => ({ store: store!, schema: schema! });
}

/**
 * Samples the leased rows of a test schema in a loop until stopped: every
 * sample whose total exceeds `global` or a type's count exceeds its cap in
 * `perType` is a violation (the samplers that prove limits are invariants).
 */
export function sampleLeases(schema: TestSchema, caps: { global: number; perType: Record<string, number> }) {
  let done = false;
  let samples = 0;
  let highest = 0;
  const violations: string[] = [];
  const loop = (async () => {
    while (!done) {
      const rows = await schema.query<{ task_type: string; n: number }>(
        `SELECT task_type, count(*)::int AS n FROM "${schema.name}".system_async_task WHERE status IN ('RUNNING','CANCEL_REQUESTED') GROUP BY task_type`,
      );
      const sum = rows.reduce((acc, row) => acc + row.n, 0);
      highest = Math.max(highest, sum);
      const over = Object.entries(caps.perType).some(([type, cap]) => (rows.find((row) => row.task_type === type)?.n ?? 0) > cap);
      if (sum > caps.global || over) violations.push(JSON.stringify(rows));
      samples += 1;
    }
  })();
  return {
    async stop(): Promise<{ violations: string[]; samples: number; highest: number }> {
      done = true;
      await loop;
      return { violations, samples, highest };
    },
  };
}
