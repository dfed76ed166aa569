/**
 * Where a fault case runs: one store per dialect, with what the case needs
 * around it — the parent's store, what a worker process opens (store and
 * handler tables), how to empty it between cases and how to cut one worker
 * process's connections.
 *
 * - PostgreSQL: the file's own cluster (cluster.ts), which the database
 *   cases may crash, freeze or make read-only.
 * - MySQL/MariaDB: a database of its own on the shared server (never frozen
 *   or stopped); each worker process connects as its own user, so KILL can
 *   find exactly its connections (test/process/child-store.ts).
 * - SQLite: a file in a temporary folder, shared by the worker processes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../../src/store/types.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { childApplicationName, mysqlChildUser, type ChildStoreConfig } from '../process/child-store.js';
import { clusterTools, TestCluster, type DatabaseServer } from './cluster.js';
import { MariaServer, mariaTools } from './maria-server.js';
import { openHandlerTables, type HandlerDb, type HandlerTables } from './handler-tables.js';

export type FaultDialect = Store['dialect'];

export interface FaultTarget {
  dialect: FaultDialect;
  /** The parent's store: submits and reads. */
  store: Store;
  tables: HandlerTables;
  childStore: ChildStoreConfig;
  handlerDb: HandlerDb;
  /** The PostgreSQL cluster the target runs on (its own, which the database cases crash, freeze and reconfigure). */
  cluster?: TestCluster;
  /** The server of its own the target runs on (PostgreSQL: the cluster; MySQL: maria-server.ts), when it has one. */
  server?: DatabaseServer;
  /** Cuts every database connection of the worker process labelled `label`; returns how many. Absent on SQLite (no connections). */
  terminate?(label: string): Promise<number>;
  /** SQLite: whether some process holds the file's write lock now (a transaction of its own could not begin). */
  writeLocked?(): Promise<boolean>;
  destroy(): Promise<void>;
}

/** The PostgreSQL schema of the fault suite's tables on its cluster. */
export const PG_SCHEMA = 'faults';
export const DIALECTS: readonly FaultDialect[] = ['postgres', 'mysql', 'sqlite'];

/** Why a dialect cannot run here (outside CI only: on CI a missing server fails), or null. `ownServer`: one the test starts. */
export async function unavailable(dialect: FaultDialect, ownServer = false): Promise<string | null> {
  if (dialect === 'mysql' && ownServer) {
    if (await mariaTools()) return null;
    if (process.env.CI === 'true') throw new Error('the fault suite needs mariadbd and mariadb-install-db on PATH (MariaDB server binaries)');
    return 'mariadbd and mariadb-install-db (MariaDB server binaries) on PATH';
  }
  if (dialect === 'postgres') {
    if (await clusterTools()) return null;
    if (process.env.CI === 'true') throw new Error('the fault suite needs initdb and pg_ctl on PATH (PostgreSQL server binaries)');
    return 'initdb and pg_ctl (PostgreSQL server binaries) on PATH';
  }
  if (dialect === 'mysql') return (await mysqlAvailable('test/faults')) ? null : 'MySQL/MariaDB';
  return null;
}

/** A fresh target; PostgreSQL always on a cluster of its own, MySQL on one of its own when `ownServer`, else on the shared server. */
export async function openTarget(dialect: FaultDialect, ownServer = false): Promise<FaultTarget> {
  if (dialect === 'postgres') return postgresTarget(await TestCluster.create((await clusterTools())!), true);
  if (dialect === 'mysql' && ownServer) return mariaTarget(await MariaServer.create((await mariaTools())!));
  return dialect === 'mysql' ? mysqlTarget() : sqliteTarget();
}

/** The parent's store migrated and the handlers' tables created; destroy() closes both, then `remove`s what holds them. */
async function assemble(
  store: Store,
  childStore: ChildStoreConfig,
  handlerDb: HandlerDb,
  around: Pick<FaultTarget, 'cluster' | 'server' | 'terminate' | 'writeLocked'> & { remove(): Promise<void> },
): Promise<FaultTarget> {
  await store.migrate();
  const tables = await openHandlerTables(handlerDb, 'parent');
  await tables.create();
  const { remove, ...rest } = around;
  return {
    dialect: store.dialect,
    store,
    tables,
    childStore,
    handlerDb,
    ...rest,
    async destroy() {
      await Promise.all([store.close(), tables.close()].map((p) => p.catch(() => undefined)));
      await remove();
    },
  };
}

