import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import { describeOnServer } from '../helpers/factory.js';
import { runLeasePoolSuite } from './lease-pool-suite.js';

const available = await postgresAvailable('test/store/postgres-lease-pool.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: lease pool', () =>
  runLeasePoolSuite({
    dialect: 'postgres',
    construct: (options) => new PostgresStore({ ...(options.pool ? {} : { connectionString: PG_URL }), ...(options as object) }),
    pool: (size) => {
      const pool = new pg.Pool({ connectionString: PG_URL, max: size });
      return { pool, end: () => pool.end() };
    },
    sizeOption: 'max',
    async openOnOwnPool() {
      const schema = await createTestSchema();
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      const store = new PostgresStore({ pool, schema: schema.name });
      await store.migrate();
      return {
        store,
        async holdOnlyConnection() {
          const client = await pool.connect();
          return async () => client.release();
        },
        async dispose() {
          await store.close();
          await pool.end();
          await schema.drop();
        },
      };
    },
  }),
);
