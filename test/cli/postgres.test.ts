import { PostgresStore } from '../../src/store/postgres/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import { serverCliSuite } from './suite.js';

describeOnServer(await postgresAvailable('test/cli/postgres.test.ts'), 'PostgreSQL', 'tasklease CLI on postgres', () => {
  serverCliSuite({
    create: () => createTestSchema(),
    url: (schema) => `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema.name}&poolSize=2`,
    openStore: (schema) => new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 }),
  });
});
