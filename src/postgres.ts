/**
 * `tasklease/postgres`: the PostgreSQL store. Needs the pg package (an
 * optional peer dependency); without it, importing this entry throws a
 * DriverMissingError (code DRIVER_MISSING) that says what to install. Its types
 * are the only ones that reference pg's, so the root entry type-checks without them.
 */
import type * as Postgres from './store/postgres/index.js';
import { loadDialect } from './store/dialects.js';

const loaded = await loadDialect('postgres');
export const PostgresStore: typeof Postgres.PostgresStore = loaded.PostgresStore;
export type PostgresStore = Postgres.PostgresStore;
export type { PostgresStoreOptions } from './store/postgres/index.js';
