/**
 * Limits are invariants on MySQL/MariaDB: six claimers, each a store with its
 * own pool (separate connections), race for tasks while a sampler on another
 * connection checks every committed state. Policy rows, written as an
 * operator would, override the claim defaults and apply on the next claim.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import type { Task } from '../../src/core/task.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-limits.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'MySQL store: global and per-type limits hold across concurrent claimers', () => {
  let database: TestDatabase;
  const stores: MysqlStore[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 6; i++) stores.push(new MysqlStore({ uri: database.uri, poolSize: 2 }));
    await Promise.all(stores.map((store) => store.migrate()));
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await database?.drop();
  });

  it('never exceeds GLOBAL, TYPE:<type> or default limits, and never claims a disabled type', async () => {
    const perType = 120;
    for (const taskType of ['alpha', 'beta', 'gamma', 'off']) {
      await stores[0]!.insertTasks({ tasks: Array.from({ length: perType }, () => newTask({ taskType })) });
    }
    // GLOBAL 7; alpha 2; beta: row without a number (the default, 4, applies); gamma: no row (default); off: disabled.
    await database.query(
      `INSERT INTO system_async_task_policy (policy_key, task_type, max_concurrency, enabled, update_time) VALUES
       ('GLOBAL', NULL, 7, 1, NOW(3)), ('TYPE:alpha', 'alpha', 2, 1, NOW(3)), ('TYPE:beta', 'beta', NULL, 1, NOW(3)),
       ('TYPE:off', 'off', 100, 0, NOW(3))`,
    );
    const params = { taskTypes: ['alpha', 'beta', 'gamma', 'off'], limit: 5, leaseMs: 30_000, globalConcurrency: 1000, typeConcurrency: 4 };
    const worst = { total: 0, alpha: 0, beta: 0, gamma: 0, off: 0 };
    let samples = 0;
    let done = false;

    const sampler = (async () => {
      while (!done) {
        const rows = await database.query(
          `SELECT task_type, COUNT(*) AS n FROM system_async_task WHERE status IN ('RUNNING','CANCEL_REQUESTED') GROUP BY task_type`,
        );
        let total = 0;
        for (const row of rows) {
          const type = String(row.task_type) as keyof typeof worst;
          worst[type] = Math.max(worst[type], Number(row.n));
          total += Number(row.n);
        }
        worst.total = Math.max(worst.total, total);
        samples += 1;
      }
    })();

    const claimer = async (store: MysqlStore, index: number) => {
      let finished = 0;
      for (;;) {
        const claimed: Task[] = await store.claimTasks(claimParams({ ...params, workerId: `w${index}` }));
        if (claimed.length === 0) {
          const left = await store.countByStatus({ scope: { kind: 'global' } });
          if (left.QUEUED === perType && left.RUNNING === 0) return finished; // only the disabled type remains
          continue;
        }
        // Hold the leases across an event-loop turn so that the claimers overlap, then finish them in one batch.
        await new Promise((resolve) => setImmediate(resolve));
        const applied = await store.finishAttempts({
          outcomes: claimed.map((task) => ({ kind: 'SUCCESS' as const, lease: leaseOf(task), artifactId: null, resultJson: null, progress: null })),
        });
        expect(applied.applied.every(Boolean)).toBe(true);
        finished += claimed.length;
      }
    };
    const finished = await Promise.all(stores.map((store, index) => claimer(store, index)));
    done = true;
    await sampler;

    expect(finished.reduce((a, b) => a + b, 0)).toBe(3 * perType);
    expect(samples).toBeGreaterThan(10);
    expect(worst.total).toBeLessThanOrEqual(7);
    expect(worst.alpha).toBeLessThanOrEqual(2);
    expect(worst.beta).toBeLessThanOrEqual(4);
    expect(worst.gamma).toBeLessThanOrEqual(4);
    expect(worst.off).toBe(0);
    // The limits were reached, so the test proves they bind rather than that nothing ran.
    expect(worst.total).toBeGreaterThanOrEqual(5);
    const counts = await stores[0]!.countByStatus({ scope: { kind: 'global' } });
    expect(counts).toMatchObject({ SUCCESS: 3 * perType, QUEUED: perType, RUNNING: 0 });
    const attempts = await database.query('SELECT COUNT(*) AS n, COUNT(DISTINCT task_id) AS tasks FROM system_async_task_attempt');
    expect(attempts[0]).toMatchObject({ n: 3 * perType, tasks: 3 * perType });
  });

  it('applies a policy change on the very next claim', async () => {
    await database.clean();
    await stores[0]!.insertTasks({ tasks: Array.from({ length: 10 }, () => newTask({ taskType: 'alpha' })) });
    await database.query(
      "INSERT INTO system_async_task_policy (policy_key, task_type, max_concurrency, enabled, update_time) VALUES ('TYPE:alpha', 'alpha', 0, 1, NOW(3))",
    );
    expect(await stores[1]!.claimTasks(claimParams({ limit: 10 }))).toHaveLength(0);
    await database.query("UPDATE system_async_task_policy SET max_concurrency = 3 WHERE policy_key = 'TYPE:alpha'");
    expect(await stores[2]!.claimTasks(claimParams({ limit: 10 }))).toHaveLength(3);
    await database.query("UPDATE system_async_task_policy SET enabled = 0 WHERE policy_key = 'TYPE:alpha'");
    await database.query("UPDATE system_async_task_policy SET max_concurrency = 10 WHERE policy_key = 'TYPE:alpha'");
    expect(await stores[3]!.claimTasks(claimParams({ limit: 10 }))).toHaveLength(0);
    await database.query("INSERT INTO system_async_task_policy (policy_key, max_concurrency, enabled, update_time) VALUES ('GLOBAL', NULL, 0, NOW(3))");
    await database.query("UPDATE system_async_task_policy SET enabled = 1 WHERE policy_key = 'TYPE:alpha'");
    expect(await stores[3]!.claimTasks(claimParams({ limit: 10 }))).toHaveLength(0);
    await database.query("UPDATE system_async_task_policy SET enabled = 1 WHERE policy_key = 'GLOBAL'");
    expect(await stores[3]!.claimTasks(claimParams({ limit: 10 }))).toHaveLength(7);
  });
});
