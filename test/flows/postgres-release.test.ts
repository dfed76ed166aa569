/**
 * PostgreSQL's release path at scale and inside a handler's transaction:
 * the plans of the settle's statements over a flow of thousands of edges
 * read indexes only (as the claim's plan is checked: conformance-plan.ts),
 * and a node completed with ctx.complete(tx) releases its child in that same
 * transaction — committed with it, or not at all when the handler rolls back.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { createWorker } from '../../src/worker/worker.js';
import { describeOnServer } from '../helpers/factory.js';
import { PG_URL, postgresAvailable, sharedPostgresStore } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const PARTS = 3000;

describeOnServer(await postgresAvailable('test/flows/postgres-release.test.ts'), 'PostgreSQL', 'flow release on postgres', () => {
  const shared = sharedPostgresStore();

  it('settles by the edges’ and tasks’ primary keys: no scan of the flow per node', async () => {
    const { store, schema } = shared();
    const client = createClient({ store, tasks: [defineTask({ type: 'plan.node' })] });
    const parts = Array.from({ length: PARTS }, (_, i) => ({ key: `p${i}`, type: 'plan.node', payload: {}, dependsOn: ['root'] }));
    const flow = await client.submitFlow({
      nodes: [{ key: 'root', type: 'plan.node', payload: {} }, ...parts, { key: 'join', type: 'plan.node', payload: {}, dependsOn: parts.map((p) => p.key) }],
    });
    const s = `"${schema.name}"`;
    await schema.query(`ANALYZE ${s}.system_async_task, ${s}.system_async_task_dependency`);
    const explain = async (sql: string, ids: string[]) =>
      (await schema.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, [ids])).map((r) => r['QUERY PLAN']).join('\n');
    const part = flow.tasks.p1500!.id;
    const plans = [
      // the outcome function's probe: does a finished task have unresolved edges?
      await explain(`SELECT 1 FROM ${s}.system_async_task_dependency d WHERE d.parent_id = ANY ($1::uuid[]) AND d.resolved IS NULL`, [part]),
      // the settle's resolution of a finished parent's edges (joined to the parent's row)
      await explain(
        `UPDATE ${s}.system_async_task_dependency d SET resolved = 'SUCCEEDED' FROM ${s}.system_async_task p
         WHERE d.parent_id = ANY ($1::uuid[]) AND d.resolved IS NULL AND p.id = d.parent_id`,
        [part],
      ),
      // the settle's lock of the children, in id order
      await explain(`SELECT c.id FROM ${s}.system_async_task c WHERE c.id = ANY ($1::uuid[]) ORDER BY c.id FOR UPDATE`, [flow.tasks.join!.id]),
    ];
    for (const plan of plans) {
      expect(plan).toMatch(/Index (Only )?Scan using system_async_task(_dependency)?_pkey/);
      expect(plan).not.toMatch(/Seq Scan/);
    }
    expect((await store.countByStatus({ scope: G })).BLOCKED).toBe(PARTS + 1);
  });

  it('ctx.complete(tx) releases the child in the handler’s transaction: committed with it, or not at all', async () => {
    const { store, schema } = shared();
    const effects = new pg.Pool({ connectionString: PG_URL, max: 2 });
    await effects.query(`CREATE TABLE IF NOT EXISTS "${schema.name}".flow_effects (task_id text PRIMARY KEY)`);
    let rollBack = true;
    const parent = defineTask({
      type: 'tx.parent',
      maxAttempts: 3,
      execute: async (ctx) => {
        const tx = await effects.connect();
        try {
          await tx.query('BEGIN');
          await tx.query(`INSERT INTO "${schema.name}".flow_effects VALUES ($1)`, [ctx.taskId]);
          await ctx.complete(tx);
          // The child is released in this transaction: no one else sees it QUEUED before the commit.
          expect((await store.getTask({ id: childId, scope: G }))!.status).toBe('BLOCKED');
          if (rollBack) {
            rollBack = false;
            await tx.query('ROLLBACK');
            throw new Error('rolled back on purpose');
          }
          await tx.query('COMMIT');
        } finally {
          tx.release();
        }
      },
    });
    const child = defineTask({ type: 'tx.child', execute: async () => undefined });
    let childId = '';
    const client = createClient({ store, tasks: [parent, child] });
    const flow = await client.submitFlow({
      nodes: [
        { key: 'parent', type: 'tx.parent', payload: {} },
        { key: 'child', type: 'tx.child', payload: {}, dependsOn: ['parent'] },
      ],
    });
    childId = flow.tasks.child!.id;
    const worker = createWorker({ store, tasks: [parent, child], ...FAST_WORKER });
    await worker.start();
    try {
      await waitFor(async () => (await store.getTask({ id: childId, scope: G }))?.status === 'SUCCESS', 'the child to run after the committed parent');
      const attempts = await store.listAttempts({ taskId: flow.tasks.parent!.id });
      expect(attempts.map((a) => a.outcome)).toEqual(['FAILED', 'SUCCESS']);
      expect(await schema.query(`SELECT task_id FROM "${schema.name}".flow_effects`)).toEqual([{ task_id: flow.tasks.parent!.id }]);
    } finally {
      await worker.stop();
      await effects.end();
    }
  });
});
