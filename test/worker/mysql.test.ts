import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestDatabase, mysqlAvailable, mysqlStoreFactory, type TestDatabase } from '../helpers/mysql.js';
import { runWorkerSuite } from './suite.js';

const available = await mysqlAvailable('test/worker/mysql.test.ts');

if (available) {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  runWorkerSuite(mysqlStoreFactory(() => database));
} else {
  describe.skip('worker on mysql (no server)', () => it('needs MySQL/MariaDB', () => undefined));
}
