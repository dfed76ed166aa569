import { afterAll, beforeAll, beforeEach } from 'vitest';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { cliSuite } from './suite.js';

const urlOf = (database: TestDatabase): string => `${database.uri}${database.uri.includes('?') ? '&' : '?'}poolSize=2`;

describeOnServer(await mysqlAvailable('test/cli/mysql.test.ts'), 'MySQL/MariaDB', 'tasklease CLI on mysql', () => {
  let database: TestDatabase;
  let expectedVersion = 0;
  beforeAll(async () => {
    database = await createTestDatabase();
    const store = new MysqlStore({ uri: database.uri, poolSize: 1 });
    await store.migrate();
    expectedVersion = store.expectedSchemaVersion;
    await store.close();
  });
  afterAll(async () => {
    await database?.drop();
  });
  beforeEach(async () => {
    await database.clean();
  });
  cliSuite({
    url: () => urlOf(database),
    expectedSchemaVersion: () => expectedVersion,
    fresh: async () => {
      const fresh = await createTestDatabase();
      return { url: urlOf(fresh), drop: () => fresh.drop() };
    },
  });
});
