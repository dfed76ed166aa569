import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { payloadConditions } from '../../src/core/search.js';
import { Scope } from '../../src/core/scope.js';
import { onPostgres, postgresAvailable, sharedPostgresStore } from '../helpers/postgres.js';
import { runSearchSuite } from './suite.js';

await onPostgres('test/search/postgres.test.ts', 'search', runSearchSuite);

if (await postgresAvailable('test/search/postgres.test.ts')) {
  describe('search by payload on postgres: an operator expression index', () => {
    const shared = sharedPostgresStore();
    it('serves the payload filter once created (the docs/store.md statement), and the list reads the same rows', async () => {
      const { store, schema } = shared();
      const client = createClient({ store, tasks: [defineTask<unknown>({ type: 'order.ship' })] });
      const results = await client.submitMany(
        Array.from({ length: 2000 }, (_, i) => ({ type: 'order.ship', payload: { order: { id: i } }, delayMs: 3_600_000 })),
      );
      const params = { scope: Scope.global(), limit: 50, payload: payloadConditions([{ path: 'order.id', equals: 1234 }]) };
      await schema.query(
        `CREATE INDEX ix_task_order_id ON "${schema.name}".system_async_task ((CASE WHEN strpos(payload_json, '\\u0000') = 0 THEN payload_json::jsonb END #> '{order,id}'))`,
      );
      await schema.query(`ANALYZE "${schema.name}".system_async_task`);
      expect((await store.explainListTasks(params)).plan).toMatch(/ix_task_order_id/);
      expect((await client.list({ payload: [{ path: 'order.id', equals: 1234 }] })).tasks.map((t) => t.id)).toEqual([results[1234]!.task.id]);
    });
  });
}
