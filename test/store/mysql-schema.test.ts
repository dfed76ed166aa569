/**
 * MySQL/MariaDB schema and start-up: concurrent migrate, column types the
 * design asks for, UTC sessions, options validated at the edge, and an
 * unreachable server reported as a StoreError with its cause.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { InvalidOptionsError, StoreError } from '../../src/core/errors.js';
import { MYSQL_MIGRATIONS } from '../../src/store/mysql/migrations.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';

const available = await mysqlAvailable('test/store/mysql-schema.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'MySQL store: schema and start-up', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('migrates once when several processes start at the same moment', async () => {
    const stores = Array.from({ length: 5 }, () => new MysqlStore({ uri: database.uri, poolSize: 1 }));
    try {
      await Promise.all(stores.map((store) => store.migrate()));
      expect(await stores[0]!.schemaVersion()).toBe(stores[0]!.expectedSchemaVersion);
      const versions = await database.query('SELECT version, name FROM tasklease_migrations ORDER BY version');
      // Each migration once, in order (the list itself, not its length: other migrations are appended over time).
      expect(versions).toEqual(MYSQL_MIGRATIONS.map(({ version, name }) => ({ version, name })));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it('has the seed\u2019s columns, sub-second UTC times, utf8mb4 and payloads beyond 64 KiB', async () => {
    const columns = await database.query(
      `SELECT column_name AS name, data_type AS type, datetime_precision AS fsp, character_set_name AS charset
       FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'system_async_task'`,
    );
    const byName = new Map(columns.map((c) => [String(c.name), c]));
    for (const name of [
      'id',
      'task_type',
      'status',
      'priority',
      'payload_json',
      'available_at',
      'deadline_at',
      'lease_owner',
      'lease_until',
      'attempt_count',
      'max_attempts',
      'artifact_id',
      'create_time',
      'update_time',
    ])
      expect(byName.has(name), name).toBe(true);
    expect(byName.get('payload_json')).toMatchObject({ type: 'longtext', charset: 'utf8mb4' });
    for (const name of ['available_at', 'deadline_at', 'lease_until', 'create_time', 'update_time', 'start_time', 'finish_time']) {
      expect(byName.get(name), name).toMatchObject({ type: 'datetime', fsp: 3 });
    }
    // The generated helper columns are invisible: SELECT * (the seed's queries) shows the mirrored columns only.
    const star = await database.query('SELECT * FROM system_async_task LIMIT 0');
    expect(star).toEqual([]);
    const fields = await database.fields('SELECT * FROM system_async_task LIMIT 0');
    expect(fields).not.toContain('claimable');
    expect(fields).not.toContain('owner_key');
    expect(fields).not.toContain('unique_hold');
    expect(fields).toContain('trace_parent');
    expect(fields).toContain('lease_token');
    expect(fields).toContain('flow_id');
    expect(fields).toContain('sequence_key');
    expect(fields).toContain('rate_key');
    expect(fields).toHaveLength(38);
  });

  it('judges time by the database clock in UTC', async () => {
    const store = new MysqlStore({ uri: database.uri, poolSize: 1 });
    try {
      const [row] = await database.query('SELECT UTC_TIMESTAMP(3) AS utc');
      const now = await store.now();
      expect(Math.abs(now.getTime() - new Date(`${String(row!.utc).replace(' ', 'T')}Z`).getTime())).toBeLessThan(2000);
    } finally {
      await store.close();
    }
  });

  it('rejects bad options at construction, naming the field', () => {
    const bad: [unknown, string][] = [
      [{}, 'uri'],
      [{ uri: 'postgres://localhost/x' }, 'uri'],
      [{ uri: 'not a url' }, 'uri'],
      [{ uri: database.uri, poolSize: 0 }, 'poolSize'],
      [{ uri: database.uri, poolSize: 2.5 }, 'poolSize'],
      [{ uri: database.uri, database: '' }, 'database'],
      [{ uri: database.uri, bogus: true }, 'bogus'],
      [{ pool: {} }, 'pool'],
      [{ uri: database.uri, pool: {} }, 'pool'],
      [null, 'options'],
    ];
    for (const [options, field] of bad) {
      let caught: unknown;
      try {
        new MysqlStore(options as never);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(options)).toBeInstanceOf(InvalidOptionsError);
      expect(caught).toMatchObject({ field });
    }
  });

  it('reports an unreachable server as a StoreError with the driver error as cause', async () => {
    const store = new MysqlStore({ uri: 'mysql://root@127.0.0.1:1/nothing', poolSize: 1 });
    try {
      const error = await store.now().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', cause: { code: 'ECONNREFUSED' } });
    } finally {
      await store.close();
    }
  });
});
