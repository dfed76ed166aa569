import { PostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { dashboardSuite } from './suite.js';

const available = await postgresAvailable('test/ui/postgres.test.ts');

describeOnServer(available, 'PostgreSQL', 'dashboard on postgres', () => {
  const schemas = new Map<Store, TestSchema>();
  dashboardSuite('postgres', {
    async create() {
      const schema = await createTestSchema();
      const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 6 });
      await store.migrate();
      schemas.set(store, schema);
      return store;
    },
    async destroy(store) {
      await store.close();
      await schemas.get(store)?.drop();
    },
  });
});
