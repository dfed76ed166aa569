import { afterAll, beforeAll, describe, it } from 'vitest';
import type { Store } from '../../src/store/types.js';

/** How a dialect's test file hands its stores to the shared suites: each create() is a fresh, migrated, empty database. */
export interface StoreFactory {
  dialect: Store['dialect'];
  create(): Promise<Store>;
  destroy(store: Store): Promise<void>;
  /** A store on a database (or schema) never migrated, and how to remove it. */
  openUnmigrated(): Promise<UnmigratedStore>;
}

export interface UnmigratedStore {
  store: Store;
  /** Closes the store and drops whatever it or its test created. */
  dispose(): Promise<void>;
}

/** A factory for the shared suites: every create() is a store opened, migrated, then emptied (`clean`). */
export function migratedStoreFactory(
  dialect: Store['dialect'],
  open: () => Store,
  clean: () => Promise<void>,
  openUnmigrated: () => Promise<UnmigratedStore>,
): StoreFactory {
  return {
    dialect,
    openUnmigrated,
    async create(): Promise<Store> {
      const store = open();
      await store.migrate();
      await clean();
      return store;
    },
    async destroy(store: Store): Promise<void> {
      await store.close();
    },
  };
}

/**
 * Runs a shared suite against a database server: one fresh area (schema or
 * database) for the test file, dropped afterwards. Without a server (outside
 * CI; `available` already failed on CI) one skipped test says what is needed.
 */
export function onServerArea<Area extends { drop(): Promise<void> }>(
  options: {
    available: boolean;
    title: string;
    needs: string;
    create: () => Promise<Area>;
    factory: (area: () => Area) => StoreFactory;
  },
  suite: (factory: StoreFactory) => void,
): void {
  if (!options.available) {
    skipWithoutServer(options.title, options.needs);
    return;
  }
  let area: Area | undefined;
  beforeAll(async () => {
    area = await options.create();
  });
  afterAll(async () => {
    await area?.drop();
  });
  suite(options.factory(() => area!));
}

/**
 * The test suite's one skip, and why: a developer without PostgreSQL or
 * MariaDB running, or without a program a test drives (Chromium, PgBouncer,
 * Patroni…), still gets every other test. It is reached only outside CI:
 * with CI=true, postgresAvailable / mysqlAvailable and systemTool throw
 * instead, so whatever is missing fails the run.
 */
export function skipMissing(title: string, missing: 'no server' | 'not installed', needs: string): void {
  describe.skip(`${title} (${missing})`, () => it(`needs ${needs}`, () => undefined));
}

/** The skip for a missing database server (skipMissing). */
export function skipWithoutServer(title: string, needs: string): void {
  skipMissing(title, 'no server', needs);
}

/** describe(title, body) when the server answered, else the one skip above. */
export function describeOnServer(available: boolean, needs: string, title: string, body: () => void): void {
  if (available) describe(title, body);
  else skipWithoutServer(title, needs);
}
