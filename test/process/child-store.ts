/**
 * How a worker child process opens its store: the parent passes one of these
 * as JSON (env TL_CHILD), so the same child serves every dialect.
 * `label` names the process's connections (PostgreSQL: application_name
 * prefix) so the parent can cut exactly this process's connections.
 */
import type { Store } from '../../src/store/types.js';

export type ChildStoreConfig = (
  { dialect: 'postgres'; url: string; schema: string } | { dialect: 'mysql'; uri: string } | { dialect: 'sqlite'; path: string }
) & {
  poolSize?: number;
  /** How long a statement may wait for a pooled connection (the store's default: 10 s). */
  connectTimeoutMs?: number;
};

export function childApplicationName(label: string): string {
  return `tlw-${label}`;
}

export async function openChildStore(config: ChildStoreConfig, label: string): Promise<Store> {
  switch (config.dialect) {
    case 'postgres': {
      const { PostgresStore } = await import('../../src/store/postgres/store.js');
      return new PostgresStore({
        connectionString: config.url,
        schema: config.schema,
        poolSize: config.poolSize ?? 4,
        connectTimeoutMs: config.connectTimeoutMs,
        applicationName: childApplicationName(label),
      });
    }
    case 'mysql': {
      const { MysqlStore } = await import('../../src/store/mysql/store.js');
      return new MysqlStore({ uri: await mysqlChildUri(config.uri, label), poolSize: config.poolSize ?? 4, connectTimeoutMs: config.connectTimeoutMs });
    }
    case 'sqlite': {
      const { SqliteStore } = await import('../../src/store/sqlite/store.js');
      return new SqliteStore({ path: config.path, busyTimeoutMs: 10_000 });
    }
  }
}

/**
 * MySQL has no application_name: each child connects as its own user, so the
 * parent can find (and KILL) exactly this process's connections by user.
 */
export function mysqlChildUser(uri: string, label: string): string {
  const database = new URL(uri).pathname.slice(1);
  return `tlw_${label}_${database.slice(-12)}`;
}

async function mysqlChildUri(uri: string, label: string): Promise<string> {
  const { default: mysql } = await import('mysql2/promise');
  const user = mysqlChildUser(uri, label);
  const database = new URL(uri).pathname.slice(1);
  const admin = await mysql.createConnection(uri);
  try {
    await admin.query('CREATE USER IF NOT EXISTS ?@?', [user, '%']);
    await admin.query(`GRANT ALL ON \`${database}\`.* TO ?@?`, [user, '%']);
  } finally {
    await admin.end();
  }
  const url = new URL(uri);
  url.username = user;
  url.password = '';
  return url.toString();
}

/**
 * Takes one connection of the store's main pool, the one handlers share (a
 * handler's long transaction, say); returns its release. SQLite has no pool:
 * nothing to hold.
 */
export async function holdPoolConnection(store: Store): Promise<() => void> {
  switch (store.dialect) {
    case 'postgres': {
      const client = await (store as import('../../src/store/postgres/store.js').PostgresStore).pool.connect();
      return () => client.release();
    }
    case 'mysql': {
      const conn = await (store as import('../../src/store/mysql/store.js').MysqlStore).db.pool.getConnection();
      return () => conn.release();
    }
    case 'sqlite':
      return () => undefined;
  }
}
