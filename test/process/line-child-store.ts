/** The store a line child opens: a server dialect as the worker children do (child-store.ts), or a SQLite file. */
import type { Store } from '../../src/store/types.js';
import { openChildStore, type ChildStoreConfig } from './child-store.js';

export type AnyChildStore = ChildStoreConfig | { dialect: 'sqlite'; path: string };

export async function openAnyChildStore(config: AnyChildStore, label: string): Promise<Store> {
  if (config.dialect !== 'sqlite') return openChildStore(config, label);
  const { SqliteStore } = await import('../../src/store/sqlite/store.js');
  return new SqliteStore({ path: config.path });
}
