export { MysqlStore, type MysqlStoreOptions, type MysqlTransaction } from './store.js';
