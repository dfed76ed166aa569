import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { serverSuite } from './suite.js';

serverSuite({
  create: () => sqliteFactory.create(),
  twin: (store) => new SqliteStore({ path: (store as SqliteStore).db.name }),
  destroy: (store) => sqliteFactory.destroy(store),
});
