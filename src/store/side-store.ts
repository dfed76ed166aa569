/**
 * Side stores (API tokens, schedules, moved rows) on a store's own database
 * and connections. A module of its own, apart from base.ts: its builders name
 * every dialect's store type, and base.ts's declarations are read by every
 * consumer's type check — a PostgreSQL-only user would need the SQLite and
 * MySQL drivers' types (test/package/consumer.test.ts).
 */
import { guardSideStore } from './base.js';
import type { Store } from './types.js';

/** How a side store is made for each dialect: each builder loads only its own dialect's module. */
export interface SideStoreBuilders<T> {
  sqlite(store: import('./sqlite/store.js').SqliteStore): Promise<T>;
  postgres(store: import('./postgres/store.js').PostgresStore): Promise<T>;
  mysql(store: import('./mysql/store.js').MysqlStore): Promise<T>;
}

/** The side store working on the same database (and connections) as `store`, guarded as guardSideStore says. */
export async function sideStoreOf<T extends object>(store: Store, builders: SideStoreBuilders<T>): Promise<T> {
  const build = builders[store.dialect] as (parent: Store) => Promise<T>;
  return guardSideStore(store, await build(store));
}
