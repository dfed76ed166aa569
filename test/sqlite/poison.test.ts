/**
 * The poison pill on SQLite (issue 11, B3; the PostgreSQL case is
 * test/faults/poison.fast.test.ts): a task whose handler kills its process,
 * beside three innocent tasks in the same process (concurrency 4,
 * maxAttempts 3), the process restarted each time it dies. The poison is
 * dead-lettered after 2 + maxAttempts crashes; the innocents succeed with no
 * attempt spent on its crashes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../src/core/ids.js';
import { Scope } from '../../src/core/scope.js';
import { QUARANTINE_AFTER_LEASE_EXPIRIES, type NewTask } from '../../src/core/task.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { waitFor } from '../helpers/wait.js';
import { ChildWorker, killAllChildren } from '../process/harness.js';

const MAX_ATTEMPTS = 3;

function newTask(payload: unknown): NewTask {
  return {
    id: uuidv7(),
    taskType: 'work',
    payloadJson: JSON.stringify(payload),
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: MAX_ATTEMPTS,
    owner: null,
    idempotencyKey: null,
    traceId: null,
  };
}

describe('SQLite: a poison pill', () => {
  let dir: string;
  let store: SqliteStore;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-poison-'));
    store = new SqliteStore({ path: join(dir, 'tasks.db') });
    await store.migrate();
  });
  afterEach(() => killAllChildren());
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is dead-lettered after 2 + maxAttempts crashes of its process; the tasks beside it succeed uncharged', async () => {
    const tasks = [newTask({ exit: true }), ...Array.from({ length: 3 }, () => newTask({ ms: 1500 }))];
    await store.insertTasks({ tasks });
    const [poison, ...innocent] = tasks.map((t) => t.id);
    const path = join(dir, 'tasks.db');
    const spawnWorker = (label: string): ChildWorker => {
      const config: { label: string; path: string } = { label, path };
      return new ChildWorker(config, join(import.meta.dirname, 'poison-child.ts'));
    };
    let restarts = 0;
    let current = spawnWorker('poison-0');
    const settled = async (): Promise<boolean> => {
      const rows = await Promise.all(tasks.map((t) => store.getTask({ id: t.id, scope: Scope.global() })));
      return rows.every((row) => row!.status === 'SUCCESS' || row!.status === 'FAILED');
    };
    await waitFor(
      async () => {
        if (await settled()) return true;
        if (current.exitCode() !== undefined) current = spawnWorker(`poison-${++restarts}`);
        return false;
      },
      'the poison and its neighbours to settle',
      120_000,
      100,
    );
    await current.stop().catch(() => undefined);

    const crashes = QUARANTINE_AFTER_LEASE_EXPIRIES + MAX_ATTEMPTS;
    expect(await store.getTask({ id: poison!, scope: Scope.global() })).toMatchObject({ status: 'FAILED', lastErrorCode: 'LEASE_EXPIRED' });
    expect((await store.listAttempts({ taskId: poison! })).map((a) => a.outcome)).toEqual(Array.from({ length: crashes }, () => 'LEASE_EXPIRED'));
    expect((await store.listDeadLetters({ scope: Scope.global(), limit: 10 })).map((l) => l.originalTaskId)).toEqual([poison]);
    expect(restarts).toBeGreaterThanOrEqual(crashes);
    for (const id of innocent) {
      const task = (await store.getTask({ id, scope: Scope.global() }))!;
      expect(task.status, id).toBe('SUCCESS');
      expect(task.attemptCount - task.attemptBase, id).toBe(1);
    }
  }, 180_000);
});
