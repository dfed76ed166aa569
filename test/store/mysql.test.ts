import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestDatabase, mysqlAvailable, mysqlStoreFactory, type TestDatabase } from '../helpers/mysql.js';
import { runStoreConformance } from './conformance.js';

const available = await mysqlAvailable('test/store/mysql.test.ts');

if (available) {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });
  runStoreConformance(mysqlStoreFactory(() => database));
} else {
  describe.skip('Store conformance: mysql (no server)', () => it('needs MySQL/MariaDB', () => undefined));
}
