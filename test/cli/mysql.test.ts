import { MysqlStore } from '../../src/store/mysql/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable } from '../helpers/mysql.js';
import { serverCliSuite } from './suite.js';

describeOnServer(await mysqlAvailable('test/cli/mysql.test.ts'), 'MySQL/MariaDB', 'tasklease CLI on mysql', () => {
  serverCliSuite({
    create: createTestDatabase,
    url: (database) => `${database.uri}${database.uri.includes('?') ? '&' : '?'}poolSize=2`,
    openStore: (database) => new MysqlStore({ uri: database.uri, poolSize: 1 }),
  });
});
