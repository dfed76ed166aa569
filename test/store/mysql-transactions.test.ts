/**
 * Submitting inside the caller's own MySQL/MariaDB transaction (the store
 * claims `transactionalSubmit`): rolled back → nothing; not yet committed →
 * invisible to every claimer; committed → claimable. Through the client, as
 * an application does it.
 */
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { MysqlStore } from '../../src/store/mysql/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestDatabase, mysqlAvailable, type TestDatabase } from '../helpers/mysql.js';
import { claimParams } from './fixtures.js';

const available = await mysqlAvailable('test/store/mysql-transactions.test.ts');

describeOnServer(available, 'MySQL/MariaDB', 'MySQL: submit inside the caller\u2019s transaction', () => {
  const invoice = defineTask<{ n: number }>({ type: 'tx.invoice', execute: () => undefined });
  const G = Scope.global();
  let database: TestDatabase;
  let store: MysqlStore;
  let caller: mysql.Connection;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = new MysqlStore({ uri: database.uri, poolSize: 3 });
    await store.migrate();
    caller = await mysql.createConnection({ uri: database.uri });
  });
  afterAll(async () => {
    await caller?.end();
    await store?.close();
    await database?.drop();
  });

  it('says it can', () => {
    expect(store.capabilities.transactionalSubmit).toBe(true);
  });

  it('rolled back: no task, nothing half-written', async () => {
    const client = createClient({ store, tasks: [invoice] });
    await caller.query('START TRANSACTION');
    const { task, created } = await client.submit(invoice, { n: 1 }, { transaction: caller });
    expect(created).toBe(true);
    const [inside] = await caller.query('SELECT COUNT(*) AS n FROM system_async_task WHERE id = ?', [task.id]);
    expect(Number((inside as { n: number }[])[0]!.n)).toBe(1); // visible inside the transaction…
    await caller.query('ROLLBACK');
    expect(await store.getTask({ id: task.id, scope: G })).toBeNull(); // …and gone after
  });

  it('uncommitted: never claimed; committed: claimable', async () => {
    const client = createClient({ store, tasks: [invoice] });
    await caller.query('START TRANSACTION');
    const submitted = await client.submitMany(
      [1, 2].map((n) => ({ type: 'tx.invoice', payload: { n } })),
      { transaction: caller },
    );
    const claims = await Promise.all([1, 2].map((n) => store.claimTasks(claimParams({ workerId: `w${n}`, taskTypes: ['tx.invoice'] }))));
    expect(claims.flat()).toEqual([]);
    expect(await store.getTask({ id: submitted[0]!.task.id, scope: G })).toBeNull();
    await caller.query('COMMIT');
    const claimed = await store.claimTasks(claimParams({ taskTypes: ['tx.invoice'] }));
    expect(claimed.map((t) => t.id).sort()).toEqual(submitted.map((s) => s.task.id).sort());
  });
});
