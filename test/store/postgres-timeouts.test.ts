/**
 * Issue 12 item 6 on PostgreSQL: a server that accepts TCP but never answers
 * makes the store fail within connectTimeoutMs with a typed error naming the
 * host (never the password); a statement of the store's own that runs past
 * statementTimeoutMs is cancelled by the server and reported as such.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { ErrorCode } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { expectConnectTimeout } from '../helpers/silent-server.js';

describe('PostgreSQL: a server that never answers', () => {
  it('fails migrate() within connectTimeoutMs with STORE_CONNECT_TIMEOUT naming the host, not the password', async () => {
    await expectConnectTimeout(
      (port) => new PostgresStore({ connectionString: `postgres://tl:s3cret@127.0.0.1:${port}/jobs`, connectTimeoutMs: 400 }),
      (port) => `PostgreSQL at 127.0.0.1:${port}/jobs`,
    );
  });

  it('validates the timeouts at construction', () => {
    expect(() => new PostgresStore({ connectionString: PG_URL, connectTimeoutMs: 0 })).toThrow(/connectTimeoutMs/);
    expect(() => new PostgresStore({ connectionString: PG_URL, statementTimeoutMs: -1 })).toThrow(/statementTimeoutMs/);
  });
});

const available = await postgresAvailable('test/store/postgres-timeouts.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: statement timeout', () => {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
  });

  it('cancels a store statement that waits past statementTimeoutMs, with STORE_STATEMENT_TIMEOUT', async () => {
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1, statementTimeoutMs: 300 });
    const locker = new pg.Client({ connectionString: PG_URL });
    await locker.connect();
    try {
      await store.migrate();
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema.name}".system_async_task IN ACCESS EXCLUSIVE MODE`);
      const error = await store.getTask({ id: 'x', scope: Scope.global() }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: ErrorCode.STORE_STATEMENT_TIMEOUT });
      await locker.query('ROLLBACK');
      expect(await store.getTask({ id: 'x', scope: Scope.global() })).toBeNull();
    } finally {
      await locker.end();
      await store.close();
    }
  });
});
