/**
 * The PostgreSQL claim's locks per limit scope (claim.ts, "Locks per limit
 * scope"): a claim that no limit can bind takes the schema's lock shared and
 * one of its slots, so claims of unrelated types — and claims of one type
 * far from its limit — never wait on each other; a claim near a limit takes
 * that scope's lock alone. Deterministic: one claim is held open inside a
 * transaction of the test's own, and the other either completes beside it or
 * is seen waiting on an advisory lock (pg_locks) until it commits. Then the
 * limits still hold with more claimers than slots, while they churn.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { CLAIM_SLOTS, claimArgs, SLOT_TASKS } from '../../src/store/postgres/claim.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { AttemptOutcome, ClaimParams } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, sampleLeases, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-claim-locks.test.ts');
const RESERVE = CLAIM_SLOTS * SLOT_TASKS;
const CLAIMERS = CLAIM_SLOTS + 4;

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: claim locks per limit scope', () => {
  let schema: TestSchema;
  let stores: PostgresStore[];
  let holder: pg.Client;

  beforeAll(async () => {
    schema = await createTestSchema();
    stores = Array.from({ length: CLAIMERS }, () => new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 }));
    await stores[0]!.migrate();
    holder = new pg.Client({ connectionString: PG_URL });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await Promise.all((stores ?? []).map((s) => s.close()));
    await schema?.drop();
  });

  /** A claim inside the test's own transaction: its locks stay held until `commit`. */
  async function holdClaim(params: ClaimParams): Promise<{ claimed: number; commit(): Promise<void> }> {
    await holder.query('BEGIN');
    const args = claimArgs(params, false);
    const placeholders = args.map((_, i) => `$${i + 1}`).join(', ');
    const result = await holder.query(`SELECT id FROM "${schema.name}".tasklease_claim(${placeholders})`, args);
    return { claimed: result.rowCount ?? 0, commit: async () => void (await holder.query('COMMIT')) };
  }

  const advisoryWaiters = async (): Promise<number> =>
    (await schema.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"))[0]!.n;

  const big = { globalConcurrency: 100_000, typeConcurrency: 100_000, limit: 2 };

  it('under limits that cannot bind, a claim held open keeps no other claim waiting: not of another type, not of its own', async () => {
    await schema.clean();
    await stores[0]!.insertTasks({ tasks: ['la', 'la', 'la', 'lb', 'lb'].map((taskType) => newTask({ taskType })) });
    const held = await holdClaim(claimParams({ workerId: 'holder', taskTypes: ['la'], ...big }));
    try {
      expect(held.claimed).toBe(2);
      expect(await stores[1]!.claimTasks(claimParams({ workerId: 'other', taskTypes: ['lb'], ...big }))).toHaveLength(2);
      // The holder's rows are locked (SKIP LOCKED passes them): the third la task is the one left.
      expect(await stores[2]!.claimTasks(claimParams({ workerId: 'same', taskTypes: ['la'], ...big }))).toHaveLength(1);
    } finally {
      await held.commit();
    }
  });

  it('near a limit, a claim of that type waits for the one held open, and a claim of another type does not', async () => {
    await schema.clean();
    await stores[0]!.insertTasks({ tasks: ['la', 'la', 'la', 'lb', 'lb'].map((taskType) => newTask({ taskType })) });
    // la's limit (5) can bind: its claims take la's lock alone. The global limit cannot.
    const near = { ...big, typeConcurrency: 5 };
    const held = await holdClaim(claimParams({ workerId: 'holder', taskTypes: ['la'], ...near }));
    let waiting: Promise<unknown> | null = null;
    try {
      expect(held.claimed).toBe(2);
      expect(await stores[1]!.claimTasks(claimParams({ workerId: 'other', taskTypes: ['lb'], ...near }))).toHaveLength(2);
      waiting = stores[2]!.claimTasks(claimParams({ workerId: 'same', taskTypes: ['la'], ...near }));
      await waitFor(async () => (await advisoryWaiters()) === 1, 'the claim of la to wait on la’s lock');
    } finally {
      await held.commit();
    }
    expect(await waiting).toHaveLength(1);
  });

  it('under the seed’s limits (global 20), claims are serialized as before: even another type waits', async () => {
    await schema.clean();
    await stores[0]!.insertTasks({ tasks: ['la', 'lb'].map((taskType) => newTask({ taskType })) });
    const seed = { globalConcurrency: 20, typeConcurrency: 5, limit: 2 };
    const held = await holdClaim(claimParams({ workerId: 'holder', taskTypes: ['la'], ...seed }));
    let waiting: Promise<unknown> | null = null;
    try {
      waiting = stores[1]!.claimTasks(claimParams({ workerId: 'other', taskTypes: ['lb'], ...seed }));
      await waitFor(async () => (await advisoryWaiters()) === 1, 'the claim of lb to wait on the schema’s lock');
    } finally {
      await held.commit();
    }
    expect(await waiting).toHaveLength(1);
  });

  it(`with ${CLAIMERS} claimers (more than the ${CLAIM_SLOTS} slots) churning across the edge where limits begin to bind, a sampler never sees more leases than the caps`, async () => {
    await schema.clean();
    const store = stores[0]!;
    // Side by side while fewer than 16 (global) or 28 (la) are leased; alone beyond, up to the caps.
    const globalCap = RESERVE + SLOT_TASKS;
    const laCap = RESERVE + 28;
    await store.savePolicy({
      policy: { policyKey: 'GLOBAL', taskType: null, maxConcurrency: globalCap, maxAttempts: null, retryBaseDelayMs: null, enabled: true },
    });
    await store.savePolicy({
      policy: { policyKey: 'TYPE:la', taskType: 'la', maxConcurrency: laCap, maxAttempts: null, retryBaseDelayMs: null, enabled: true },
    });
    const total = 3000;
    await store.insertTasks({ tasks: Array.from({ length: total }, (_, i) => newTask({ taskType: i % 3 === 0 ? 'lb' : 'la' })) });
    const sampler = sampleLeases(schema, { global: globalCap, perType: { la: laCap } });
    let completed = 0;
    await Promise.all(
      stores.map(async (s, i) => {
        // Each claimer keeps what it claims for a few rounds, so that the leases pile up to the caps.
        const kept: AttemptOutcome[][] = [];
        while (completed < total) {
          const tasks = await s.claimTasks(claimParams({ workerId: `c${i}`, taskTypes: ['la', 'lb'], limit: i % 2 === 0 ? SLOT_TASKS : 4 }));
          kept.push(tasks.map((task) => ({ kind: 'SUCCESS', lease: leaseOf(task), artifactId: null, resultJson: null, progress: null })));
          if (kept.length < 3 && tasks.length > 0) continue;
          const outcomes = kept.splice(0).flat();
          if (outcomes.length === 0) {
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          // Read after the await: `completed += await …` would add to the value read before it (lost updates).
          const applied = (await s.finishAttempts({ outcomes })).applied.filter(Boolean).length;
          completed += applied;
        }
      }),
    );
    const { violations, samples, highest } = await sampler.stop();
    expect(violations).toEqual([]);
    expect(samples).toBeGreaterThan(10);
    // The caps were reached: the edge was crossed both ways.
    expect(highest).toBeGreaterThan(SLOT_TASKS);
    expect((await store.countByStatus({ scope: Scope.global() })).SUCCESS).toBe(total);
  }, 120_000);
});
