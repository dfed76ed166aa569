/**
 * Submitting inside the caller's own transaction: the rows and the NOTIFY
 * share its fate. Rolled back → nothing; not yet committed → invisible to
 * every claimer; committed → claimable and announced.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { ValidationError } from '../../src/core/errors.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { StoreEvent } from '../../src/store/types.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-transactions.test.ts');

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: submit inside the caller’s transaction', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  let callerPool: pg.Pool;
  const G = Scope.global();

  beforeAll(async () => {
    schema = await createTestSchema();
    store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 3 });
    await store.migrate();
    callerPool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  });
  afterAll(async () => {
    await store?.close();
    await callerPool?.end();
    await schema?.drop();
  });

  it('rolled back: no task and no wake-up', async () => {
    const events: StoreEvent[] = [];
    const off = store.subscribe((event) => events.push(event));
    await waitFor(() => store.listening, 'the listener to connect');
    events.length = 0;
    const client = await callerPool.connect();
    try {
      await client.query('BEGIN');
      const [result] = await store.insertTasks({ tasks: [newTask({ taskType: 'tx-rollback' })], transaction: client });
      expect(result!.created).toBe(true);
      // visible inside the transaction…
      expect((await client.query(`SELECT count(*)::int AS n FROM "${schema.name}".system_async_task`)).rows[0].n).toBe(1);
      await client.query('ROLLBACK');
      // …and gone after: nothing half-written
      expect(await store.getTask({ id: result!.task.id, scope: G })).toBeNull();
    } finally {
      client.release();
    }
    // A NOTIFY sent after the rolled-back one proves ordering: if the first had been delivered it would arrive before this.
    await store.insertTasks({ tasks: [newTask({ taskType: 'tx-marker' })] });
    await waitFor(() => events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('tx-marker')), 'the marker submit');
    expect(events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('tx-rollback'))).toBe(false);
    off();
  });

  it('uncommitted: never claimed; committed: claimable and announced', async () => {
    const events: StoreEvent[] = [];
    const off = store.subscribe((event) => events.push(event));
    await waitFor(() => store.listening, 'the listener to connect');
    const client = await callerPool.connect();
    try {
      await client.query('BEGIN');
      const tasks = [newTask({ taskType: 'tx-commit' }), newTask({ taskType: 'tx-commit' })];
      await store.insertTasks({ tasks, transaction: client });
      // Several claimers on the store's own connections see nothing while the caller's transaction is open.
      const claims = await Promise.all([1, 2, 3].map((n) => store.claimTasks(claimParams({ workerId: `w${n}`, taskTypes: ['tx-commit'] }))));
      expect(claims.flat()).toHaveLength(0);
      expect((await store.countByStatus({ scope: G, taskType: 'tx-commit' })).QUEUED).toBe(0);
      expect(events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('tx-commit'))).toBe(false);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await waitFor(() => events.some((e) => e.kind === 'submitted' && e.taskTypes.includes('tx-commit')), 'the NOTIFY delivered on commit');
    const claimed = await store.claimTasks(claimParams({ taskTypes: ['tx-commit'] }));
    expect(claimed).toHaveLength(2);
    off();
  });

  it('idempotent submits inside a transaction see their own uncommitted row', async () => {
    const client = await callerPool.connect();
    try {
      await client.query('BEGIN');
      const first = await store.insertTasks({ tasks: [newTask({ taskType: 'tx-idem', idempotencyKey: 'k' })], transaction: client });
      const again = await store.insertTasks({ tasks: [newTask({ taskType: 'tx-idem', idempotencyKey: 'k' })], transaction: client });
      expect(again[0]!.created).toBe(false);
      expect(again[0]!.task.id).toBe(first[0]!.task.id);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect((await store.countByStatus({ scope: G, taskType: 'tx-idem' })).QUEUED).toBe(0);
  });

  it('refuses a pool or a non-client as the transaction', async () => {
    await expect(store.insertTasks({ tasks: [newTask()], transaction: callerPool as never })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.insertTasks({ tasks: [newTask()], transaction: { begin: true } as never })).rejects.toBeInstanceOf(ValidationError);
  });
});
