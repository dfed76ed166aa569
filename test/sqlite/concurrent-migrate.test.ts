import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';

function migrateInChild(path: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'migrate-child.ts'), path], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe('SQLite migrations', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-migrate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are applied exactly once when four processes start at the same moment', async () => {
    const path = join(dir, 'fresh.db');
    const results = await Promise.all(Array.from({ length: 4 }, () => migrateInChild(path)));
    const expected = new SqliteStore({ path: ':memory:' }).expectedSchemaVersion;
    for (const result of results) {
      expect(result.code, result.out).toBe(0);
      expect(result.out.trim()).toBe(String(expected));
    }
    const db = new Database(path, { readonly: true });
    const versions = db.prepare('SELECT version FROM tasklease_migrations ORDER BY version').all() as { version: number }[];
    db.close();
    // The versions the list holds (gaps are allowed: numbers are reserved per feature), each once.
    expect(versions.map((v) => v.version)).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
  });
});
