import { skipWithoutServer } from '../helpers/factory.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { mysqlChildUser } from './child-store.js';
import { runFairnessSuite } from './fairness.js';
import { runProcessSuite, type AttemptRow, type ProcessDialect } from './suite.js';

const available = await mysqlAvailable('test/process/mysql.test.ts');

if (available) {
  const dialect: ProcessDialect = {
    name: 'mysql',
    async create() {
      const database = await createTestDatabase();
      const store = new MysqlStore({ uri: database.uri, poolSize: 4 });
      await store.migrate();
      const childUsers = async () =>
        // MariaDB names the column User whatever case the query uses: alias it.
        (await database.query("SELECT user AS name FROM mysql.user WHERE user LIKE CONCAT('tlw\\\\_%', ?)", [database.name.slice(-12)])).map((r) =>
          String(r.name),
        );
      return {
        storeConfig: { dialect: 'mysql', uri: database.uri },
        store,
        clean: () => database.clean(),
        attempts: async () =>
          (await database.query('SELECT task_id, attempt, worker_id, outcome FROM system_async_task_attempt ORDER BY task_id, attempt')).map((row) => ({
            task_id: String(row.task_id),
            attempt: Number(row.attempt),
            worker_id: String(row.worker_id),
            outcome: row.outcome === null ? null : String(row.outcome),
          })) as AttemptRow[],
        async terminateConnections(label: string) {
          const rows = await database.query('SELECT id FROM information_schema.processlist WHERE user = ?', [mysqlChildUser(database.uri, label)]);
          for (const row of rows) await database.query(`KILL CONNECTION ${Number(row.id)}`);
          return rows.length;
        },
        async destroy() {
          await store.close();
          for (const user of await childUsers()) await database.query('DROP USER IF EXISTS ?@?', [user, '%']);
          await database.drop();
        },
      };
    },
  };
  runProcessSuite(dialect);
  runFairnessSuite(dialect);
} else {
  skipWithoutServer('worker processes on mysql', 'MySQL/MariaDB');
}
