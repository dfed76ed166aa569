import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestSchema, postgresAvailable, postgresStoreFactory, type TestSchema } from '../helpers/postgres.js';
import { runWorkerSuite } from './suite.js';

const available = await postgresAvailable('test/worker/postgres.test.ts');

if (available) {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
  });
  runWorkerSuite(postgresStoreFactory(() => schema));
} else {
  describe.skip('worker on postgres (no server)', () => it('needs PostgreSQL', () => undefined));
}
