import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestDatabase, mysqlAvailable, mysqlStoreFactory, type TestDatabase } from '../helpers/mysql.js';
import { runObserveSuite } from './suite.js';

const available = await mysqlAvailable('test/observe/mysql.test.ts');

if (available) {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  runObserveSuite(mysqlStoreFactory(() => database));
} else {
  describe.skip('observability on mysql (no server)', () => it('needs MySQL/MariaDB', () => undefined));
}
