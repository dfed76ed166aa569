import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestSchema, postgresAvailable, postgresStoreFactory, type TestSchema } from '../helpers/postgres.js';
import { runObserveSuite } from './suite.js';

const available = await postgresAvailable('test/observe/postgres.test.ts');

if (available) {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
  });
  runObserveSuite(postgresStoreFactory(() => schema));
} else {
  describe.skip('observability on postgres (no server)', () => it('needs PostgreSQL', () => undefined));
}
