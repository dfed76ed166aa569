/**
 * LISTEN/NOTIFY wake-ups, the listener's reconnect after its backend is
 * terminated, the pool surviving terminated connections, an unreachable
 * server as a StoreError, and options validated at the edge.
 */
import pg from 'pg';
import { beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { ErrorCode, InvalidOptionsError, StoreError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { applicationName } from '../../src/store/postgres/options.js';
import { PostgresStore, quoteIdent } from '../../src/store/postgres/index.js';
import type { StoreEvent } from '../../src/store/types.js';
import { PG_URL, postgresAvailable, sharedPostgresStore, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-connections.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: notifications and connections', () => {
  const shared = sharedPostgresStore(3);
  let schema: TestSchema;
  let store: PostgresStore;
  const G = Scope.global();
  beforeAll(() => {
    ({ store, schema } = shared());
  });

  const backends = async (role: 'pool' | 'listen'): Promise<number[]> =>
    (await schema.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName(role, schema.name)])).map(
      (row) => row.pid,
    );

  it('wakes subscribers with one event per submit batch, naming its types, and with cancel requests by id', async () => {
    const events: StoreEvent[] = [];
    const off = store.subscribe((event) => events.push(event));
    await waitFor(() => store.listening, 'the listener to connect');
    await waitFor(() => events.length > 0, 'the catch-up event after LISTEN');
    events.length = 0;
    const batch = [...Array.from({ length: 50 }, () => newTask({ taskType: 'n-a' })), ...Array.from({ length: 50 }, () => newTask({ taskType: 'n-b' }))];
    await store.insertTasks({ tasks: batch });
    const [claimed] = await store.claimTasks(claimParams({ taskTypes: ['n-a'], limit: 1 }));
    await store.changeStatus({ ids: [claimed!.id], scope: G, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
    await waitFor(() => events.some((e) => e.kind === 'cancelRequested'), 'the cancel event');
    const submitted = events.filter((e) => e.kind === 'submitted');
    expect(submitted).toHaveLength(1);
    expect([...(submitted[0] as { taskTypes: readonly string[] }).taskTypes].sort()).toEqual(['n-a', 'n-b']);
    expect(events.find((e) => e.kind === 'cancelRequested')).toEqual({ kind: 'cancelRequested', taskIds: [claimed!.id] });
    await store.finishAttempts({ outcomes: [{ kind: 'CANCELLED', lease: leaseOf(claimed!), progress: null }] });
    off();
  });

  it('wakes everyone when the batch names more types than a NOTIFY payload holds', async () => {
    const events: StoreEvent[] = [];
    const off = store.subscribe((event) => events.push(event));
    await waitFor(() => store.listening, 'the listener to connect');
    events.length = 0;
    const types = Array.from({ length: 40 }, (_, i) => `${'t'.repeat(300)}-${i}`); // ~12 kB of names
    await store.insertTasks({ tasks: types.map((taskType) => newTask({ taskType })) });
    await waitFor(() => events.some((e) => e.kind === 'submitted'), 'the wildcard event');
    expect(events.filter((e) => e.kind === 'submitted')).toEqual([{ kind: 'submitted', taskTypes: [] }]);
    off();
  });

  it('reconnects the listener after pg_terminate_backend, wakes everyone, and hears new submits', async () => {
    const events: StoreEvent[] = [];
    const off = store.subscribe((event) => events.push(event));
    await waitFor(() => store.listening, 'the listener to connect');
    const [before] = await backends('listen');
    expect(before).toBeDefined();
    events.length = 0;
    await schema.query('SELECT pg_terminate_backend($1)', [before]);
    await waitFor(
      async () => {
        const now = await backends('listen');
        return store.listening && now.length === 1 && now[0] !== before;
      },
      'a new LISTEN connection',
      15_000,
    );
    // the catch-up wake-up for whatever was missed while away
    await waitFor(() => events.some((e) => e.kind === 'submitted' && e.taskTypes.length === 0), 'the catch-up event');
    await store.insertTasks({ tasks: [newTask({ taskType: 'after-reconnect' })] });
    await waitFor(() => events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('after-reconnect')), 'a submit after reconnecting');
    off();
  }, 40_000);

  it('carries on after its pooled connections are terminated', async () => {
    await store.countByStatus({ scope: G }); // make sure the pool has connections
    const pids = await backends('pool');
    expect(pids.length).toBeGreaterThan(0);
    await schema.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
    // The first statements may meet a dead connection: a StoreError, never a crash. Then it works again.
    await waitFor(async () => {
      try {
        await store.insertTasks({ tasks: [newTask({ taskType: 'after-terminate' })] });
        return true;
      } catch (error) {
        expect(error).toBeInstanceOf(StoreError);
        return false;
      }
    }, 'a submit on fresh connections');
    expect((await store.countByStatus({ scope: G, taskType: 'after-terminate' })).QUEUED).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('concurrent identical idempotent submits from separate stores create one task', async () => {
    const stores = Array.from({ length: 4 }, () => new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 }));
    try {
      const results = await Promise.all(
        stores.flatMap((s) => [1, 2].map(() => s.insertTasks({ tasks: [newTask({ taskType: 'idem-race', owner: 'o', idempotencyKey: 'same' })] }))),
      );
      const flat = results.flat();
      expect(flat.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(flat.map((r) => r.task.id)).size).toBe(1);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('turns an unreachable server into a StoreError with the driver error as cause', async () => {
    const dead = new PostgresStore({ connectionString: 'postgres://postgres@127.0.0.1:1/none', schema: 'nowhere', poolSize: 1 });
    try {
      const error = await dead.claimTasks(claimParams()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreError);
      expect((error as StoreError).code).toBe(ErrorCode.STORE_UNAVAILABLE);
      expect((error as StoreError).cause).toBeInstanceOf(Error);
      await expect(dead.migrate()).rejects.toBeInstanceOf(StoreError);
    } finally {
      await dead.close();
    }
  });

  it('validates options at construction, naming the field', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ schema: 'x"; DROP SCHEMA public; --' }, 'schema'],
      [{ schema: '1abc' }, 'schema'],
      [{ schema: 'a'.repeat(64) }, 'schema'],
      [{ poolSize: 0 }, 'poolSize'],
      [{ poolSize: 1.5 }, 'poolSize'],
      [{ clock: () => 0 }, 'clock'],
      [{ connectionString: '' }, 'connectionString'],
      [{ pool: new pg.Pool({ connectionString: PG_URL }), connectionString: PG_URL }, 'pool'],
      [{ pool: new pg.Pool({ connectionString: PG_URL }), poolSize: 3 }, 'poolSize'],
      [{ pool: {} }, 'pool'],
      [{ scheme: 'typo' }, 'scheme'],
    ];
    for (const [options, field] of bad) {
      let error: unknown;
      try {
        new PostgresStore(options as never);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(Object.keys(options))).toBeInstanceOf(InvalidOptionsError);
      expect((error as InvalidOptionsError).field).toBe(field);
    }
    for (const [options] of bad) if (options.pool instanceof pg.Pool) void options.pool.end();
    expect(quoteIdent('MixedCase')).toBe('"MixedCase"');
    expect(quoteIdent('we"ird')).toBe('"we""ird"');
  });

  it('works on a pool you own and leaves it open on close()', async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    const mine = new PostgresStore({ pool, schema: schema.name });
    await mine.insertTasks({ tasks: [newTask({ taskType: 'own-pool' })] });
    await mine.close();
    expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    await pool.end();
  });
});
