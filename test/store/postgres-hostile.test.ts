/**
 * Hostile input: stored verbatim or refused with a ValidationError naming
 * the field — never a driver error, never a half-written batch — and the
 * schema is intact afterwards.
 */
import { beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { ValidationError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { postgresAvailable, sharedPostgresStore, type TestSchema } from '../helpers/postgres.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-hostile.test.ts');
const G = Scope.global();

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: hostile input', () => {
  const shared = sharedPostgresStore(2);
  let schema: TestSchema;
  let store: PostgresStore;
  beforeAll(() => {
    ({ store, schema } = shared());
  });

  const roundTrip = async (taskType: string, payload: unknown, extra: { owner?: string; idempotencyKey?: string } = {}) => {
    const [result] = await store.insertTasks({ tasks: [newTask({ taskType, payloadJson: JSON.stringify(payload), ...extra })] });
    const read = await store.getTask({ id: result!.task.id, scope: G });
    expect(read!.taskType).toBe(taskType);
    expect(read!.payload).toEqual(payload);
    if (extra.owner !== undefined) expect(read!.owner).toBe(extra.owner);
    if (extra.idempotencyKey !== undefined) expect(read!.idempotencyKey).toBe(extra.idempotencyKey);
    return read!;
  };

  it('stores SQL-looking, quoting and dollar-quoting text verbatim', async () => {
    const nasty = [`x'; DROP TABLE "${'system_async_task'}"; --`, 'a$$b', '$claim$ END; $claim$', "o'brien", 'back\\slash "dq"', 'ünïcödé 中文 😀'];
    for (const text of nasty) await roundTrip(text, { text, [text]: [text] }, { owner: text, idempotencyKey: text });
    const claimed = await store.claimTasks(claimParams({ taskTypes: nasty, limit: 100 }));
    expect(claimed.map((t) => t.taskType).sort()).toEqual([...nasty].sort());
  });

  it('keeps NUL characters and lone surrogates inside payloads (as JSON escapes)', async () => {
    await roundTrip('payload-nul', { s: 'a\u0000b', k: { '\u0000': 1 } });
    await roundTrip('payload-surrogates', { lone: '\ud800', low: 'x\udc00y', pair: '\ud83d\ude00' });
    // A payload text holding a raw lone surrogate (not escaped) means the same JSON: it comes back equal.
    const [result] = await store.insertTasks({ tasks: [newTask({ taskType: 'raw-surrogate', payloadJson: '{"s":"\ud800"}' })] });
    expect((await store.getTask({ id: result!.task.id, scope: G }))!.payload).toEqual({ s: '\ud800' });
  });

  it('round-trips JSON nested 10,000 deep', async () => {
    // Built as text: JSON.stringify itself overflows V8's stack at this depth (the client could never send it).
    let text = '"bottom"';
    for (let i = 0; i < 10_000; i += 1) text = i % 2 ? `[${text}]` : `{"d":${text}}`;
    const [result] = await store.insertTasks({ tasks: [newTask({ taskType: 'deep', payloadJson: text })] });
    const stored = await schema.query<{ payload_json: string }>(`SELECT payload_json FROM "${schema.name}".system_async_task WHERE id = $1`, [result!.task.id]);
    expect(stored[0]!.payload_json).toBe(text); // verbatim
    let depth = 0;
    let node: unknown = (await store.getTask({ id: result!.task.id, scope: G }))!.payload;
    while (typeof node === 'object' && node !== null) {
      node = Array.isArray(node) ? node[0] : (node as { d: unknown }).d;
      depth += 1;
    }
    expect([depth, node]).toEqual([10_000, 'bottom']);
  });

  it('refuses NUL, lone surrogates and oversized names with a ValidationError naming the field, writing nothing', async () => {
    const before = await store.countByStatus({ scope: G });
    const cases: [Partial<ReturnType<typeof newTask>>, string][] = [
      [{ taskType: 'nul\u0000type' }, 'taskType'],
      [{ taskType: 'lone\ud800' }, 'taskType'],
      [{ taskType: 'x'.repeat(10_000) }, 'taskType'],
      [{ owner: 'nul\u0000owner' }, 'owner'],
      [{ idempotencyKey: 'k'.repeat(5000) }, 'idempotencyKey'],
      [{ traceId: '\udfff' }, 'traceId'],
      [{ payloadJson: '{"raw":"\u0000"}' }, 'payload'],
      [{ priority: 2 ** 40 }, 'priority'],
      [{ maxAttempts: 1.5 }, 'maxAttempts'],
      [{ availableAt: new Date(Number.NaN) }, 'availableAt'],
    ];
    for (const [overrides, field] of cases) {
      // a good task first in the batch: the whole batch is refused, nothing half-written
      const error = await store.insertTasks({ tasks: [newTask({ taskType: 'good' }), newTask(overrides)] }).catch((e: unknown) => e);
      expect(error, field).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(field);
      expect((error as Error).message).toMatch(/tasks\[1\]/);
    }
    expect(await store.countByStatus({ scope: G })).toEqual(before);
  });

  it('refuses a durable step name PostgreSQL text cannot hold with a ValidationError, recording nothing', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'stepped' })] });
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['stepped'] }));
    for (const name of ['nul\u0000step', 'lone\ud800', 'x'.repeat(1000)]) {
      const error = await store.recordStep({ lease: leaseOf(task!), name, resultJson: null }).catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(ValidationError);
    }
    expect(await store.recordStep({ lease: leaseOf(task!), name: "o'brien; DROP TABLE x; --", resultJson: '{"v":"\\u0000"}' })).toBe(true);
    expect((await store.listSteps({ taskId: task!.id })).map((s) => [s.name, s.resultJson])).toEqual([["o'brien; DROP TABLE x; --", '{"v":"\\u0000"}']]);
  });

  it('keeps a log line a direct caller wrote with a NUL (as U+FFFD, like a progress message); a hostile id reads and writes nothing', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'logged' })] });
    const [task] = await store.claimTasks(claimParams({ taskTypes: ['logged'] }));
    const lines = [{ level: 'info' as const, message: 'nul\u0000; DROP TABLE x; --', fieldsJson: '{"v":"\\u0000"}', loggedAt: new Date() }];
    const bounds = { bufferDropped: 0, final: false, maxLinesPerAttempt: 10, maxLinesPerTask: 10 };
    expect(await store.appendTaskLogs({ lease: leaseOf(task!), lines, ...bounds })).toBe(true);
    expect((await store.listTaskLogs({ taskId: task!.id, limit: 10 })).map((l) => [l.message, l.fieldsJson])).toEqual([
      ['nul\uFFFD; DROP TABLE x; --', '{"v":"\\u0000"}'],
    ]);
    expect(await store.listTaskLogs({ taskId: "x' OR 1=1 --", limit: 10 })).toEqual([]);
    expect(await store.appendTaskLogs({ lease: { ...leaseOf(task!), taskId: "x' OR 1=1 --" }, lines, ...bounds })).toBe(false);
  });

  it('makes hostile run-time text storable: error and progress messages with NUL and lone surrogates', async () => {
    await store.insertTasks({ tasks: [newTask({ taskType: 'runtime' }), newTask({ taskType: 'runtime' })] });
    const [a, b] = await store.claimTasks(claimParams({ taskTypes: ['runtime'] }));
    const progress = { total: 2, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: 'half\u0000way \ud800' };
    expect(await store.saveProgress({ lease: leaseOf(a!), progress })).toBe(true);
    const written = await store.finishAttempts({
      outcomes: [
        {
          kind: 'FAILED',
          lease: leaseOf(a!),
          failure: { errorCode: 'E\u0000', message: "boom'; DROP TABLE x; --\u0000", traceId: null, retryable: false },
          progress: null,
        },
        { kind: 'SUCCESS', lease: leaseOf(b!), artifactId: 'art\u0000', resultJson: JSON.stringify({ r: '\u0000\ud800' }), progress },
      ],
    });
    expect(written.applied).toEqual([true, true]);
    expect(written.deadLetters).toEqual([{ taskId: a!.id, deadLetterId: expect.any(String) }]);
    const failed = await store.getTask({ id: a!.id, scope: G });
    expect(failed!.status).toBe('FAILED');
    expect(failed!.progress!.message).toBe('half\uFFFDway \uFFFD');
    const [failure] = await store.listFailures({ taskId: a!.id });
    expect(failure!.message).toBe("boom'; DROP TABLE x; --\uFFFD");
    const done = await store.getTask({ id: b!.id, scope: G });
    expect(done!.result).toEqual({ r: '\u0000\ud800' });
  });

  it('leaves the schema intact', async () => {
    const tables = await schema.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name', [
      schema.name,
    ]);
    expect(tables.map((t) => t.table_name)).toEqual([
      'system_async_task',
      'system_async_task_action',
      'system_async_task_action_history',
      'system_async_task_adaptive',
      'system_async_task_api_token',
      'system_async_task_attempt',
      'system_async_task_attempt_history',
      'system_async_task_awaited',
      'system_async_task_bulk',
      'system_async_task_dead_letter',
      'system_async_task_dependency',
      'system_async_task_failure',
      'system_async_task_failure_history',
      'system_async_task_history',
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
      'system_async_task_worker',
      'tasklease_migrations',
    ]);
    expect(await store.schemaVersion()).toBe(store.expectedSchemaVersion);
    const counts = await store.countByStatus({ scope: G });
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
