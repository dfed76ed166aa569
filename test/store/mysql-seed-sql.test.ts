/**
 * The seed's own SQL (article 2: diagnose-task.sh, analyze-performance.sh and
 * the troubleshooting guide) runs unchanged against a MySQL store that has run
 * real tasks through a worker. The only edits are the shell's: $TASK_ID,
 * $TASK_TYPE and $HOURS substituted, the guide's example id 'task-12345'
 * replaced by a real one, and the mysql client's `\G` terminator dropped.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { createClient } from '../../src/client/client.js';
import { TaskFailure } from '../../src/core/errors.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { waitFor } from '../helpers/wait.js';

const available = await mysqlAvailable('test/store/mysql-seed-sql.test.ts');

// ---- diagnose-task.sh, verbatim between the quotes of each `mysql -e "…"` (\G dropped) ----
const DIAGNOSE_TASK = String.raw`SELECT * FROM system_async_task WHERE id = '$TASK_ID' `;
const DIAGNOSE_ATTEMPTS = String.raw`SELECT * FROM system_async_task_attempt WHERE task_id = '$TASK_ID' ORDER BY started_at DESC `;
const DIAGNOSE_FAILURES = String.raw`SELECT * FROM system_async_task_failure WHERE task_id = '$TASK_ID' ORDER BY failed_at DESC LIMIT 5 `;
const DIAGNOSE_LEASE = String.raw`
  SELECT 
    id, 
    status, 
    lease_owner, 
    lease_until,
    CASE 
      WHEN lease_until IS NULL THEN 'NO_LEASE'
      WHEN lease_until < NOW() THEN 'EXPIRED'
      ELSE 'ACTIVE'
    END AS lease_status,
    TIMESTAMPDIFF(SECOND, NOW(), lease_until) AS remaining_sec
  FROM system_async_task 
  WHERE id = '$TASK_ID' 
`;

// ---- analyze-performance.sh ----
const ANALYZE_COUNTS = String.raw`
  SELECT 
    status,
    COUNT(*) AS count
  FROM system_async_task
  WHERE task_type = '$TASK_TYPE'
    AND create_time > NOW() - INTERVAL $HOURS HOUR
  GROUP BY status
  ORDER BY count DESC
`;
const ANALYZE_DURATION = String.raw`
  SELECT 
    AVG(TIMESTAMPDIFF(SECOND, started_at, finished_at)) AS avg_duration_sec,
    MIN(TIMESTAMPDIFF(SECOND, started_at, finished_at)) AS min_duration_sec,
    MAX(TIMESTAMPDIFF(SECOND, started_at, finished_at)) AS max_duration_sec,
    COUNT(*) AS sample_count
  FROM system_async_task_attempt a
  JOIN system_async_task t ON a.task_id = t.id
  WHERE t.task_type = '$TASK_TYPE'
    AND a.started_at > NOW() - INTERVAL $HOURS HOUR
    AND a.finished_at IS NOT NULL
`;
const ANALYZE_WAIT = String.raw`
  SELECT 
    AVG(TIMESTAMPDIFF(SECOND, t.create_time, a.started_at)) AS avg_wait_sec,
    MIN(TIMESTAMPDIFF(SECOND, t.create_time, a.started_at)) AS min_wait_sec,
    MAX(TIMESTAMPDIFF(SECOND, t.create_time, a.started_at)) AS max_wait_sec
  FROM system_async_task t
  JOIN system_async_task_attempt a ON t.id = a.task_id
  WHERE t.task_type = '$TASK_TYPE'
    AND t.create_time > NOW() - INTERVAL $HOURS HOUR
`;
const ANALYZE_FAILURES = String.raw`
  SELECT 
    error_code,
    COUNT(*) AS count,
    COUNT(*) * 100.0 / SUM(COUNT(*)) OVER () AS percentage
  FROM system_async_task_failure f
  JOIN system_async_task t ON f.task_id = t.id
  WHERE t.task_type = '$TASK_TYPE'
    AND f.failed_at > NOW() - INTERVAL $HOURS HOUR
  GROUP BY error_code
  ORDER BY count DESC
  LIMIT 10
`;

// ---- the troubleshooting guide's `mysql>` queries ----
const GUIDE = {
  globalRunning: `SELECT COUNT(*) FROM system_async_task WHERE status = 'RUNNING';`,
  typeRunning: `SELECT COUNT(*) FROM system_async_task 
       WHERE status = 'RUNNING' AND task_type = 'IMPORT.MEDICAL';`,
  task: `SELECT * FROM system_async_task WHERE id = 'task-12345';`,
  availableAt: `SELECT id, available_at, NOW() FROM system_async_task 
       WHERE id = 'task-12345';`,
  deadline: `SELECT id, deadline_at, NOW() FROM system_async_task 
       WHERE id = 'task-12345';`,
  policy: `SELECT * FROM system_async_task_policy 
       WHERE policy_key = 'TYPE:IMPORT.MEDICAL';`,
  duration: `SELECT id, create_time, update_time, 
       TIMESTAMPDIFF(SECOND, create_time, update_time) AS duration_sec
       FROM system_async_task 
       WHERE id = 'task-12345';`,
  attempts: `SELECT * FROM system_async_task_attempt 
       WHERE task_id = 'task-12345' 
       ORDER BY started_at;`,
  timeout: `SELECT id, deadline_at, create_time FROM system_async_task 
       WHERE id = 'task-12345';`,
  lastAttempt: `SELECT 
         a.task_id, 
         a.started_at, 
         a.finished_at,
         TIMESTAMPDIFF(SECOND, a.started_at, a.finished_at) AS duration_sec
       FROM system_async_task_attempt a
       WHERE a.task_id = 'task-12345'
       ORDER BY a.started_at DESC
       LIMIT 1;`,
  processlist: `SHOW PROCESSLIST;`,
  deadLetters: `SELECT * FROM system_async_task_dead_letter 
       ORDER BY moved_at DESC 
       LIMIT 20;`,
  deadLetterCodes: `SELECT error_code, COUNT(*) AS count
       FROM system_async_task_dead_letter 
       GROUP BY error_code 
       ORDER BY count DESC;`,
  deadLetterFailures: `SELECT * FROM system_async_task_failure 
       WHERE task_id IN (
         SELECT original_task_id FROM system_async_task_dead_letter
       )
       LIMIT 10;`,
};

describeOnServer(available, 'MySQL/MariaDB', 'the seed\u2019s diagnostic SQL on a MySQL store that ran real tasks', () => {
  let database: TestDatabase;
  let store: MysqlStore;
  let worker: Worker;
  let releaseHeld: () => void = () => undefined;
  const ids = { ok: [] as string[], retried: [] as string[], dead: '', held: '' };

  beforeAll(async () => {
    database = await createTestDatabase();
    store = new MysqlStore({ uri: database.uri, poolSize: 4 });
    await store.migrate();
    await database.query(
      "INSERT INTO system_async_task_policy (policy_key, task_type, max_concurrency, enabled, update_time) VALUES ('TYPE:IMPORT.MEDICAL', 'IMPORT.MEDICAL', 5, 1, NOW(3))",
    );
    const failedOnce = new Set<string>();
    const held = new Promise<void>((resolve) => (releaseHeld = resolve));
    const importMedical = defineTask<{ mode: string; n: number }>({
      type: 'IMPORT.MEDICAL',
      execute: async (ctx, payload) => {
        if (payload.mode === 'retry' && !failedOnce.has(ctx.task.id)) {
          failedOnce.add(ctx.task.id);
          throw new TaskFailure('medical insurance gateway timed out', { code: 'REMOTE_TIMEOUT' });
        }
        if (payload.mode === 'dead') throw new TaskFailure('file has no header row', { code: 'BAD_FILE', retryable: false });
        if (payload.mode === 'hold') await held;
        return { status: 'SUCCESS', artifactId: `batch-${payload.n}`, result: { rows: payload.n } };
      },
    });
    const client = createClient({ store, tasks: [importMedical] });
    worker = createWorker({
      store,
      tasks: [importMedical],
      pollIntervalMs: 20,
      heartbeatIntervalMs: 200,
      leaseMs: 30_000,
      recoveryIntervalMs: 100,
      retry: { baseDelayMs: 10, maxDelayMs: 20, jitter: 0 },
      typeConcurrency: 5,
      globalConcurrency: 20,
    });
    for (let n = 0; n < 6; n++) ids.ok.push((await client.submit(importMedical, { mode: 'ok', n })).task.id);
    for (let n = 0; n < 2; n++) ids.retried.push((await client.submit(importMedical, { mode: 'retry', n }, { maxAttempts: 3 })).task.id);
    ids.dead = (await client.submit(importMedical, { mode: 'dead', n: 0 }, { maxAttempts: 3 })).task.id;
    ids.held = (await client.submit(importMedical, { mode: 'hold', n: 0 }, { deadlineAt: new Date(Date.now() + 3_600_000) })).task.id;
    worker.start();
    await waitFor(async () => {
      const counts = await store.countByStatus({ scope: { kind: 'global' } });
      return counts.SUCCESS === 8 && counts.FAILED === 1 && counts.RUNNING === 1;
    }, 'eight successes, one dead letter and one task running');
  });
  afterAll(async () => {
    releaseHeld();
    await worker?.stop();
    await store?.close();
    await database?.drop();
  });

  const run = (sql: string, vars: Record<string, string>) =>
    database.query(Object.entries(vars).reduce((text, [name, value]) => text.replaceAll(name, value), sql));

  it('diagnose-task.sh: task, attempts, failures and lease state of a dead-lettered task', async () => {
    const vars = { $TASK_ID: ids.dead };
    const [task, ...none] = await run(DIAGNOSE_TASK, vars);
    expect(none).toEqual([]);
    expect(task).toMatchObject({
      id: ids.dead,
      task_type: 'IMPORT.MEDICAL',
      status: 'FAILED',
      attempt_count: 1,
      max_attempts: 3,
      lease_owner: null,
      lease_until: null,
      last_error_code: 'BAD_FILE',
    });
    for (const column of ['priority', 'payload_json', 'available_at', 'deadline_at', 'artifact_id', 'create_time', 'update_time']) {
      expect(task).toHaveProperty(column);
    }
    expect(JSON.parse(String(task!.payload_json))).toEqual({ mode: 'dead', n: 0 });
    const attempts = await run(DIAGNOSE_ATTEMPTS, vars);
    expect(attempts).toMatchObject([{ task_id: ids.dead, attempt: 1, outcome: 'FAILED', error_code: 'BAD_FILE' }]);
    const failures = await run(DIAGNOSE_FAILURES, vars);
    expect(failures).toMatchObject([{ task_id: ids.dead, attempt: 1, error_code: 'BAD_FILE', retryable: 0 }]);
    expect(await run(DIAGNOSE_LEASE, vars)).toEqual([
      { id: ids.dead, status: 'FAILED', lease_owner: null, lease_until: null, lease_status: 'NO_LEASE', remaining_sec: null },
    ]);
  });

  it('diagnose-task.sh: a retried task lists both attempts newest first, and a running task has an ACTIVE lease', async () => {
    const vars = { $TASK_ID: ids.retried[0]! };
    expect((await run(DIAGNOSE_ATTEMPTS, vars)).map((a) => [a.attempt, a.outcome, a.error_code])).toEqual([
      [2, 'SUCCESS', null],
      [1, 'FAILED', 'REMOTE_TIMEOUT'],
    ]);
    expect((await run(DIAGNOSE_FAILURES, vars)).map((f) => [f.attempt, f.error_code, f.retryable])).toEqual([[1, 'REMOTE_TIMEOUT', 1]]);
    const [lease] = await run(DIAGNOSE_LEASE, { $TASK_ID: ids.held });
    expect(lease).toMatchObject({ id: ids.held, status: 'RUNNING', lease_status: 'ACTIVE' });
    expect(String(lease!.lease_owner)).not.toBe('');
    expect(Number(lease!.remaining_sec)).toBeGreaterThan(0);
    expect(Number(lease!.remaining_sec)).toBeLessThanOrEqual(30);
  });

  it('analyze-performance.sh: counts, queue wait and failure reasons', async () => {
    const vars = { $TASK_TYPE: 'IMPORT.MEDICAL', $HOURS: '24' };
    // ORDER BY count DESC leaves ties (FAILED 1, RUNNING 1) in whatever order the server's GROUP BY yields them.
    const byCountThenStatus = (rows: Record<string, unknown>[]) =>
      [...rows].sort((a, b) => Number(b.count) - Number(a.count) || String(a.status).localeCompare(String(b.status)));
    expect(byCountThenStatus(await run(ANALYZE_COUNTS, vars))).toEqual([
      { status: 'SUCCESS', count: 8 },
      { status: 'FAILED', count: 1 },
      { status: 'RUNNING', count: 1 },
    ]);
    const [wait] = await run(ANALYZE_WAIT, vars);
    expect(wait!.avg_wait_sec).not.toBeNull();
    expect(Number(wait!.min_wait_sec)).toBeGreaterThanOrEqual(0);
    const reasons = await run(ANALYZE_FAILURES, vars);
    expect(reasons.map((r) => [r.error_code, r.count, Math.round(Number(r.percentage))])).toEqual([
      ['REMOTE_TIMEOUT', 2, 67],
      ['BAD_FILE', 1, 33],
    ]);
    // Another type or a window with nothing in it answers with no rows, not an error.
    expect(await run(ANALYZE_COUNTS, { $TASK_TYPE: 'OTHER', $HOURS: '24' })).toEqual([]);
  });

  // The seed's "执行时长分析" query names started_at and finished_at unqualified while joining
  // system_async_task: the task table calls its own two start_time / finish_time so that they stay unambiguous.
  it('analyze-performance.sh: execution durations', async () => {
    const [duration] = await run(ANALYZE_DURATION, { $TASK_TYPE: 'IMPORT.MEDICAL', $HOURS: '24' });
    // 8 successes + 2 failed first tries + 1 dead: the running attempt has no finished_at.
    expect(Number(duration!.sample_count)).toBe(11);
    expect(Number(duration!.min_duration_sec)).toBeGreaterThanOrEqual(0);
    expect(duration!.avg_duration_sec).not.toBeNull();
  });

  it('the troubleshooting guide\u2019s queries', async () => {
    const guide = (sql: string, id = ids.held) => database.query(sql.replaceAll('task-12345', id));
    expect(await guide(GUIDE.globalRunning)).toEqual([{ 'COUNT(*)': 1 }]);
    expect(await guide(GUIDE.typeRunning)).toEqual([{ 'COUNT(*)': 1 }]);
    expect(await guide(GUIDE.task)).toMatchObject([{ id: ids.held, status: 'RUNNING' }]);
    const [due] = await guide(GUIDE.availableAt);
    // NOW() has whole seconds; available_at has milliseconds.
    expect(String(due!.available_at).slice(0, 19) <= String(due!['NOW()'])).toBe(true);
    const [deadline] = await guide(GUIDE.deadline);
    expect(String(deadline!.deadline_at) > String(deadline!['NOW()'])).toBe(true);
    expect(await guide(GUIDE.policy)).toMatchObject([{ policy_key: 'TYPE:IMPORT.MEDICAL', task_type: 'IMPORT.MEDICAL', max_concurrency: 5, enabled: 1 }]);
    const [duration] = await guide(GUIDE.duration, ids.retried[1]!);
    expect(Number(duration!.duration_sec)).toBeGreaterThanOrEqual(0);
    expect((await guide(GUIDE.attempts, ids.retried[1]!)).map((a) => a.attempt)).toEqual([1, 2]);
    expect(await guide(GUIDE.timeout)).toMatchObject([{ id: ids.held }]);
    const [last] = await guide(GUIDE.lastAttempt, ids.retried[1]!);
    expect(last).toMatchObject({ task_id: ids.retried[1] });
    expect(last!.finished_at).not.toBeNull();
    expect((await guide(GUIDE.processlist)).length).toBeGreaterThan(0);
    expect(await guide(GUIDE.deadLetters)).toMatchObject([{ original_task_id: ids.dead, task_type: 'IMPORT.MEDICAL', error_code: 'BAD_FILE' }]);
    expect(await guide(GUIDE.deadLetterCodes)).toEqual([{ error_code: 'BAD_FILE', count: 1 }]);
    expect(await guide(GUIDE.deadLetterFailures)).toMatchObject([{ task_id: ids.dead, error_code: 'BAD_FILE' }]);
  });
});
