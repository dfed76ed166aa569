/**
 * Writers racing on the same rows: a worker's heartbeat and its outcome
 * writes run on separate connections at once. Every fenced write by the
 * rightful lease holder must apply (a renewal committing between another
 * statement's snapshot and its row lock must not make that statement miss
 * the row), and the two must never deadlock.
 */
import { beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AttemptOutcome } from '../../src/store/types.js';
import { postgresAvailable, sharedPostgresStore } from '../helpers/postgres.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-races.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: heartbeats racing outcome writes', () => {
  const shared = sharedPostgresStore(4);
  let store: PostgresStore;
  beforeAll(() => {
    ({ store } = shared());
  });

  it('every outcome of the lease holder applies while renewals hammer the same rows', async () => {
    const total = 240;
    await store.insertTasks({ tasks: Array.from({ length: total }, () => newTask({ taskType: 'race' })) });
    const claimed = await store.claimTasks(claimParams({ taskTypes: ['race'], limit: total }));
    expect(claimed).toHaveLength(total);
    const leases = claimed.map(leaseOf);
    let finishing = true;
    let renewals = 0;
    const heartbeats = [0, 1].map(async () => {
      while (finishing) {
        // reversed order on purpose: the store must lock in one order whatever it is given
        await store.renewLeases({ leases: [...leases].reverse(), leaseMs: 30_000 });
        renewals += 1;
      }
    });
    const results: boolean[] = [];
    for (let i = 0; i < total; i += 20) {
      const batch = claimed.slice(i, i + 20);
      const outcomes: AttemptOutcome[] = batch.map((task, n) =>
        n % 3 === 0
          ? {
              kind: 'RETRY',
              lease: leaseOf(task),
              failure: { errorCode: 'E', message: 'm', traceId: null, retryable: true },
              retryDelayMs: 60_000,
              progress: null,
            }
          : { kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: JSON.stringify(n), progress: null },
      );
      results.push(...(await store.finishAttempts({ outcomes })).applied);
    }
    finishing = false;
    await Promise.all(heartbeats);
    expect(renewals).toBeGreaterThan(0);
    expect(results.filter((r) => !r)).toHaveLength(0);
    const counts = await store.countByStatus({ scope: Scope.global(), taskType: 'race' });
    expect(counts.SUCCESS + counts.RETRY_WAIT).toBe(total);
    expect(counts.RUNNING).toBe(0);
  }, 60_000);
});
