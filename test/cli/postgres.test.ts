import { afterAll, beforeAll, beforeEach } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { cliSuite } from './suite.js';

const urlOf = (schema: string): string => `${PG_URL}${PG_URL.includes('?') ? '&' : '?'}schema=${schema}&poolSize=2`;

describeOnServer(await postgresAvailable('test/cli/postgres.test.ts'), 'PostgreSQL', 'tasklease CLI on postgres', () => {
  let schema: TestSchema;
  let expectedVersion = 0;
  beforeAll(async () => {
    schema = await createTestSchema();
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 });
    await store.migrate();
    expectedVersion = store.expectedSchemaVersion;
    await store.close();
  });
  afterAll(async () => {
    await schema?.drop();
  });
  beforeEach(async () => {
    await schema.clean();
  });
  cliSuite({
    url: () => urlOf(schema.name),
    expectedSchemaVersion: () => expectedVersion,
    fresh: async () => {
      const fresh = await createTestSchema();
      return { url: urlOf(fresh.name), drop: () => fresh.drop() };
    },
  });
});
