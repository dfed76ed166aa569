import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dialectOfUrl, openStore, redactUrl } from '../../src/store/open.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';

describe('openStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tl-open-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names the dialect of each URL form', () => {
    expect(dialectOfUrl('sqlite:tasks.db')).toBe('sqlite');
    expect(dialectOfUrl('postgresql://u@h/db')).toBe('postgres');
    expect(dialectOfUrl('mariadb://root@h/db')).toBe('mysql');
  });

  it('rejects an unknown scheme with a typed error that hides the password', () => {
    expect(() => dialectOfUrl('redis://user:secret@h/0')).toThrowError(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'url' }));
    expect(() => dialectOfUrl('redis://user:secret@h/0')).toThrow(/redis:\/\/user:\*\*\*@h\/0/);
    expect(redactUrl('postgres://a:b@h/db')).toBe('postgres://a:***@h/db');
  });

  it('opens a migrated SQLite store from a URL', async () => {
    const store = await openStore(`sqlite://${join(dir, 'a.db')}`);
    try {
      expect(store.dialect).toBe('sqlite');
      await store.migrate();
      expect(await store.schemaVersion()).toBe(store.expectedSchemaVersion);
    } finally {
      await store.close();
    }
  });

  it('rejects a bad pool size', async () => {
    await expect(openStore('postgres://u@127.0.0.1/db?poolSize=0')).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'poolSize' });
  });

  it('opens PostgreSQL behind a transaction pooler from the URL, and keeps the options out of the driver URL', async () => {
    const listen = encodeURIComponent('postgres://u@127.0.0.1:5432/db');
    const store = (await openStore(`postgres://u@127.0.0.1:6432/db?pooler=transaction&listenConnectionString=${listen}&schema=s1`)) as PostgresStore;
    try {
      expect(store).toMatchObject({ pooler: 'transaction', pollOnly: false, schema: 's1' });
      expect((store.pool as unknown as { options: { connectionString: string } }).options.connectionString).toBe('postgres://u@127.0.0.1:6432/db');
    } finally {
      await store.close();
    }
    const polling = (await openStore('postgres://u@127.0.0.1:6432/db?pollOnly=true', { pooler: 'transaction' })) as PostgresStore;
    expect(polling).toMatchObject({ pooler: 'transaction', pollOnly: true });
    await polling.close();
    const history = (await openStore('postgres://u@127.0.0.1:6432/db?historyMoveAfterMs=21600000')) as PostgresStore;
    expect(history).toMatchObject({ historyMoveAfterMs: 21_600_000 });
    expect((history.pool as unknown as { options: { connectionString: string } }).options.connectionString).toBe('postgres://u@127.0.0.1:6432/db');
    await history.close();
  });

  it('rejects a bad pooler or pollOnly in the URL, naming the field', async () => {
    await expect(openStore('postgres://u@127.0.0.1/db?pooler=statement')).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'pooler' });
    await expect(openStore('postgres://u@127.0.0.1/db?pollOnly=maybe')).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'pollOnly' });
  });
});