/** A migrated schema on `cluster`; destroy() removes the cluster too when the target `owns` it. */
export async function postgresTarget(cluster: TestCluster, owns = false): Promise<FaultTarget> {
  return postgresTargetAt(cluster.url, {
    cluster,
    server: cluster,
    terminate: (label) => cluster.terminate(childApplicationName(label)),
    remove: async () => (owns ? cluster.destroy() : undefined),
  });
}

/**
 * A migrated schema on the PostgreSQL server at `url` (a cluster of ours, or the failover suite's Patroni cluster
 * through HAProxy: patroni.ts), the handlers' tables beside it; destroy() closes both, then `remove`s what holds them.
 */
export async function postgresTargetAt(
  url: string,
  around: Pick<FaultTarget, 'cluster' | 'server' | 'terminate' | 'writeLocked'> & { remove(): Promise<void> },
): Promise<FaultTarget> {
  const { PostgresStore } = await import('../../src/store/postgres/store.js');
  const store = new PostgresStore({ connectionString: url, schema: PG_SCHEMA, poolSize: 4, applicationName: 'tl-parent' });
  const db = { dialect: 'postgres', url, schema: PG_SCHEMA } as const;
  return assemble(store, db, db, around);
}

async function mysqlTarget(): Promise<FaultTarget> {
  const { MysqlStore } = await import('../../src/store/mysql/store.js');
  const database = await createTestDatabase();
  const store = new MysqlStore({ uri: database.uri, poolSize: 4 });
  return assemble(
    store,
    { dialect: 'mysql', uri: database.uri },
    { dialect: 'mysql', uri: database.uri },
    {
      terminate: (label) => killConnections(database.query, database.uri, label),
      async remove() {
        const users = await database.query("SELECT user AS name FROM mysql.user WHERE user LIKE CONCAT('tlw\\\\_%', ?)", [database.name.slice(-12)]);
        for (const user of users) await database.query('DROP USER IF EXISTS ?@?', [String(user.name), '%']);
        await database.drop();
      },
    },
  );
}

/** The `test` database of a MariaDB server of its own; destroy() removes the server. */
async function mariaTarget(server: MariaServer): Promise<FaultTarget> {
  const { MysqlStore } = await import('../../src/store/mysql/store.js');
  return assemble(
    new MysqlStore({ uri: server.url, poolSize: 4 }),
    { dialect: 'mysql', uri: server.url },
    { dialect: 'mysql', uri: server.url },
    { server, terminate: (label) => killConnections((sql, values) => server.query(sql, values), server.url, label), remove: () => server.destroy() },
  );
}

/** KILL every connection of the worker process labelled `label` (it connects as its own user: child-store.ts). */
async function killConnections(query: (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>, uri: string, label: string): Promise<number> {
  const rows = await query('SELECT id FROM information_schema.processlist WHERE user = ?', [mysqlChildUser(uri, label)]);
  for (const row of rows) await query(`KILL CONNECTION ${Number(row.id)}`).catch(() => undefined); // gone meanwhile
  return rows.length;
}

async function sqliteTarget(): Promise<FaultTarget> {
  const { SqliteStore } = await import('../../src/store/sqlite/store.js');
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-faults-'));
  const path = join(dir, 'tasks.db');
  return assemble(
    new SqliteStore({ path }),
    { dialect: 'sqlite', path },
    { dialect: 'sqlite', path },
    { remove: async () => rmSync(dir, { recursive: true, force: true }), writeLocked: async () => sqliteWriteLocked(path) },
  );
}

/** Tries to begin a write on the file without waiting (busy timeout 0): SQLITE_BUSY means another process holds the lock. */
async function sqliteWriteLocked(path: string): Promise<boolean> {
  const { default: Database } = await import('better-sqlite3');
  const file = new Database(path, { timeout: 0 });
  try {
    file.exec('BEGIN IMMEDIATE');
    file.exec('ROLLBACK');
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw error;
  } finally {
    file.close();
  }
}
