/**
 * MySQL/MariaDB test plumbing. TASKLEASE_MYSQL_URL (default
 * mysql://root@127.0.0.1:3306/test) names the server; each test file creates
 * its own database `tasklease_test_<random>` and drops it afterwards.
 * No server: on CI (CI=true) the file fails; elsewhere it is skipped with one
 * console line saying how to start MariaDB.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { migratedStoreFactory, onServerArea, type StoreFactory } from './factory.js';

export const MYSQL_URL = process.env.TASKLEASE_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
const START_HINT = 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd';
const TABLES = [
  'system_async_task',
  'system_async_task_attempt',
  'system_async_task_bulk',
  'system_async_task_failure',
  'system_async_task_dead_letter',
  'system_async_task_policy',
  'system_async_task_worker',
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
];

/** True when the server answers. Throws on CI when it does not; elsewhere prints the one skip line. */
export async function mysqlAvailable(file: string): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ ...serverOptions(), connectTimeout: 3000 });
    await conn.end();
    return true;
  } catch (error) {
    const reason = (error as { code?: string }).code ?? String(error);
    if (process.env.CI === 'true') throw new Error(`MySQL/MariaDB at ${redacted()} is unreachable (${reason}); on CI the MySQL tests must run`);
    console.log(`[${file}] skipped: no MySQL/MariaDB at ${redacted()} (${reason}); start it with: ${START_HINT}`);
    return false;
  }
}

export interface TestDatabase {
  name: string;
  /** The server URL with this database as its path. */
  uri: string;
  /** Empties every tasklease table (keeps the schema and its version). */
  clean(): Promise<void>;
  /** Runs raw SQL as the test (the seed's diagnostic queries). */
  query(sql: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /** The column names a query returns. */
  fields(sql: string): Promise<string[]>;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `tasklease_test_${randomBytes(6).toString('hex')}`;
  const admin = await mysql.createConnection({ ...serverOptions(), dateStrings: true, timezone: 'Z' });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4`);
  await admin.query(`USE \`${name}\``);
  await admin.query("SET time_zone = '+00:00'");
  const url = new URL(MYSQL_URL);
  url.pathname = `/${name}`;
  return {
    name,
    uri: url.toString(),
    async clean() {
      const [rows] = await admin.query('SHOW TABLES');
      const present = new Set((rows as Record<string, unknown>[]).map((row) => String(Object.values(row)[0])));
      for (const table of TABLES) if (present.has(table)) await admin.query(`DELETE FROM ${table}`);
    },
    async query(sql, values = []) {
      const [rows] = await admin.query(sql, values);
      return rows as Record<string, unknown>[];
    },
    async fields(sql) {
      const [, fields] = await admin.query(sql);
      return (fields ?? []).map((field) => field.name);
    },
    async drop() {
      try {
        await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      } finally {
        await admin.end();
      }
    },
  };
}

/** A factory for the shared suites: every create() is a migrated, emptied database of this file. */
export function mysqlStoreFactory(database: () => TestDatabase, poolSize = 4): StoreFactory {
  return migratedStoreFactory(
    'mysql',
    () => new MysqlStore({ uri: database().uri, poolSize }),
    () => database().clean(),
    async () => {
      const fresh = await createTestDatabase();
      const store = new MysqlStore({ uri: fresh.uri, poolSize: 2 });
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

function serverOptions(): mysql.ConnectionOptions {
  const url = new URL(MYSQL_URL.replace(/^mariadb:/, 'mysql:'));
  return {
    host: url.hostname || '127.0.0.1',
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || 'root',
    password: decodeURIComponent(url.password),
    charset: 'utf8mb4',
  };
}

function redacted(): string {
  const url = new URL(MYSQL_URL.replace(/^mariadb:/, 'mysql:'));
  url.password = url.password ? '***' : '';
  return url.toString();
}

/**
 * Runs a shared suite on MySQL/MariaDB: a fresh database for the file,
 * dropped afterwards. No server: fails on CI, else skipped with one line (mysqlAvailable).
 */
export async function onMysql(file: string, title: string, suite: (factory: StoreFactory) => void): Promise<void> {
  onServerArea(
    { available: await mysqlAvailable(file), title: `${title} on mysql`, needs: 'MySQL/MariaDB', create: createTestDatabase, factory: mysqlStoreFactory },
    suite,
  );
}
