/**
 * Limits are invariants: many claimers on separate connections (separate
 * stores, as separate processes would be) claim at once, and the number of
 * leased rows never exceeds the global or per-type caps read from the policy
 * table — neither at rest nor while tasks churn.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AttemptOutcome } from '../../src/store/types.js';
import { createTestSchema, PG_URL, postgresAvailable, sampleLeases, type TestSchema } from '../helpers/postgres.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-limits.test.ts');
const CLAIMERS = 8;
const TYPES = ['la', 'lb', 'lc'];

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: limits hold under concurrent claimers', () => {
  let schema: TestSchema;
  let stores: PostgresStore[];

  beforeAll(async () => {
    schema = await createTestSchema();
    stores = Array.from({ length: CLAIMERS }, () => new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 }));
    await Promise.all(stores.map((s) => s.migrate()));
  });
  afterAll(async () => {
    await Promise.all((stores ?? []).map((s) => s.close()));
    await schema?.drop();
  });

  const leasedByType = async (): Promise<Record<string, number>> => stores[0]!.leasedCounts();

  it('concurrent claims fill the caps exactly, never beyond', async () => {
    await schema.clean();
    const store = stores[0]!;
    await store.savePolicy({ policy: { policyKey: 'GLOBAL', taskType: null, maxConcurrency: 7, maxAttempts: null, retryBaseDelayMs: null, enabled: true } });
    await store.savePolicy({ policy: { policyKey: 'TYPE:la', taskType: 'la', maxConcurrency: 3, maxAttempts: null, retryBaseDelayMs: null, enabled: true } });
    await store.savePolicy({ policy: { policyKey: 'TYPE:lc', taskType: 'lc', maxConcurrency: 5, maxAttempts: null, retryBaseDelayMs: null, enabled: false } });
    await store.insertTasks({ tasks: TYPES.flatMap((taskType) => Array.from({ length: 100 }, () => newTask({ taskType }))) });
    // Every claimer asks for far more than the caps allow, several times, all at once.
    const rounds = await Promise.all(
      stores.map(async (s, i) => {
        const got = [];
        for (let round = 0; round < 5; round += 1) {
          got.push(...(await s.claimTasks(claimParams({ workerId: `c${i}`, taskTypes: TYPES, limit: 50, globalConcurrency: 1000, typeConcurrency: 4 }))));
        }
        return got;
      }),
    );
    const claimed = rounds.flat();
    expect(claimed).toHaveLength(7); // global cap
    const byType = await leasedByType();
    expect(byType.la ?? 0).toBeLessThanOrEqual(3); // policy row
    expect(byType.lb ?? 0).toBeLessThanOrEqual(4); // worker default
    expect(byType.lc ?? 0).toBe(0); // disabled by policy
    expect((byType.la ?? 0) + (byType.lb ?? 0)).toBe(7);
  }, 30_000);

  it('while tasks churn, a sampler never sees more leases than the caps', async () => {
    await schema.clean();
    const store = stores[0]!;
    await store.savePolicy({ policy: { policyKey: 'GLOBAL', taskType: null, maxConcurrency: 5, maxAttempts: null, retryBaseDelayMs: null, enabled: true } });
    await store.savePolicy({ policy: { policyKey: 'TYPE:la', taskType: 'la', maxConcurrency: 3, maxAttempts: null, retryBaseDelayMs: null, enabled: true } });
    const total = 300;
    await store.insertTasks({ tasks: Array.from({ length: total }, (_, i) => newTask({ taskType: TYPES[i % 2]! })) });
    const sampler = sampleLeases(schema, { global: 5, perType: { la: 3, lb: 3 } });
    let completed = 0;
    await Promise.all(
      stores.map(async (s, i) => {
        while (completed < total) {
          const tasks = await s.claimTasks(claimParams({ workerId: `c${i}`, taskTypes: TYPES, limit: 10, globalConcurrency: 1000, typeConcurrency: 3 }));
          if (tasks.length === 0) {
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          const outcomes: AttemptOutcome[] = tasks.map((task) => ({
            kind: 'SUCCESS',
            lease: leaseOf(task),
            artifactId: null,
            resultJson: null,
            progress: null,
          }));
          const written = await s.finishAttempts({ outcomes });
          completed += written.applied.filter(Boolean).length;
        }
      }),
    );
    const { violations, samples } = await sampler.stop();
    expect(violations).toEqual([]);
    expect(samples).toBeGreaterThan(10);
    expect((await store.countByStatus({ scope: Scope.global() })).SUCCESS).toBe(total);
  }, 60_000);
});
