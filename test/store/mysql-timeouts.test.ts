/**
 * Issue 12 item 6 on MySQL/MariaDB: a server that accepts TCP but never
 * sends its handshake makes the store fail within connectTimeoutMs (not
 * retried as a lost connection) with a typed error naming the host, never
 * the password; a statement of the store's own that runs past
 * statementTimeoutMs is stopped by the server and reported as such.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mysql from 'mysql2/promise';
import { ErrorCode } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, MYSQL_URL, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { expectConnectTimeout } from '../helpers/silent-server.js';

describe('MySQL: a server that never answers', () => {
  it('fails migrate() within connectTimeoutMs with STORE_CONNECT_TIMEOUT naming the host, not the password', async () => {
    await expectConnectTimeout(
      (port) => new MysqlStore({ uri: `mysql://root:s3cret@127.0.0.1:${port}/jobs`, connectTimeoutMs: 400, poolSize: 1 }),
      (port) => `MySQL at 127.0.0.1:${port}/jobs`,
    );
  });
});

const available = await mysqlAvailable('test/store/mysql-timeouts.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'MySQL: statement timeout', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('stops a store statement that waits past statementTimeoutMs, with STORE_STATEMENT_TIMEOUT', async () => {
    const store = new MysqlStore({ uri: database.uri, poolSize: 1, statementTimeoutMs: 300 });
    const locker = await mysql.createConnection(`${MYSQL_URL.replace(/\/[^/]*$/, '')}/${database.name}`);
    try {
      await store.migrate();
      await locker.query('LOCK TABLES system_async_task WRITE');
      const error = await store.getTask({ id: 'x', scope: Scope.global() }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: ErrorCode.STORE_STATEMENT_TIMEOUT });
      await locker.query('UNLOCK TABLES');
      expect(await store.getTask({ id: 'x', scope: Scope.global() })).toBeNull();
    } finally {
      await locker.end();
      await store.close();
    }
  });
});
