import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';

describe('SqliteStore options', () => {
  it('rejects an unknown option by name instead of ignoring it', () => {
    const build = () => new SqliteStore({ path: ':memory:', busyTimeout: 10 } as never);
    expect(build).toThrow(InvalidOptionsError);
    expect(build).toThrow(/busyTimeout/);
  });

  it('names a missing directory as the reason a database cannot be opened', () => {
    const missing = join(tmpdir(), `tasklease-missing-${process.pid}-${Date.now()}`);
    const build = () => new SqliteStore({ path: join(missing, 'tasks.db') });
    expect(build).toThrow(expect.objectContaining({ code: 'STORE_UNAVAILABLE' }));
    expect(build).toThrow(`cannot open SQLite database ${join(missing, 'tasks.db')}: its directory ${missing} does not exist (create it first)`);
  });
});
