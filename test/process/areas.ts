/**
 * One describe per store for the line-child process tests: each test gets a
 * fresh database area (SQLite file, PostgreSQL schema, MariaDB database), the
 * parent's store on it, and what a child needs to open its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe } from 'vitest';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import { killLineChildren } from './line-child.js';
import type { AnyChildStore } from './line-child-store.js';

export interface Area {
  store: Store;
  childStore: AnyChildStore;
}

/** Runs `test(area)` on a fresh, migrated area and removes it afterwards. */
export type WithArea = (test: (area: Area) => Promise<void>) => Promise<void>;

async function sqliteArea(test: (area: Area) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-process-'));
  const store = new SqliteStore({ path: join(dir, 'tasks.db') });
  try {
    await store.migrate();
    await test({ store, childStore: { dialect: 'sqlite', path: join(dir, 'tasks.db') } });
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresArea(test: (area: Area) => Promise<void>): Promise<void> {
  const schema = await createTestSchema();
  const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
  try {
    await store.migrate();
    await test({ store, childStore: { dialect: 'postgres', url: PG_URL, schema: schema.name } });
  } finally {
    await store.close();
    await schema.drop();
  }
}

async function mysqlArea(test: (area: Area) => Promise<void>): Promise<void> {
  const database = await createTestDatabase();
  const store = new MysqlStore({ uri: database.uri, poolSize: 2 });
  try {
    await store.migrate();
    await test({ store, childStore: { dialect: 'mysql', uri: database.uri } });
  } finally {
    await store.close();
    await database.drop();
  }
}

export async function onEveryStore(file: string, title: string, body: (withArea: WithArea) => void): Promise<void> {
  afterEach(killLineChildren);
  describe(`${title} on sqlite`, () => body(sqliteArea));
  describeOnServer(await postgresAvailable(file), 'PostgreSQL', `${title} on postgres`, () => body(postgresArea));
  describeOnServer(await mysqlAvailable(file), 'MariaDB', `${title} on mysql`, () => body(mysqlArea));
}
