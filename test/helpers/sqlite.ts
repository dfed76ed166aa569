import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from './factory.js';

const dirs = new Map<Store, string>();

/** A fresh SQLite file in its own temporary folder per store. */
export const sqliteFactory: StoreFactory = {
  dialect: 'sqlite',
  async create() {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-'));
    const store = new SqliteStore({ path: join(dir, 'tasks.db') });
    await store.migrate();
    dirs.set(store, dir);
    return store;
  },
  async openUnmigrated() {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-'));
    const store = new SqliteStore({ path: join(dir, 'tasks.db') });
    return {
      store,
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  async destroy(store: Store) {
    await store.close();
    rmSync(dirs.get(store)!, { recursive: true, force: true });
    dirs.delete(store);
  },
};
