/** PostgreSQL helpers shared by the adapters that keep a schema there. */
import pg from 'pg';
import { PG_URL, quoteIdent } from '../config.js';

/** Null when PostgreSQL answers; otherwise the reason. */
export async function probePostgres(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (error) {
    return `PostgreSQL not reachable at ${PG_URL}: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs one statement on a short-lived connection. */
export async function pgQuery<Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** Drops one of our own bench_* schemas (quoteIdent refuses any other name). */
export async function dropSchema(schema: string): Promise<void> {
  await pgQuery(`drop schema if exists ${quoteIdent(schema)} cascade`);
}
