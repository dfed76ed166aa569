import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';

describe('SqliteStore options', () => {
  it('rejects an unknown option by name instead of ignoring it', () => {
    const build = () => new SqliteStore({ path: ':memory:', busyTimeout: 10 } as never);
    expect(build).toThrow(InvalidOptionsError);
    expect(build).toThrow(/busyTimeout/);
  });
});
