import { skipWithoutServer } from '../helpers/factory.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { createTestSchema, PG_URL, postgresAvailable } from '../helpers/postgres.js';
import { childApplicationName } from './child-store.js';
import { runFairnessSuite } from './fairness.js';
import { runProcessSuite, type AttemptRow, type ProcessDialect } from './suite.js';

const available = await postgresAvailable('test/process/postgres.test.ts');

if (available) {
  const dialect: ProcessDialect = {
    name: 'postgres',
    async create() {
      const schema = await createTestSchema();
      const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 4, applicationName: 'tl-parent' });
      await store.migrate();
      return {
        storeConfig: { dialect: 'postgres', url: PG_URL, schema: schema.name },
        store,
        clean: () => schema.clean(),
        attempts: () =>
          schema.query<AttemptRow>(`SELECT task_id, attempt, worker_id, outcome FROM "${schema.name}".system_async_task_attempt ORDER BY task_id, attempt`),
        async terminateConnections(label: string) {
          const rows = await schema.query<{ pid: number }>(
            `SELECT pg_terminate_backend(pid) AS done, pid FROM pg_stat_activity WHERE application_name LIKE $1 || ':%'`,
            [childApplicationName(label)],
          );
          return rows.length;
        },
        async destroy() {
          await store.close();
          await schema.drop();
        },
      };
    },
  };
  runProcessSuite(dialect);
  runFairnessSuite(dialect);
} else {
  skipWithoutServer('worker processes on postgres', 'PostgreSQL');
}
