/**
 * `tasklease/mysql`: the MySQL / MariaDB store. Needs the mysql2 package (an
 * optional peer dependency); without it, importing this entry throws a
 * DriverMissingError (code DRIVER_MISSING) that says what to install. Its types
 * are the only ones that reference mysql2's, so the root entry type-checks without them.
 */
import type * as Mysql from './store/mysql/store.js';
import { loadDialect } from './store/dialects.js';

const loaded = await loadDialect('mysql');
export const MysqlStore: typeof Mysql.MysqlStore = loaded.MysqlStore;
export type MysqlStore = Mysql.MysqlStore;
export type { MysqlStoreOptions } from './store/mysql/store.js';
