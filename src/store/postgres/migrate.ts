/**
 * Creates or upgrades the schema. Several processes may start at once: all
 * of it runs in ONE transaction that first takes a transaction advisory lock
 * keyed by the schema, so one migrates while the others wait, then find
 * nothing left to do. The lock ends with the transaction, on whatever server
 * connection a pooler gave it (a session lock would stay on a pooled
 * connection: issue 24), and a crash mid-way leaves the schema as it was.
 */
import type pg from 'pg';
import { ErrorCode, TaskLeaseError } from '../../core/errors.js';
import { claimFunctionSql } from './claim.js';
import { finishFunctionSql } from './finish.js';
import { flowFunctionsSql } from './flows.js';
import { historyFunctionsSql } from './history.js';
import { beginOn, run, withClient, type PgContext } from './connection.js';
import { MIGRATE_LOCK_SCOPE, PG_MIGRATIONS } from './migrations.js';

export async function migrate(ctx: PgContext): Promise<void> {
  await withClient(ctx.pool, 'connecting to migrate', async (client, markBroken) => {
    await run(client, 'starting the migration', beginOn(ctx.pool));
    try {
      await run(client, 'taking the migration lock', 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [MIGRATE_LOCK_SCOPE + ctx.schemaName]);
      await applyMigrations(ctx, client);
      await run(client, 'committing the migration', 'COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(markBroken);
      throw error;
    }
  });
}

async function applyMigrations(ctx: PgContext, client: pg.PoolClient): Promise<void> {
  await run(client, 'creating the schema', `CREATE SCHEMA IF NOT EXISTS ${ctx.schema}`);
  await run(
    client,
    'creating the migrations table',
    `CREATE TABLE IF NOT EXISTS ${ctx.tables.migrations} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const current = await schemaVersionOn(ctx, client);
  const latest = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;
  if (current > latest) {
    throw new TaskLeaseError(
      ErrorCode.SCHEMA_MISMATCH,
      `schema ${ctx.schemaName} is at version ${current}, newer than this tasklease knows (${latest}): upgrade tasklease`,
    );
  }
  for (const migration of PG_MIGRATIONS) {
    if (migration.version <= current) continue;
    await run(client, `applying migration ${migration.version} (${migration.name})`, migration.sql(ctx.schema));
    await run(client, 'recording the migration', `INSERT INTO ${ctx.tables.migrations} (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
  }
  // Repeatable: the claim and outcome functions always match this code (CREATE OR REPLACE under the lock).
  await run(client, 'installing the flow functions', flowFunctionsSql(ctx));
  await run(client, 'installing the claim function', claimFunctionSql(ctx));
  await run(client, 'installing the outcome function', finishFunctionSql(ctx));
  await run(client, 'installing the history functions', historyFunctionsSql(ctx));
}

export async function schemaVersion(ctx: PgContext): Promise<number> {
  return schemaVersionOn(ctx, ctx.pool);
}

async function schemaVersionOn(ctx: PgContext, on: Pick<pg.ClientBase, 'query'>): Promise<number> {
  const exists = await run<{ present: boolean }>(on, 'reading the schema version', 'SELECT to_regclass($1) IS NOT NULL AS present', [
    `${ctx.schema}.tasklease_migrations`,
  ]);
  if (!exists.rows[0]?.present) return 0;
  const result = await run<{ v: number | null }>(on, 'reading the schema version', `SELECT max(version) AS v FROM ${ctx.tables.migrations}`);
  return result.rows[0]?.v ?? 0;
}
