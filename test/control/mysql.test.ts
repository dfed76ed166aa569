import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestDatabase, mysqlAvailable, mysqlStoreFactory, type TestDatabase } from '../helpers/mysql.js';
import { runControlSuite } from './suite.js';

const available = await mysqlAvailable('test/control/mysql.test.ts');

if (available) {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  runControlSuite(mysqlStoreFactory(() => database));
} else {
  describe.skip('control plane on mysql (no server)', () => it('needs MySQL/MariaDB', () => undefined));
}
