import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { runFairnessSuite } from './fairness.js';
import type { ProcessDialect } from './suite.js';

const dir = mkdtempSync(join(tmpdir(), 'tasklease-fair-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const dialect: ProcessDialect = {
  name: 'sqlite',
  async create() {
    files += 1;
    const path = join(dir, `fair-${files}.db`);
    const store = new SqliteStore({ path, busyTimeoutMs: 10_000 });
    await store.migrate();
    const unsupported = (): never => {
      throw new Error('not needed by the fairness and sequence suites');
    };
    return {
      storeConfig: { dialect: 'sqlite', path },
      store,
      clean: unsupported,
      attempts: unsupported,
      terminateConnections: unsupported,
      destroy: () => store.close(),
    };
  },
};
runFairnessSuite(dialect);
