/**
 * finishAndClaim on MySQL/MariaDB: outcomes and the next claim in one
 * transaction (the shared cases: finish-claim-suite.ts), and the limits kept
 * while several workers claim along at once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import type { AttemptOutcome } from '../../src/store/types.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { finishAndClaimCases } from './finish-claim-suite.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-finish-claim.test.ts');

const success = (task: Task): AttemptOutcome => ({ kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: null, progress: null });

describeOnServer(available, 'MySQL/MariaDB', 'MySQL store: outcomes and the next claim in one transaction', () => {
  let database: TestDatabase;
  const stores: MysqlStore[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 4; i++) stores.push(new MysqlStore({ uri: database.uri, poolSize: 2, leasePoolSize: 2 }));
    await Promise.all(stores.map((store) => store.migrate()));
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await database?.drop();
  });

  finishAndClaimCases(() => stores[0]!);

  it('never exceeds the limits while workers claim along with their outcomes', async () => {
    await database.clean();
    const total = 240;
    await stores[0]!.insertTasks({ tasks: Array.from({ length: total }, () => newTask({ taskType: 'beta' })) });
    await database.query("INSERT INTO system_async_task_policy (policy_key, max_concurrency, enabled, update_time) VALUES ('GLOBAL', 5, 1, NOW(3))");
    const params = claimParams({ taskTypes: ['beta'], limit: 4, typeConcurrency: 3 });
    let worst = 0;
    let samples = 0;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        const rows = await database.query(`SELECT COUNT(*) AS n FROM system_async_task WHERE status IN ('RUNNING','CANCEL_REQUESTED')`);
        worst = Math.max(worst, Number(rows[0]!.n));
        samples += 1;
      }
    })();
    const worker = async (store: MysqlStore, index: number): Promise<number> => {
      const claim = { ...params, workerId: `w${index}` };
      let held = await store.claimTasks(claim);
      let finished = 0;
      let idle = 0;
      while (idle < 3) {
        await new Promise((resolve) => setImmediate(resolve));
        const result = held.length > 0 ? await store.finishAndClaim({ outcomes: held.map(success), claim }) : null;
        if (result) {
          expect(result.applied.every(Boolean)).toBe(true);
          finished += held.length;
        }
        held = result ? result.claimed : await store.claimTasks(claim);
        idle = held.length === 0 ? idle + 1 : 0;
      }
      return finished;
    };
    const finished = await Promise.all(stores.map((store, index) => worker(store, index)));
    done = true;
    await sampler;
    expect(finished.reduce((a, b) => a + b, 0)).toBe(total);
    expect(samples).toBeGreaterThan(10);
    expect(worst).toBeLessThanOrEqual(3); // the type's 3 binds before the global 5
    expect(worst).toBeGreaterThanOrEqual(2);
    expect(await stores[0]!.countByStatus({ scope: Scope.global() })).toMatchObject({ SUCCESS: total, RUNNING: 0, QUEUED: 0 });
    const attempts = await database.query('SELECT COUNT(*) AS n, COUNT(DISTINCT task_id) AS tasks FROM system_async_task_attempt');
    expect(attempts[0]).toMatchObject({ n: total, tasks: total });
  });
});
