/**
 * `tasklease/sqlite`: the embedded store. Needs the better-sqlite3 package
 * (an optional peer dependency); without it, importing this entry throws a
 * DriverMissingError (code DRIVER_MISSING) that says what to install. Its types
 * are the only ones that reference better-sqlite3's, so the root entry
 * type-checks without them.
 */
import type * as Sqlite from './store/sqlite/store.js';
import { loadDialect } from './store/dialects.js';

const loaded = await loadDialect('sqlite');
export const SqliteStore: typeof Sqlite.SqliteStore = loaded.SqliteStore;
export type SqliteStore = Sqlite.SqliteStore;
export type { SqliteStoreOptions } from './store/sqlite/store.js';
