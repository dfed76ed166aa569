/**
 * Deadlocks (1213) and lock-wait timeouts (1205) are retried inside the MySQL
 * store and never reach the caller. Real conflicts, made with a second
 * connection that holds row locks; the store's sessions get a 1 s lock-wait
 * timeout through a pool we own.
 */
import mysql from 'mysql2/promise';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeOnServer } from '../helpers/factory.js';
import { Scope } from '../../src/core/scope.js';
import { lockName } from '../../src/store/mysql/options.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, newTask } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-locks.test.ts');
const G = Scope.global();

describeOnServer(available, 'MySQL/MariaDB', 'MySQL store: lock conflicts are retried inside the store', () => {
  let database: TestDatabase;
  let pool: mysql.Pool;
  let store: MysqlStore;
  let locker: mysql.Connection;

  beforeAll(async () => {
    database = await createTestDatabase();
    pool = mysql.createPool({ uri: database.uri, connectionLimit: 4 });
    // Runs before the store's own session set-up on every new connection.
    pool.on('connection', (conn) => void conn.query('SET SESSION innodb_lock_wait_timeout = 1'));
    store = new MysqlStore({ pool });
    await store.migrate();
    locker = await mysql.createConnection({ uri: database.uri });
    // READ COMMITTED: the blocker locks exactly the rows it names, not every row its scan passes.
    await locker.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
  });
  afterEach(async () => {
    await locker.query('ROLLBACK');
  });
  afterAll(async () => {
    await locker?.end();
    await store?.close();
    await pool?.end();
    await database?.drop();
  });

  /** Waits until the store's locking read is running (blocked: the blocker holds a row it wants). */
  const storeIsBlocked = () =>
    waitFor(async () => {
      const rows = await database.query(
        "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE command = 'Query' AND info LIKE 'SELECT id, status%FROM system_async_task%FOR UPDATE'",
      );
      return Number(rows[0]!.n) > 0;
    }, 'the store to block on a row lock');

  it('retries a lock-wait timeout until the blocker commits', async () => {
    const { task } = (await store.insertTasks({ tasks: [newTask()] }))[0]!;
    await locker.query('START TRANSACTION');
    await locker.query('SELECT id FROM system_async_task WHERE id = ? FOR UPDATE', [task.id]);
    const before = store.db.retries.lockWaitTimeouts;
    const change = store.changeStatus({ ids: [task.id], scope: G, from: ['QUEUED'], to: 'PAUSED' });
    await waitFor(() => store.db.retries.lockWaitTimeouts > before, 'the store to time out once and retry', 15_000);
    await locker.query('COMMIT');
    expect(await change).toEqual([{ id: task.id, applied: true, status: 'PAUSED' }]);
  });

  it('retries as the victim of a real deadlock', async () => {
    const inserted = await store.insertTasks({ tasks: Array.from({ length: 40 }, () => newTask()) });
    const ids = inserted.map((r) => r.task.id).sort();
    const [first, second] = [ids[0]!, ids[1]!];
    // The blocker holds `second` and many other rows: InnoDB rolls back the lighter transaction, the store's.
    await locker.query('START TRANSACTION');
    await locker.query('UPDATE system_async_task SET priority = priority + 1 WHERE id IN (?) AND id <> ?', [ids.slice(1), first]);
    const before = store.db.retries.deadlocks;
    // The store locks in id order: `first`, then waits for `second`.
    const change = store.changeStatus({ ids: [first, second], scope: G, from: ['QUEUED'], to: 'PAUSED' });
    await storeIsBlocked();
    // Closing the cycle: the blocker now wants `first`, which the store holds.
    await locker.query('SELECT id FROM system_async_task WHERE id = ? FOR UPDATE', [first]);
    await waitFor(() => store.db.retries.deadlocks === before + 1, 'the store to be the deadlock victim and retry');
    await locker.query('COMMIT');
    const result = await change;
    expect(result.map((r) => r.applied)).toEqual([true, true]);
    expect((await store.getTask({ id: first, scope: G }))!.status).toBe('PAUSED');
  });

  it('the sweep skips rows others lock instead of waiting for them', async () => {
    await database.clean();
    await store.insertTasks({ tasks: [newTask(), newTask()] });
    const held = await store.claimTasks(claimParams({ limit: 1, leaseMs: 1 }));
    expect(held).toHaveLength(1);
    await waitFor(async () => (await store.now()).getTime() > held[0]!.leaseUntil!.getTime(), 'the lease to expire');
    // Someone holds the expired row: the sweep must skip it (SKIP LOCKED), not wait or fail.
    await locker.query('START TRANSACTION');
    await locker.query('SELECT id FROM system_async_task WHERE id = ? FOR UPDATE', [held[0]!.id]);
    expect((await store.recover({ batchSize: 10 })).requeued).toBe(0);
    await locker.query('COMMIT');
    expect((await store.recover({ batchSize: 10 })).requeued).toBe(1);
  });

  it("a claim that waited on the claim lock reports the server's wait: its leases count from after it (OnSent)", async () => {
    await database.clean();
    await store.insertTasks({ tasks: [newTask()] });
    const lock = lockName('claim', database.name);
    await locker.query('SELECT GET_LOCK(?, 5)', [lock]);
    const calls: (number | undefined)[] = [];
    const claiming = store.claimTasks({ ...claimParams(), onSent: (waited) => calls.push(waited) });
    await waitFor(async () => {
      const rows = await database.query("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE command = 'Query' AND info LIKE 'SELECT GET_LOCK%'");
      return Number(rows[0]!.n) > 0;
    }, 'the claim to wait on the claim lock');
    const waitingSeen = performance.now();
    // The hold is what is measured, not a synchronization: the claim is known to wait from here on.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const held = performance.now() - waitingSeen;
    await locker.query('DO RELEASE_LOCK(?)', [lock]);
    expect(await claiming).toHaveLength(1);
    expect(calls[0]).toBeUndefined(); // put on its connection
    expect(calls).toHaveLength(2);
    expect(calls[1]).toBeGreaterThanOrEqual(held - 5); // the server's clock, to its microsecond
  });
});
