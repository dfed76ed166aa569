/**
 * The three tasklease stores as the bench opens them, from a serializable
 * spec that the orchestrator hands its worker processes. Each spec names a
 * namespace the run owns: a bench_* PostgreSQL schema, a bench_* MariaDB
 * database, or a bench_* SQLite file in the temp directory.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import type { Store } from '../../src/store/types.js';
import { MYSQL_URL, PG_URL, ownedName, quoteIdent } from '../config.js';
import { dropSchema, probePostgres } from './postgres.js';
import { storeModule } from './tasklease-lib.js';

export type Dialect = 'postgres' | 'sqlite' | 'mysql';

export type StoreSpec =
  { dialect: 'postgres'; connectionString: string; schema: string } | { dialect: 'sqlite'; path: string } | { dialect: 'mysql'; uri: string; database: string };

export function storeSpec(dialect: Dialect): StoreSpec {
  switch (dialect) {
    case 'postgres':
      return { dialect, connectionString: PG_URL, schema: ownedName('tl_pg') };
    case 'sqlite':
      return { dialect, path: join(tmpdir(), `${ownedName('tl_sqlite')}.db`) };
    case 'mysql': {
      const database = ownedName('tl_mysql');
      return { dialect, uri: `${MYSQL_URL.replace(/\/+$/, '')}/${database}`, database };
    }
  }
}

/** Null when the store can run here; otherwise why not. */
export async function probeStore(spec: StoreSpec): Promise<string | null> {
  switch (spec.dialect) {
    case 'postgres':
      return probePostgres();
    case 'sqlite':
      return null;
    case 'mysql':
      try {
        await withMysql(async () => undefined);
        return null;
      } catch (error) {
        return `MariaDB/MySQL not reachable at ${MYSQL_URL}: ${(error as Error).message}`;
      }
  }
}

/**
 * Opens (does not migrate) the store, from the built dist/. Each store module
 * is loaded only when asked for, so that one dialect's module failing to load
 * costs only that system's lines.
 */
export async function openStore(spec: StoreSpec, poolSize?: number): Promise<Store> {
  switch (spec.dialect) {
    case 'postgres': {
      const { PostgresStore } = await storeModule('postgres');
      return new PostgresStore({ connectionString: spec.connectionString, schema: spec.schema, ...(poolSize ? { poolSize } : {}) });
    }
    case 'sqlite': {
      const { SqliteStore } = await storeModule('sqlite');
      return new SqliteStore({ path: spec.path });
    }
    case 'mysql': {
      const { MysqlStore } = await storeModule('mysql');
      return new MysqlStore({ uri: spec.uri, ...(poolSize ? { poolSize } : {}) });
    }
  }
}

/** Creates the empty namespace (dropping a leftover of the same name first). */
export async function createNamespace(spec: StoreSpec): Promise<void> {
  await dropNamespace(spec);
  if (spec.dialect === 'mysql') await withMysql((c) => c.query(`create database ${mysqlIdent(spec.database)}`));
}

export async function dropNamespace(spec: StoreSpec): Promise<void> {
  switch (spec.dialect) {
    case 'postgres':
      return dropSchema(spec.schema);
    case 'sqlite':
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${spec.path}${suffix}`, { force: true });
      return;
    case 'mysql':
      await withMysql((c) => c.query(`drop database if exists ${mysqlIdent(spec.database)}`));
      return;
  }
}

function mysqlIdent(name: string): string {
  return quoteIdent(name).replace(/"/g, '`');
}

async function withMysql<T>(fn: (connection: mysql.Connection) => Promise<T>): Promise<T> {
  const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 3000 });
  try {
    return await fn(connection);
  } finally {
    await connection.end();
  }
}
