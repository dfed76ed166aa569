import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { runUnknownOptionSuite } from './options-suite.js';

runUnknownOptionSuite(sqliteFactory, {
  construct: () => new SqliteStore({ path: ':memory:', busyTimeout: 100 } as object as { path: string }),
  field: 'busyTimeout',
  message: 'SqliteStore option "busyTimeout" is unknown: did you mean "busyTimeoutMs"? (known: path, busyTimeoutMs, clock)',
});
