import type { Store } from '../../src/store/types.js';

/** How a dialect's test file hands its stores to the shared suites: each create() is a fresh, migrated, empty database. */
export interface StoreFactory {
  dialect: Store['dialect'];
  create(): Promise<Store>;
  destroy(store: Store): Promise<void>;
}
