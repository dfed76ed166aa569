/**
 * Migration 16 turns the text ids of a populated schema into uuid in place:
 * every row keeps its id and its links (attempts, failures, dead letters,
 * operator actions, a schedule's last task, a waiter's mark), the store reads
 * and runs the migrated tasks, and a schema holding an id that is not a UUID
 * refuses the migration and is left exactly as it was.
 */
import { afterAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { uuidv7 } from '../../src/core/ids.js';
import { PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { claimParams, leaseOf } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-uuid-migration.test.ts');
const G = Scope.global();
const UUID_VERSION = 16;

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: migration 16 (uuid ids) on a populated schema', () => {
  const schemas: TestSchema[] = [];
  afterAll(async () => {
    for (const s of schemas) await s.drop();
  });

  /** A schema as the release before migration 16 left it: text ids. */
  async function schemaAt15(): Promise<{ schema: TestSchema; s: string }> {
    const schema = await createTestSchema();
    schemas.push(schema);
    const s = `"${schema.name}"`;
    await schema.query(`CREATE SCHEMA ${s}`);
    await schema.query(
      `CREATE TABLE ${s}.tasklease_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const migration of PG_MIGRATIONS.filter((m) => m.version < UUID_VERSION)) {
      await schema.query(migration.sql(s));
      await schema.query(`INSERT INTO ${s}.tasklease_migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
    }
    const types = await columnTypes(schema, s);
    expect(types['system_async_task.id']).toBe('text');
    return { schema, s };
  }

  async function columnTypes(schema: TestSchema, s: string): Promise<Record<string, string>> {
    const rows = await schema.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns
       WHERE table_schema = $1 AND (column_name IN ('id', 'task_id', 'original_task_id', 'replay_task_id', 'last_task_id'))`,
      [s.slice(1, -1)],
    );
    return Object.fromEntries(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.data_type]));
  }

  it('converts every id column in place: rows, links and history survive, and the store runs the migrated tasks', async () => {
    const { schema, s } = await schemaAt15();
    const [queued, failed, done] = [uuidv7(), uuidv7(), uuidv7()];
    const [failure, letter] = [uuidv7(), uuidv7()];
    const task = `INSERT INTO ${s}.system_async_task (id, task_type, status, priority, payload_json, available_at, attempt_count, max_attempts,
      create_time, update_time, finish_time, last_error_code) VALUES ($1, 'alpha', $2, 0, $3, now(), $4, 3, now(), now(), $5, $6)`;
    await schema.query(task, [queued, 'QUEUED', '{"n":1}', 0, null, null]);
    await schema.query(task, [failed, 'FAILED', '{"n":2}', 3, new Date(), 'BOOM']);
    await schema.query(task, [done, 'SUCCESS', '{"n":3}', 1, new Date(), null]);
    await schema.query(
      `INSERT INTO ${s}.system_async_task_attempt (task_id, attempt, worker_id, started_at, finished_at, outcome)
       VALUES ($1, 1, 'w-old', now(), now(), 'SUCCESS'), ($2, 3, 'w-old', now(), now(), 'FAILED')`,
      [done, failed],
    );
    await schema.query(
      `INSERT INTO ${s}.system_async_task_failure (id, task_id, attempt, error_code, error_message, retryable, failed_at)
       VALUES ($1, $2, 3, 'BOOM', 'it broke', false, now())`,
      [failure, failed],
    );
    await schema.query(
      `INSERT INTO ${s}.system_async_task_dead_letter (id, original_task_id, task_type, payload_json, error_code, error_message, attempt_count, moved_at)
       VALUES ($1, $2, 'alpha', '{"n":2}', 'BOOM', 'it broke', 3, now())`,
      [letter, failed],
    );
    await schema.query(
      `INSERT INTO ${s}.system_async_task_action (task_id, action, from_status, to_status, actor, acted_at) VALUES ($1, 'PAUSE', 'QUEUED', 'PAUSED', 'cli:ana', now())`,
      [queued],
    );
    await schema.query(
      `INSERT INTO ${s}.system_async_task_schedule (schedule_key, task_type, cron, time_zone, payload_json, priority, max_attempts, catch_up, enabled,
         revision, last_tick_at, last_task_id, created_at, updated_at) VALUES ('nightly', 'alpha', '0 3 * * *', 'UTC', '{}', 0, 3, 0, 1, 1, now(), $1, now(), now())`,
      [done],
    );
    await schema.query(`INSERT INTO ${s}.system_async_task_awaited (task_id, waiter_id) VALUES ($1, 'waiter')`, [queued]);

    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
    try {
      await store.migrate();
      expect(await store.schemaVersion()).toBe(store.expectedSchemaVersion);
      const types = await columnTypes(schema, s);
      for (const column of [
        'system_async_task.id',
        'system_async_task_attempt.task_id',
        'system_async_task_failure.id',
        'system_async_task_failure.task_id',
        'system_async_task_dead_letter.id',
        'system_async_task_dead_letter.original_task_id',
        'system_async_task_dead_letter.replay_task_id',
        'system_async_task_awaited.task_id',
        'system_async_task_action.task_id',
        'system_async_task_schedule.last_task_id',
      ]) {
        expect(types[column], column).toBe('uuid');
      }
      // A literal, as the operator's diagnostic SQL writes it, still finds the row.
      expect(await schema.query(`SELECT status FROM ${s}.system_async_task WHERE id = '${failed}'`)).toEqual([{ status: 'FAILED' }]);
      expect((await store.getTask({ id: done, scope: G }))?.status).toBe('SUCCESS');
      expect((await store.listAttempts({ taskId: failed })).map((a) => a.outcome)).toEqual(['FAILED']);
      expect((await store.listFailures({ taskId: failed })).map((f) => [f.id, f.errorCode])).toEqual([[failure, 'BOOM']]);
      expect((await store.listTaskActions({ taskId: queued })).map((a) => a.action)).toEqual(['PAUSE']);
      const letters = await store.listDeadLetters({ scope: G, limit: 10 });
      expect(letters.map((l) => [l.id, l.originalTaskId])).toEqual([[letter, failed]]);
      // The migrated rows still work: the dead letter replays, the queued task is claimed and finished under its lease.
      expect(await store.replayDeadLetters({ ids: [letter], scope: G })).toEqual([{ id: letter, outcome: 'REPLAYED', taskId: failed }]);
      const claimed = await store.claimTasks(claimParams({ limit: 10 }));
      expect(claimed.map((t) => t.id).sort()).toEqual([queued, failed].sort());
      const finish = await store.finishAttempts({
        outcomes: claimed.map((t) => ({ kind: 'SUCCESS', lease: leaseOf(t), artifactId: null, resultJson: null, progress: null })),
      });
      expect(finish.applied).toEqual([true, true]);
      expect((await store.countByStatus({ scope: G })).SUCCESS).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('refuses a schema holding an id that is not a UUID and leaves it as it was', async () => {
    const { schema, s } = await schemaAt15();
    await schema.query(
      `INSERT INTO ${s}.system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, create_time, update_time)
       VALUES ('task-12345', 'alpha', 'QUEUED', 0, '{}', now(), 3, now(), now())`,
    );
    const store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 1 });
    try {
      const error = await store.migrate().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect(String((error as Error).message)).toMatch(/migration 16/);
      expect(String((error as Error).message)).toMatch(/task-12345/);
      expect(await store.schemaVersion()).toBe(UUID_VERSION - 1);
      expect((await columnTypes(schema, s))['system_async_task.id']).toBe('text');
      expect(await schema.query(`SELECT id FROM ${s}.system_async_task`)).toEqual([{ id: 'task-12345' }]);
    } finally {
      await store.close();
    }
  });
});
