import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { payloadConditions } from '../../src/core/search.js';
import { Scope } from '../../src/core/scope.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { runSearchSuite } from './suite.js';

runSearchSuite(sqliteFactory);

describe('search by payload on sqlite: an operator expression index', () => {
  it('serves the payload filter once created (the docs/store.md statement), and the list reads the same rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-search-'));
    const store = new SqliteStore({ path: join(dir, 'tasks.db') });
    const admin = new Database(join(dir, 'tasks.db'));
    try {
      await store.migrate();
      const client = createClient({ store, tasks: [defineTask<unknown>({ type: 'order.ship' })] });
      const results = await client.submitMany(
        Array.from({ length: 1000 }, (_, i) => ({ type: 'order.ship', payload: { order: { id: i } }, delayMs: 3_600_000 })),
      );
      const ids = results.map((r) => r.task.id);
      const params = { scope: Scope.global(), limit: 50, payload: payloadConditions([{ path: 'order.id', equals: 7 }]) };
      expect((await store.explainListTasks(params)).plan).not.toContain('ix_task_order_id');
      admin.exec(`CREATE INDEX ix_task_order_id ON system_async_task (json_extract(payload_json, '$."order"."id"')); ANALYZE`);
      const plan = (await store.explainListTasks(params)).plan;
      expect(plan, plan).toMatch(/USING INDEX ix_task_order_id/);
      expect((await client.list({ payload: [{ path: 'order.id', equals: 7 }] })).tasks.map((t) => t.id)).toEqual([ids[7]]);
    } finally {
      admin.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
