/**
 * The transfer side store (store/transfer.ts, what `tasklease move` reads and
 * writes) on every dialect: pages in key order that resume after a key
 * (composite keys too), finished-only pages, rows that round-trip every
 * column kind exactly, upserts that overwrite and never duplicate, and
 * imported action ids the database numbers past.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import { transferStoreOf, type TransferRow, type TransferStore, type TransferTableName, type TransferValue } from '../../src/store/transfer.js';
import type { Store } from '../../src/store/types.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import type { StoreFactory } from '../helpers/factory.js';
import { claimParams, FAILURE, leaseOf, newTask } from './fixtures.js';

const G = Scope.global();

async function everything(transfer: TransferStore, table: TransferTableName, limit: number, finishedOnly = false): Promise<TransferRow[]> {
  const rows: TransferRow[] = [];
  let after: TransferValue[] | null = null;
  do {
    const page = await transfer.exportRows({ table, after, limit, finishedOnly });
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    rows.push(...page.rows);
    after = page.next;
  } while (after !== null);
  return rows;
}

export function runTransferConformance(factory: StoreFactory): void {
  describe(`Store transfer: ${factory.dialect}`, () => {
    let store: Store;
    let transfer: TransferStore;
    beforeEach(async () => {
      store = await factory.create();
      transfer = await transferStoreOf(store);
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    /** Three tasks: one finished with two attempts and a failure, one running, one waiting. */
    async function history(): Promise<{ finished: string; running: string; waiting: string }> {
      const [a, b, c] = (await store.insertTasks({ tasks: [newTask(), newTask(), newTask({ taskType: 'beta' })] })).map((r) => r.task);
      const [first] = await store.claimTasks(claimParams({ limit: 1 }));
      await store.finishAttempts({ outcomes: [{ kind: 'RETRY', lease: leaseOf(first!), failure: FAILURE, retryDelayMs: 0, progress: null }] });
      await store.recover({ batchSize: 10 });
      const claimed = await store.claimTasks(claimParams({ limit: 2 }));
      const again = claimed.find((task) => task.id === first!.id)!;
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(again), artifactId: null, resultJson: '{"ok":true}', progress: null }] });
      const running = claimed.find((task) => task.id !== first!.id)!;
      return { finished: first!.id, running: running.id, waiting: [a, b, c].map((t) => t!.id).find((id) => id !== first!.id && id !== running.id)! };
    }

    it('pages every table in key order, resuming after the last key (composite keys too); finishedOnly keeps finished tasks and their history', async () => {
      const ids = await history();
      const tasks = await everything(transfer, 'tasks', 1);
      expect(tasks.map((row) => row.id)).toEqual([ids.finished, ids.running, ids.waiting].sort());
      expect(await transfer.countRows({ table: 'tasks' })).toBe(3);
      const attempts = await everything(transfer, 'attempts', 1);
      const keys = attempts.map((row) => `${String(row.task_id)}#${String(row.attempt)}`);
      expect(keys).toEqual([...keys].sort());
      expect(attempts.filter((row) => row.task_id === ids.finished).map((row) => row.attempt)).toEqual([1, 2]);
      expect(attempts).toHaveLength(3);
      expect((await everything(transfer, 'tasks', 2, true)).map((row) => row.id)).toEqual([ids.finished]);
      expect((await everything(transfer, 'attempts', 2, true)).map((row) => row.attempt)).toEqual([1, 2]);
      expect((await everything(transfer, 'failures', 2, true)).map((row) => row.task_id)).toEqual([ids.finished]);
      expect(await transfer.countRows({ table: 'attempts', finishedOnly: true })).toBe(2);
      expect(await transfer.countRows({ table: 'tasks', finishedOnly: true })).toBe(1);
    });

    it('round-trips every column kind exactly, and a re-import overwrites instead of duplicating', async () => {
      const ids = await history();
      const before = await everything(transfer, 'tasks', 100);
      const running = before.find((row) => row.id === ids.running)!;
      expect(running).toMatchObject({ status: 'RUNNING', lease_owner: 'w1', attempt_count: 1 });
      expect(running.lease_until).toBeInstanceOf(Date);
      const crafted: TransferRow = {
        ...running,
        id: '0190ffff-0000-7000-8000-000000000001',
        payload_json: '{"text":"żółć ✓ \\u0000-free","n":12345678901}',
        progress_total: 2 ** 40,
        progress_processed: 0,
        progress_succeeded: 0,
        progress_failed: 0,
        progress_skipped: 0,
        progress_message: 'half way',
        available_at: new Date('2026-01-02T03:04:05.678Z'),
        idempotency_key: 'crafted-1',
      };
      expect(await transfer.importRows({ table: 'tasks', rows: [crafted] })).toBe(1);
      const [read] = (await everything(transfer, 'tasks', 100)).filter((row) => row.id === crafted.id);
      expect(read).toEqual(crafted);
      // Again, changed: one row, the new values.
      await transfer.importRows({ table: 'tasks', rows: [{ ...crafted, status: 'SUCCESS', lease_owner: null, lease_until: null }] });
      expect(await transfer.countRows({ table: 'tasks' })).toBe(4);
      expect((await store.getTask({ id: String(crafted.id), scope: G }))?.status).toBe('SUCCESS');
      // Another id with the crafted task's idempotency key: refused, and the crafted task keeps its row.
      await expect(
        transfer.importRows({ table: 'tasks', rows: [{ ...crafted, id: '0190ffff-0000-7000-8000-000000000002', status: 'QUEUED' }] }),
      ).rejects.toThrow();
      expect(await transfer.countRows({ table: 'tasks' })).toBe(4);
      expect((await store.getTask({ id: String(crafted.id), scope: G }))?.status).toBe('SUCCESS');
      const failures = await everything(transfer, 'failures', 100);
      await transfer.importRows({ table: 'failures', rows: failures });
      expect(await everything(transfer, 'failures', 100)).toEqual(failures);
      expect(failures[0]!.retryable).toBe(true);
      const policy = await store.savePolicy({
        policy: { policyKey: 'TYPE:alpha', taskType: 'alpha', maxConcurrency: 3, maxAttempts: null, retryBaseDelayMs: 2 ** 33, enabled: false },
      });
      const policies = await everything(transfer, 'policies', 10);
      expect(policies).toEqual([
        {
          policy_key: 'TYPE:alpha',
          task_type: 'alpha',
          max_concurrency: 3,
          max_attempts: null,
          retry_base_delay_ms: 2 ** 33,
          enabled: false,
          update_time: policy.updatedAt,
          rate_limit: null,
          rate_period_ms: null,
        },
      ]);
      await transfer.importRows({ table: 'policies', rows: [{ ...policies[0]!, enabled: true }] });
      expect((await store.listPolicies())[0]!.enabled).toBe(true);
    });

    it('pages the queue history by its key with a time in it (grain, minute, type, process), and re-imports it without duplicates', async () => {
      const history = await historyStoreOf(store);
      const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000;
      const rows = Array.from({ length: 12 }, (_v, i) => ({
        minuteStart: new Date(minute - (i % 6) * 60_000),
        taskType: i < 6 ? 'alpha' : 'beta',
        counts: { ...emptyCounts(), submitted: i + 1 },
      }));
      await history.add('host-a:1', rows);
      await history.add('host-b:2', rows.slice(0, 5));
      const paged = await everything(transfer, 'queueStats', 4);
      expect(paged).toHaveLength(17);
      const keys = paged.map((row) => [row.grain, (row.bucket_start as Date).toISOString(), row.task_type, row.process_id].join('|'));
      expect(new Set(keys).size).toBe(17);
      // In key order: by minute, then type, then process.
      expect(keys).toEqual([...keys].sort());
      expect(paged.reduce((sum, row) => sum + Number(row.submitted), 0)).toBe(78 + 15);
      expect(await transfer.importRows({ table: 'queueStats', rows: paged })).toBe(17);
      expect(await transfer.countRows({ table: 'queueStats' })).toBe(17);
      expect(await everything(transfer, 'queueStats', 100)).toEqual(paged);
    });

    it('numbers new action rows past imported ids', async () => {
      const ids = await history();
      const at = new Date('2026-03-04T05:06:07.089Z');
      const imported: TransferRow = {
        id: 7000,
        task_id: ids.waiting,
        action: 'PAUSE',
        from_status: 'QUEUED',
        to_status: 'PAUSED',
        actor: 'cli:ops',
        actor_name: null,
        detail: null,
        acted_at: at,
      };
      await transfer.importRows({ table: 'actions', rows: [imported] });
      await store.changeStatus({ ids: [ids.waiting], scope: G, from: ['QUEUED'], to: 'PAUSED', record: { action: 'PAUSE', actor: { id: 'library' } } });
      const actions = await everything(transfer, 'actions', 10);
      expect(actions[0]).toEqual(imported);
      expect(actions).toHaveLength(2);
      expect(Number(actions[1]!.id)).toBeGreaterThan(7000);
    });
  });
}
