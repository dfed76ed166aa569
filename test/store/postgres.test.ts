import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestSchema, postgresAvailable, postgresStoreFactory, type TestSchema } from '../helpers/postgres.js';
import { runStoreConformance } from './conformance.js';

const available = await postgresAvailable('test/store/postgres.test.ts');

if (available) {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
  });
  runStoreConformance(postgresStoreFactory(() => schema));
} else {
  describe.skip('Store conformance: postgres (no server)', () => it('needs PostgreSQL', () => undefined));
}
