import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestSchema, postgresAvailable, postgresStoreFactory, type TestSchema } from '../helpers/postgres.js';
import { runControlSuite } from './suite.js';

const available = await postgresAvailable('test/control/postgres.test.ts');

if (available) {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema();
  });
  afterAll(async () => {
    await schema?.drop();
  });
  runControlSuite(postgresStoreFactory(() => schema));
} else {
  describe.skip('control plane on postgres (no server)', () => it('needs PostgreSQL', () => undefined));
}
