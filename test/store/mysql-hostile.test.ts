/**
 * Hostile input on MySQL/MariaDB: stored verbatim or rejected with a typed
 * error naming the field, never half-written; the schema survives.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { claimParams, newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-hostile.test.ts');
const G = Scope.global();
/** A NUL is refused in an owner scope (core/text.ts: no store keeps it alike); below the client the store keeps it. */
const scopeOf = (owner: string): Scope => (owner.includes('\u0000') ? G : Scope.owner(owner));

const HOSTILE = [
  "x'; DROP TABLE system_async_task; --",
  'a$$b',
  "o'brien",
  'nul\u0000inside',
  'back\\slash\\',
  '%_ like wildcards',
  '"double" `back` quotes',
  'emoji \u{1F600} and 中文',
  'trailing space ',
  'TRAILING SPACE ',
  'Trailing space',
  '\u0000',
];

describeOnServer(available, 'MySQL/MariaDB', 'MySQL store: hostile input', () => {
  let database: TestDatabase;
  let store: MysqlStore;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = new MysqlStore({ uri: database.uri, poolSize: 2 });
    await store.migrate();
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('stores hostile types, owners, keys and payloads verbatim, and claims each by its exact type', async () => {
    const tasks = HOSTILE.map((text) =>
      newTask({ taskType: text, owner: text, idempotencyKey: text, traceId: text, payloadJson: JSON.stringify({ text, lone: '\ud800', nul: '\u0000' }) }),
    );
    const results = await store.insertTasks({ tasks });
    expect(results.every((r) => r.created)).toBe(true);
    for (const [index, text] of HOSTILE.entries()) {
      const read = await store.getTask({ id: tasks[index]!.id, scope: scopeOf(text) });
      expect(read).toMatchObject({ taskType: text, owner: text, idempotencyKey: text, traceId: text, payload: { text, lone: '\ud800', nul: '\u0000' } });
      // Binary, NO PAD: 'trailing space ' and 'TRAILING SPACE ' and 'Trailing space' are three types.
      const claimed = await store.claimTasks(claimParams({ taskTypes: [text], limit: 10 }));
      expect(claimed.map((t) => t.id)).toEqual([tasks[index]!.id]);
    }
    expect(() => Scope.owner('nul\u0000inside')).toThrow(ValidationError);
    const again = await store.insertTasks({ tasks: HOSTILE.map((text) => newTask({ taskType: text, owner: text, idempotencyKey: text })) });
    expect(again.map((r) => r.created)).toEqual(HOSTILE.map(() => false));
    expect(again.map((r) => r.task.id)).toEqual(tasks.map((t) => t.id));
  });

  it('takes a 1 MiB payload and JSON nested 10,000 deep', async () => {
    const big = JSON.stringify({ blob: 'x'.repeat(1024 * 1024) });
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const [a, b] = await store.insertTasks({ tasks: [newTask({ payloadJson: big }), newTask({ payloadJson: deep })] });
    expect(JSON.stringify((await store.getTask({ id: a!.task.id, scope: G }))!.payload)).toBe(big);
    const rows = await database.query('SELECT payload_json FROM system_async_task WHERE id = ?', [b!.task.id]);
    expect(rows[0]!.payload_json).toBe(deep);
  });

  it('rejects what a column cannot hold with a ValidationError naming the field, writing nothing', async () => {
    await database.clean();
    const cases: [Partial<Parameters<typeof newTask>[0]>, string][] = [
      [{ taskType: 't'.repeat(10_000) }, 'tasks[1].taskType'],
      [{ taskType: 'lone \ud800 surrogate' }, 'tasks[1].taskType'],
      [{ owner: 'o'.repeat(256) }, 'tasks[1].owner'],
      [{ idempotencyKey: '\udc00' }, 'tasks[1].idempotencyKey'],
      [{ taskType: '' }, 'tasks[1].taskType'],
      [{ priority: 1.5 }, 'tasks[1].priority'],
      [{ maxAttempts: 0 }, 'tasks[1].maxAttempts'],
      [{ availableAt: new Date(Number.NaN) }, 'tasks[1].availableAt'],
      [{ deadlineAt: new Date('+010000-01-01T00:00:00Z') }, 'tasks[1].deadlineAt'],
    ];
    for (const [overrides, field] of cases) {
      const attempt = store.insertTasks({ tasks: [newTask(), newTask(overrides)] });
      await expect(attempt).rejects.toBeInstanceOf(ValidationError);
      await expect(attempt).rejects.toMatchObject({ field });
    }
    expect((await store.countByStatus({ scope: G })).QUEUED).toBe(0);
  });

  it('answers hostile ids, cursors and filters as plain values, and the schema stays intact', async () => {
    for (const text of HOSTILE) {
      expect(await store.getTask({ id: text, scope: G })).toBeNull();
      expect((await store.listTasks({ scope: scopeOf(text), taskType: text, cursor: text, limit: 5 })).tasks).toEqual([]);
      expect(await store.changeStatus({ ids: [text], scope: G, from: ['QUEUED'], to: 'PAUSED' })).toEqual([{ id: text, applied: false, status: null }]);
      const edit = { id: text, scope: scopeOf(text), from: ['QUEUED' as const], changes: { payloadJson: JSON.stringify(text), priority: 1 } };
      expect(await store.editTask({ ...edit, record: { action: 'EDIT', actor: { id: text, name: text }, detail: text } })).toEqual({
        id: text,
        applied: false,
        status: null,
      });
      expect(await store.listFailures({ taskId: text })).toEqual([]);
      expect(await store.listTaskActions({ taskId: text })).toEqual([]);
      expect(await store.listSteps({ taskId: text })).toEqual([]);
      expect(await store.recordStep({ lease: { taskId: text, workerId: text, attempt: 1, token: text }, name: text, resultJson: null })).toBe(false);
      expect(await store.listTaskLogs({ taskId: text, limit: 10 })).toEqual([]);
      const lines = [{ level: 'info' as const, message: text, fieldsJson: null, loggedAt: new Date() }];
      const lease = { taskId: text, workerId: text, attempt: 1, token: text };
      expect(await store.appendTaskLogs({ lease, lines, bufferDropped: 0, final: true, maxLinesPerAttempt: 10, maxLinesPerTask: 10 })).toBe(false);
      expect(await store.listSubscriptions({ event: text, taskType: text })).toEqual([]);
      expect(await store.publishEvent({ event: text, build: () => [] })).toEqual({ subscriptions: [], results: [] });
    }
    const tables = await database.query(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`);
    expect(tables.map((t) => t.name)).toEqual([
      'system_async_task',
      'system_async_task_action',
      'system_async_task_adaptive',
      'system_async_task_api_token',
      'system_async_task_attempt',
      'system_async_task_bulk',
      'system_async_task_dead_letter',
      'system_async_task_dependency',
      'system_async_task_failure',
      'system_async_task_limit_change',
      'system_async_task_log',
      'system_async_task_move',
      'system_async_task_policy',
      'system_async_task_queue_stat',
      'system_async_task_rate_start',
      'system_async_task_schedule',
      'system_async_task_sequence',
      'system_async_task_step',
      'system_async_task_subscription',
      'system_async_task_wakeup',
      'system_async_task_worker',
      'tasklease_migrations',
    ]);
  });
});
