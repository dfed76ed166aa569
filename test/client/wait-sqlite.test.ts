import Database from 'better-sqlite3';
import { describe, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { newTask } from '../store/fixtures.js';
import { expectWokenAcrossStores, runWaitSuite } from './wait-suite.js';

runWaitSuite(sqliteFactory);

describe('waitFor on sqlite, across processes', () => {
  it('wakes on another connection’s commit (the -wal file watch), not on its poll timer', async () => {
    const store = (await sqliteFactory.create()) as SqliteStore;
    // Stands in for another process: its own connection, writing the outcome the way only a commit shows.
    const other = new Database(store.db.name);
    try {
      await expectWokenAcrossStores(
        store,
        async () => (await store.insertTasks({ tasks: [newTask()] }))[0]!.task.id,
        async (id) => {
          other.prepare("UPDATE system_async_task SET status = 'SUCCESS', finish_time = update_time WHERE id = ?").run(id);
        },
      );
    } finally {
      other.close();
      await sqliteFactory.destroy(store);
    }
  });
});
