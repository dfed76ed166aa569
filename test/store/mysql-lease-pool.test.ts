import mysql from 'mysql2/promise';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, MYSQL_URL, mysqlAvailable } from '../helpers/mysql.js';
import { describeOnServer } from '../helpers/factory.js';
import { runLeasePoolSuite } from './lease-pool-suite.js';

const available = await mysqlAvailable('test/store/mysql-lease-pool.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'MySQL: lease pool', () =>
  runLeasePoolSuite({
    dialect: 'mysql',
    construct: (options) => new MysqlStore({ ...(options.pool ? {} : { uri: MYSQL_URL }), ...(options as object) }),
    pool: (size) => {
      const pool = mysql.createPool({ uri: MYSQL_URL, connectionLimit: size });
      return { pool, end: () => pool.end() };
    },
    sizeOption: 'connectionLimit',
    async openOnOwnPool() {
      const database = await createTestDatabase();
      const pool = mysql.createPool({ uri: database.uri, connectionLimit: 1, dateStrings: true, flags: ['FOUND_ROWS'], multipleStatements: true });
      const store = new MysqlStore({ pool });
      await store.migrate();
      return {
        store,
        async holdOnlyConnection() {
          const conn = await pool.getConnection();
          return async () => conn.release();
        },
        async dispose() {
          await store.close();
          await pool.end();
          await database.drop();
        },
      };
    },
  }),
);
