import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { cliSuite } from './suite.js';

describe('tasklease CLI on sqlite', () => {
  let dir: string;
  let expectedVersion = 0;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-db-'));
    const store = new SqliteStore({ path: join(dir, 'tasks.db') });
    await store.migrate();
    expectedVersion = store.expectedSchemaVersion;
    await store.close();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  cliSuite({
    url: () => `sqlite:${join(dir, 'tasks.db')}`,
    expectedSchemaVersion: () => expectedVersion,
    fresh: async () => ({ url: `sqlite:${join(dir, 'fresh.db')}`, drop: async () => undefined }),
  });
});
