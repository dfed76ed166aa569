import { MysqlStore } from '../../src/store/mysql/store.js';
import { MYSQL_URL, onMysql } from '../helpers/mysql.js';
import { runUnknownOptionSuite } from './options-suite.js';

await onMysql('test/package/options-mysql.test.ts', 'unknown options', (factory) =>
  runUnknownOptionSuite(factory, {
    construct: () => new MysqlStore({ uri: MYSQL_URL, databse: 'test' } as object),
    field: 'databse',
    message:
      'MysqlStore option "databse" is unknown: did you mean "database"? (known: uri, pool, database, poolSize, leasePoolSize, leasePool, connectTimeoutMs, statementTimeoutMs, wakeupPollMs)',
  }),
);
