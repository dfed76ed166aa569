/**
 * Issue 16: MySQL has no LISTEN/NOTIFY, so every submit bumps a wake-up
 * counter after its commit (coalesced: at most one bump in flight per store,
 * issue 25) and a store with listeners reads the
 * counters every wakeupPollMs. A worker in another process hears it as a
 * wake-all event (taskTypes: []); the in-process bus carries the submitted
 * types instead, which is how these tests tell the two paths apart in one
 * process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { TaskStatus } from '../../src/core/status.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import type { StoreEvent } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { waitFor } from '../helpers/wait.js';
import { newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-wakeups.test.ts');

describe('MySQL: wakeupPollMs', () => {
  it('is validated at construction', () => {
    expect(() => new MysqlStore({ uri: 'mysql://root@127.0.0.1/x', wakeupPollMs: -1 })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_OPTIONS }));
  });
});

describeOnServer(available, 'MySQL/MariaDB', 'MySQL: wake-ups across processes', () => {
  let database: TestDatabase;
  let producer: MysqlStore;
  const counters = async (): Promise<number> => Number((await database.query('SELECT SUM(version) AS v FROM system_async_task_wakeup'))[0]!.v);

  beforeAll(async () => {
    database = await createTestDatabase();
    producer = new MysqlStore({ uri: database.uri, poolSize: 2, wakeupPollMs: 0 });
    await producer.migrate();
  });
  afterAll(async () => {
    await producer?.close();
    await database?.drop();
  });

  /** After a write that owes a bump, sent after its commit: the counters' sum once it has landed. */
  const bumped = async (expected: number): Promise<void> => {
    await waitFor(async () => (await counters()) === expected, `the counters at ${expected}`);
  };

  it('a submit bumps the counters after its commit; a listening store hears it as a wake-all', async () => {
    const listener = new MysqlStore({ uri: database.uri, poolSize: 2, wakeupPollMs: 5 });
    const events: StoreEvent[] = [];
    const unsubscribe = listener.subscribe((event) => events.push(event));
    try {
      const before = await counters();
      await producer.insertTasks({ tasks: [newTask({ id: 'w1', taskType: 'woken' })] });
      await bumped(before + 1);
      // The in-process bus says {taskTypes: ['woken']}; only the counter poll says []. The poller's first
      // read sets its baseline (and may come after a submit): keep submitting until one is heard.
      const wokenAll = (): boolean => events.some((event) => event.kind === 'submitted' && event.taskTypes.length === 0);
      let next = 0;
      await waitFor(
        async () => wokenAll() || (await producer.insertTasks({ tasks: [newTask({ id: `w1-${(next += 1)}`, taskType: 'woken' })] }), false),
        'the counter poll to wake the listener',
        5000,
        50,
      );
    } finally {
      unsubscribe();
      await listener.close();
    }
  });

  it('a requeue by a status change (resume) bumps the counters too; a pause does not', async () => {
    const before = await counters();
    await producer.insertTasks({ tasks: [newTask({ id: 'w2', taskType: 'woken' })] });
    await bumped(before + 1);
    const paused = before + 1;
    const [pause] = await producer.changeStatus({ ids: ['w2'], scope: Scope.global(), from: [TaskStatus.QUEUED], to: TaskStatus.PAUSED });
    expect(pause?.applied).toBe(true);
    expect(await counters()).toBe(paused);
    const [resume] = await producer.changeStatus({ ids: ['w2'], scope: Scope.global(), from: [TaskStatus.PAUSED], to: TaskStatus.QUEUED });
    expect(resume?.applied).toBe(true);
    expect(await counters()).toBe(paused + 1);
  });

  it('concurrent submits bump the counters a few times, not once each, and every bump lands by close()', async () => {
    const flood = new MysqlStore({ uri: database.uri, poolSize: 4, wakeupPollMs: 0 });
    const before = await counters();
    try {
      await Promise.all(Array.from({ length: 40 }, (_, i) => flood.insertTasks({ tasks: [newTask({ taskType: `flood-${i}` })] })));
    } finally {
      await flood.close();
    }
    const bumps = (await counters()) - before;
    expect(bumps).toBeGreaterThanOrEqual(1);
    expect(bumps).toBeLessThanOrEqual(20);
  });
});
