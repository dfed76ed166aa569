/**
 * A claim made alone commits without waiting for its WAL flush; outcomes,
 * and a claim that rides in their transaction, commit synchronously
 * (postgres/claim.ts). What makes that safe is the lease token, tested on
 * every store by the conformance suite; here: the claim function turns
 * synchronous_commit off for its own transaction only when asked, and the
 * store asks exactly on the claim-only path. And the renewal behind ctx.fence
 * (worker/fence.ts) turns it on for its own, which flushes the claim with it.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { claimArgs } from '../../src/store/postgres/claim.js';
import { createContext } from '../../src/store/postgres/connection.js';
import { renewSql } from '../../src/store/postgres/leases.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-async-claim.test.ts');

interface Call {
  name: string | undefined;
  values: unknown[];
}

/** A pool that records the named statements the store sends through it. */
function recordingPool(calls: Call[]): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const query = pool.query.bind(pool) as (config: unknown, values?: unknown) => Promise<unknown>;
  (pool as unknown as { query: (config: unknown, values?: unknown) => Promise<unknown> }).query = (config, values) => {
    if (typeof config === 'object' && config !== null && 'text' in config) {
      const { name, values: params } = config as { name?: string; values?: unknown[] };
      calls.push({ name, values: params ?? [] });
    }
    return query(config, values);
  };
  return pool;
}

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: claims alone commit without their WAL flush, outcomes never', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  const calls: Call[] = [];
  let pool: pg.Pool;
  let leasePool: pg.Pool;

  beforeAll(async () => {
    schema = await createTestSchema();
    pool = recordingPool(calls);
    leasePool = recordingPool(calls);
    store = new PostgresStore({ pool, leasePool, schema: schema.name });
    await store.migrate();
  });
  afterAll(async () => {
    await store?.close();
    await pool?.end();
    await leasePool?.end();
    await schema?.drop();
  });

  /** synchronous_commit as the claim function leaves it in its transaction. */
  async function commitModeAfterClaim(asyncCommit: boolean): Promise<string> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query('BEGIN');
      const args = claimArgs(claimParams({ limit: 0 }), asyncCommit);
      const placeholders = args.map((_, i) => `$${i + 1}`).join(', ');
      await client.query(`SELECT * FROM "${schema.name}".tasklease_claim(${placeholders})`, args);
      const mode = (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
      await client.query('ROLLBACK');
      // Local to that transaction: the connection is back to its own setting.
      expect((await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
      return mode;
    } finally {
      await client.end();
    }
  }

  it('the claim function turns synchronous_commit off for its transaction only when asked', async () => {
    expect(await commitModeAfterClaim(true)).toBe('off');
    expect(await commitModeAfterClaim(false)).toBe('on');
  });

  it('the store asks on a claim alone, never on a claim after outcomes; each claim draws a new token', async () => {
    await store.insertTasks({ tasks: [newTask(), newTask(), newTask()] });
    calls.length = 0;
    const [a] = await store.claimTasks(claimParams({ limit: 1 }));
    const claimCall = calls.find((c) => c.name?.endsWith('claim') && !c.name.endsWith('finish_claim'));
    expect(claimCall?.values.at(-1)).toBe(true);
    expect(claimCall?.values.at(-2)).toBe(a!.leaseToken);
    calls.length = 0;
    const next = await store.finishAndClaim({
      outcomes: [{ kind: 'SUCCESS', lease: leaseOf(a!), artifactId: null, resultJson: null, progress: null }],
      claim: claimParams({ limit: 1 }),
    });
    expect(next.applied).toEqual([true]);
    const combined = calls.find((c) => c.name?.endsWith('finish_claim'));
    expect(combined?.values.at(-1)).toBe(false);
    expect(next.claimed[0]!.leaseToken).toBe(combined?.values.at(-2));
    expect(next.claimed[0]!.leaseToken).not.toBe(a!.leaseToken);
  });

  it('the previous release\u2019s claim signature still claims (rolling upgrade), with a token of its own', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'old' })] });
    const rows = await schema.query<{ lease_owner: string; lease_token: string }>(
      `SELECT lease_owner, lease_token FROM "${schema.name}".tasklease_claim($1, $2, 1, 30000, 100, 100, NULL, NULL, false)`,
      ['old-worker', ['old']],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.lease_owner).toBe('old-worker');
    expect(rows[0]!.lease_token).toMatch(/^[0-9a-f]{32}$/);
  });

  it('an outcome write inside the caller\u2019s transaction leaves its settings as they were (the plan mode is the function\u2019s own)', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'tx' })] });
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['tx'], limit: 1 }));
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL plan_cache_mode = force_custom_plan');
      const written = await store.finishAttempts({
        outcomes: [{ kind: 'SUCCESS', lease: leaseOf(task!), artifactId: null, resultJson: null, progress: null }],
        transaction: client,
      });
      expect(written.applied).toEqual([true]);
      const mode = await client.query<{ plan_cache_mode: string; synchronous_commit: string }>(
        "SELECT current_setting('plan_cache_mode') AS plan_cache_mode, current_setting('synchronous_commit') AS synchronous_commit",
      );
      expect(mode.rows[0]).toEqual({ plan_cache_mode: 'force_custom_plan', synchronous_commit: 'on' });
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
  });

  /** synchronous_commit at the end of a renewal's transaction, on a session whose own setting is `session`. */
  async function commitModeAfterRenewal(durable: boolean, session: string): Promise<{ mode: string; renewed: number }> {
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['renewed'], limit: 1 }));
    const client = new pg.Client({ connectionString: PG_URL, options: `-c synchronous_commit=${session}` });
    await client.connect();
    try {
      await client.query('BEGIN');
      const lease = leaseOf(task!);
      const ctx = createContext(pool, leasePool, schema.name);
      const renewed = await client.query(renewSql(ctx, durable), [[lease.taskId], [lease.workerId], [lease.attempt], [lease.token], 30_000]);
      const mode = (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
      await client.query('ROLLBACK');
      return { mode, renewed: renewed.rowCount ?? 0 };
    } finally {
      await client.end();
    }
  }

  it('a durable renewal (ctx.fence) commits waiting for its flush whatever the session says; a plain one keeps the session’s mode', async () => {
    await store.insertTasks({ tasks: Array.from({ length: 5 }, () => newTask({ taskType: 'renewed' })) });
    expect(await commitModeAfterRenewal(true, 'off')).toEqual({ mode: 'on', renewed: 1 });
    expect(await commitModeAfterRenewal(true, 'local')).toEqual({ mode: 'on', renewed: 1 });
    // Stricter than on is kept (synchronous replicas: the operator's choice).
    expect(await commitModeAfterRenewal(true, 'remote_apply')).toEqual({ mode: 'remote_apply', renewed: 1 });
    expect(await commitModeAfterRenewal(false, 'off')).toEqual({ mode: 'off', renewed: 1 });
    // Through the store: the durable renewal renews like any other.
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['renewed'], limit: 1 }));
    expect(await store.renewLeases({ leases: [leaseOf(task!)], leaseMs: 30_000, durable: true })).toEqual({
      renewed: [task!.id],
      cancelRequested: [],
      lost: [],
    });
  });
});
