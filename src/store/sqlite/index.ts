export { SqliteStore, type SqliteStoreOptions, type SqliteTransaction } from './store.js';
