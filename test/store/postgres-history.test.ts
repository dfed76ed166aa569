/**
 * Partitioned history (historyMoveAfterMs, src/store/postgres/history.ts):
 * the cleanup moves finished tasks into day partitions and retention drops
 * whole days; moved tasks still read as before (get, list, attempts,
 * failures, actions, diagnose). Finish times are set in the past by SQL: the
 * database clock decides what is old, so no test waits for time to pass.
 */
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { cleanup } from '../../src/client/cleanup.js';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { InsertTaskResult } from '../../src/store/types.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { claimParams, FAILURE, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-history.test.ts');
const HOUR = 3_600_000;

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: partitioned history', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  const table = (name: string): string => `"${schema.name}".${name}`;

  beforeAll(async () => {
    schema = await createTestSchema();
    store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2, historyMoveAfterMs: HOUR });
    await store.migrate();
  });
  afterAll(async () => {
    await store?.close();
    await schema?.drop();
  });
  beforeEach(async () => {
    await schema.clean();
    for (const { name } of await partitions()) await schema.query(`DROP TABLE ${table(name)}`);
  });

  async function partitions(): Promise<{ name: string }[]> {
    return schema.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1`,
      [schema.name],
    );
  }

  async function insert(): Promise<[InsertTaskResult]> {
    const [inserted] = await store.insertTasks({ tasks: [newTask()] });
    return [inserted!];
  }

  /** The days of the task history's partitions (YYYYMMDD). */
  async function days(): Promise<string[]> {
    return (await partitions()).filter(({ name }) => /^system_async_task_history_\d{8}$/.test(name)).map(({ name }) => name.slice(-8));
  }

  /** The UTC days (YYYYMMDD) from `fromHoursAgo` to `toHoursAgo` by the database clock. */
  async function utcDays(fromHoursAgo: number, toHoursAgo: number): Promise<string[]> {
    const rows = await schema.query<{ day: string }>(
      `SELECT to_char(d, 'YYYYMMDD') AS day FROM generate_series(((now() - $1 * interval '1 hour') AT TIME ZONE 'UTC')::date,
         ((now() - $2 * interval '1 hour') AT TIME ZONE 'UTC')::date, interval '1 day') d`,
      [fromHoursAgo, toHoursAgo],
    );
    return rows.map((row) => row.day);
  }

  /** A task run to `outcome`, its finish (and its attempt's) moved `hoursAgo` into the past. */
  async function finished(hoursAgo: number, outcome: 'SUCCESS' | 'FAILED' = 'SUCCESS'): Promise<string> {
    const [{ task }] = await insert();
    const [claimed] = await store.claimTasks(claimParams());
    expect(claimed!.id).toBe(task.id);
    const lease = leaseOf(claimed!);
    await store.finishAttempts({
      outcomes: [
        outcome === 'SUCCESS'
          ? { kind: 'SUCCESS', lease, artifactId: null, resultJson: '{"ok":true}', progress: null }
          : { kind: 'FAILED', lease, failure: { ...FAILURE, retryable: false }, progress: null },
      ],
    });
    const back = `now() - $2 * interval '1 hour'`;
    await schema.query(`UPDATE ${table('system_async_task')} SET finish_time = ${back}, update_time = ${back} WHERE id = $1`, [task.id, hoursAgo]);
    await schema.query(`UPDATE ${table('system_async_task_attempt')} SET finished_at = ${back} WHERE task_id = $1`, [task.id, hoursAgo]);
    return task.id;
  }

  it('has history tables with the live tables’ columns, in order (a move is INSERT … SELECT *)', async () => {
    const columns = async (name: string): Promise<string[]> =>
      (
        await schema.query<{ column_name: string }>(
          'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
          [schema.name, name],
        )
      ).map((row) => row.column_name);
    expect(await columns('system_async_task_history')).toEqual(await columns('system_async_task'));
    for (const name of ['attempt', 'failure', 'action']) {
      expect(await columns(`system_async_task_${name}_history`)).toEqual([...(await columns(`system_async_task_${name}`)), 'task_finish_time']);
    }
  });

  it('cleanup deletes what is past retention, moves what is older than historyMoveAfterMs, then drops old days only', async () => {
    const ancient = await finished(24 * 10);
    const older = await finished(24 * 5);
    const recent = await finished(24 * 2);
    const fresh = await finished(0.5);
    const [{ task: running }] = await insert();
    await store.claimTasks(claimParams());

    const first = await cleanup(store, { retentionDays: 7, batchSize: 500 });
    expect(first).toMatchObject({ tasks: 1, attempts: 1, tasksMoved: 2, historyPartitionsDropped: 0 });
    const live = await schema.query<{ id: string }>(`SELECT id FROM ${table('system_async_task')} ORDER BY id`);
    expect(live.map((row) => row.id)).toEqual([fresh, running.id].sort());
    // A batch's partitions: every day from its oldest finish to its newest, in each of the four tables.
    expect(await days()).toEqual(await utcDays(24 * 5, 24 * 2));
    expect(await store.getTask({ id: ancient, scope: Scope.global() })).toBeNull();

    const second = await cleanup(store, { retentionDays: 3, batchSize: 500 });
    expect(second).toMatchObject({ tasks: 1, attempts: 1, tasksMoved: 0 });
    const kept = await utcDays(24 * 3, 24 * 2); // the cut-off's day stays whole: retention drops whole days only
    expect(second.historyPartitionsDropped).toBe(4 * ((await utcDays(24 * 5, 24 * 2)).length - kept.length));
    expect(await store.getTask({ id: older, scope: Scope.global() })).toBeNull();
    expect(await store.listAttempts({ taskId: older })).toEqual([]);
    expect((await store.getTask({ id: recent, scope: Scope.global() }))?.status).toBe('SUCCESS');
    expect(await days()).toEqual(kept);
    expect((await partitions()).length).toBe(4 * kept.length);
    expect((await store.getTask({ id: running.id, scope: Scope.global() }))?.status).toBe('RUNNING');
    const leased = await store.listTasks({ scope: Scope.global(), status: ['RUNNING'], limit: 10 });
    expect(leased.tasks.map((task) => task.id)).toEqual([running.id]);
  });

  it('moves in batches, deleting what is already past retention: the cleanup goes on while a batch comes back full', async () => {
    await finished(24 * 10);
    const ids = [];
    for (let i = 0; i < 5; i += 1) ids.push(await finished(2));
    const batches: [number, number][] = [];
    const result = await cleanup(store, { retentionDays: 7, batchSize: 2, onBatch: (total) => batches.push([total.tasks, total.tasksMoved ?? 0]) });
    expect(result).toMatchObject({ tasks: 1, tasksMoved: 5 });
    expect(batches).toEqual([
      [1, 1],
      [1, 3],
      [1, 5],
      [1, 5],
    ]);
    const { tasks } = await store.listTasks({ scope: Scope.global(), limit: 10 });
    expect(tasks.map((task) => task.id)).toEqual([...ids].reverse());
  });

  it('a moved task reads as before: get, list, attempts, failures, actions, diagnose; its dead letter is archived', async () => {
    const failed = await finished(3, 'FAILED');
    const kept = await finished(0.1);
    const acted = `now() - interval '3 hours'`;
    await schema.query(
      `INSERT INTO ${table('system_async_task_action')} (task_id, action, from_status, to_status, actor, acted_at) VALUES ($1, 'PAUSE', 'QUEUED', 'PAUSED', 'ops', ${acted})`,
      [failed],
    );
    const before = {
      task: await store.getTask({ id: failed, scope: Scope.global() }),
      attempts: await store.listAttempts({ taskId: failed }),
      failures: await store.listFailures({ taskId: failed }),
      actions: await store.listTaskActions({ taskId: failed }),
    };
    expect(before.failures).toHaveLength(1);

    const result = await cleanup(store, { retentionDays: 7, batchSize: 100 });
    expect(result).toMatchObject({ tasksMoved: 1, deadLettersArchived: 1 });
    expect(await schema.query(`SELECT 1 FROM ${table('system_async_task')} WHERE id = $1`, [failed])).toEqual([]);

    expect(await store.getTask({ id: failed, scope: Scope.global() })).toEqual(before.task);
    expect(await store.listAttempts({ taskId: failed })).toEqual(before.attempts);
    expect(await store.listFailures({ taskId: failed })).toEqual(before.failures);
    expect(await store.listTaskActions({ taskId: failed })).toEqual(before.actions);
    const page = await store.listTasks({ scope: Scope.global(), limit: 1 });
    expect(page.tasks.map((task) => task.id)).toEqual([kept]);
    const next = await store.listTasks({ scope: Scope.global(), limit: 1, cursor: page.nextCursor, status: ['FAILED'] });
    expect(next.tasks.map((task) => task.id)).toEqual([failed]);

    const client = createClient({ store, tasks: [defineTask({ type: 'alpha' })] });
    const diagnosis = await client.diagnose(failed);
    expect(diagnosis.task.id).toBe(failed);
    expect(diagnosis.attempts).toHaveLength(1);
    expect(diagnosis.failures[0]?.errorCode).toBe(FAILURE.errorCode);
    const [letter] = await store.listDeadLetters({ scope: Scope.global(), limit: 10 });
    expect(letter?.archivedAt).not.toBeNull();
  });

  it('a history read in progress neither blocks the partitions a move makes nor waits behind a drop for long', async () => {
    const older = await finished(24 * 5);
    const reader = new pg.Client({ connectionString: PG_URL });
    await reader.connect();
    try {
      // A read of the history held open: ACCESS SHARE on the parent until it commits.
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${table('system_async_task_history')}`);
      // The move attaches a new day (SHARE UPDATE EXCLUSIVE): it does not wait for the reader.
      expect(await cleanup(store, { retentionDays: 7, batchSize: 100 })).toMatchObject({ tasksMoved: 1 });
      await reader.query('COMMIT');
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${table('system_async_task_history')}`);
      // The drop needs ACCESS EXCLUSIVE: it gives up on the task history's day after its lock timeout, drops the rest.
      const blocked = await cleanup(store, { retentionDays: 3, batchSize: 100 });
      expect(blocked).toMatchObject({ tasks: 0, attempts: 1 });
      expect((await store.getTask({ id: older, scope: Scope.global() }))?.id).toBe(older);
      await reader.query('COMMIT');
      expect(await cleanup(store, { retentionDays: 3, batchSize: 100 })).toMatchObject({ tasks: 1, historyPartitionsDropped: 1 });
      expect(await store.getTask({ id: older, scope: Scope.global() })).toBeNull();
    } finally {
      await reader.end();
    }
  });

  it('refuses a historyMoveAfterMs that is not a non-negative integer', () => {
    expect(() => new PostgresStore({ connectionString: PG_URL, historyMoveAfterMs: -1 })).toThrow(InvalidOptionsError);
    expect(() => new PostgresStore({ connectionString: PG_URL, historyMoveAfterMs: 1.5 })).toThrow(InvalidOptionsError);
  });
});
