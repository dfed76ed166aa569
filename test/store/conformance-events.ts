/**
 * Fan-out by event on every dialect: subscriptions saved, listed and removed;
 * a publish reads them and inserts one task per subscription in one
 * transaction; idempotency keys dedupe a repeat; `build` throwing writes
 * nothing; and (stores with transactional submit) an unsubscribe waits for a
 * publish that read its row to commit, so it is wholly in that publish.
 */
import type { PoolConnection } from 'mysql2/promise';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { NewTask } from '../../src/core/task.js';
import type { MysqlStore } from '../../src/store/mysql/store.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import type { Store, Subscription, SubscriptionInput } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { newTask, useStore } from './fixtures.js';

const G = Scope.global();

const sub = (event: string, taskType: string, options: Partial<SubscriptionInput> = {}): { subscription: SubscriptionInput } => ({
  subscription: { event, taskType, priority: null, maxAttempts: null, ...options },
});

/** One task per subscription, keyed by the event's key when given (as the client does). */
const buildFor =
  (event: string, key: string | null = null, payloadJson = '{"order":1}') =>
  (subscriptions: readonly Subscription[]): NewTask[] =>
    subscriptions.map((s) =>
      newTask({
        taskType: s.taskType,
        payloadJson,
        priority: s.priority ?? 0,
        maxAttempts: s.maxAttempts ?? 3,
        idempotencyKey: key === null ? null : `event:${event}:${key}`,
      }),
    );

/** A caller's transaction on the store's own server, and what shows that another session waits on a lock it holds. */
interface CallerTx {
  begin(): Promise<void>;
  handle: unknown;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** True when the unsubscribe's DELETE is on the server, not answered: behind the publish's lock. */
  someoneWaits(): Promise<boolean>;
  release(): Promise<void>;
}

async function callerTransaction(store: Store): Promise<CallerTx | null> {
  if (store.dialect === 'postgres') {
    const pool = (store as unknown as PostgresStore).pool;
    const client: pg.PoolClient = await pool.connect();
    return {
      handle: client,
      begin: async () => void (await client.query('BEGIN')),
      commit: async () => void (await client.query('COMMIT')),
      rollback: async () => void (await client.query('ROLLBACK')),
      someoneWaits: async () =>
        // Outside the transaction: inside one, pg_stat_activity answers the snapshot of its first read.
        (await pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM%subscription%'")).rows[0]
          .n > 0,
      release: async () => client.release(),
    };
  }
  if (store.dialect === 'mysql') {
    const mysqlStore = store as unknown as MysqlStore;
    const conn: PoolConnection = await mysqlStore.db.pool.getConnection();
    // The store's own pool may be two connections: the watcher takes one of the lease pool, the unsubscribe needs the other.
    const watcher: PoolConnection = await mysqlStore.leaseDb.pool.getConnection();
    return {
      handle: conn,
      begin: async () => void (await conn.query('START TRANSACTION')),
      commit: async () => void (await conn.query('COMMIT')),
      rollback: async () => void (await conn.query('ROLLBACK')),
      someoneWaits: async () => {
        const [rows] = await watcher.query(
          "SELECT count(*) AS n FROM information_schema.processlist WHERE info LIKE 'DELETE FROM system_async_task_subscription%'",
        );
        return Number((rows as { n: unknown }[])[0]!.n) > 0;
      },
      release: async () => {
        conn.release();
        watcher.release();
      },
    };
  }
  return null;
}

export function runEventConformance(factory: StoreFactory): void {
  describe(`Store events: ${factory.dialect}`, () => {
    const current = useStore(factory);

    it('saves, updates, lists (filtered) and removes subscriptions', async () => {
      const { store } = current;
      const saved = await store.saveSubscription(sub('order.created', 'email', { priority: 5 }));
      expect(saved).toMatchObject({ event: 'order.created', taskType: 'email', priority: 5, maxAttempts: null });
      expect(saved.createdAt).toBeInstanceOf(Date);
      const updated = await store.saveSubscription(sub('order.created', 'email', { maxAttempts: 7 }));
      expect(updated).toMatchObject({ priority: null, maxAttempts: 7 });
      expect(updated.createdAt.getTime()).toBe(saved.createdAt.getTime());
      await store.saveSubscription(sub('order.created', 'audit'));
      await store.saveSubscription(sub('order.paid', 'email'));
      const key = (s: Subscription) => `${s.event}/${s.taskType}`;
      expect((await store.listSubscriptions({})).map(key)).toEqual(['order.created/audit', 'order.created/email', 'order.paid/email']);
      expect((await store.listSubscriptions({ event: 'order.created' })).map(key)).toEqual(['order.created/audit', 'order.created/email']);
      expect((await store.listSubscriptions({ taskType: 'email' })).map(key)).toEqual(['order.created/email', 'order.paid/email']);
      expect((await store.listSubscriptions({ event: 'order.paid', taskType: 'audit' })).map(key)).toEqual([]);
      expect(await store.deleteSubscription({ event: 'order.created', taskType: 'email' })).toBe(true);
      expect(await store.deleteSubscription({ event: 'order.created', taskType: 'email' })).toBe(false);
      expect((await store.listSubscriptions({})).map(key)).toEqual(['order.created/audit', 'order.paid/email']);
    });

    it('publishes one task per subscribed type, with the subscription handed to build; no subscriber: nothing', async () => {
      const { store } = current;
      await store.saveSubscription(sub('order.created', 'email', { priority: 9 }));
      await store.saveSubscription(sub('order.created', 'audit', { maxAttempts: 1 }));
      await store.saveSubscription(sub('order.paid', 'ledger'));
      const { subscriptions, results } = await store.publishEvent({ event: 'order.created', build: buildFor('order.created') });
      expect(subscriptions.map((s) => s.taskType)).toEqual(['audit', 'email']);
      expect(results.map((r) => [r.created, r.task.taskType, r.task.priority, r.task.maxAttempts, r.task.status])).toEqual([
        [true, 'audit', 0, 1, 'QUEUED'],
        [true, 'email', 9, 3, 'QUEUED'],
      ]);
      expect(results[0]!.task.payload).toEqual({ order: 1 });
      const page = await store.listTasks({ scope: G, limit: 10 });
      expect(page.tasks.map((t) => t.taskType).sort()).toEqual(['audit', 'email']);

      const none = await store.publishEvent({ event: 'nobody.listens', build: buildFor('nobody.listens') });
      expect(none).toEqual({ subscriptions: [], results: [] });
      expect((await store.listTasks({ scope: G, limit: 10 })).tasks).toHaveLength(2);
    });

    it('a repeat with the same key returns the existing tasks; a type subscribed in between gets its task once', async () => {
      const { store } = current;
      await store.saveSubscription(sub('user.signed-up', 'welcome'));
      await store.saveSubscription(sub('user.signed-up', 'crm'));
      const first = await store.publishEvent({ event: 'user.signed-up', build: buildFor('user.signed-up', 'u-1') });
      expect(first.results.map((r) => r.created)).toEqual([true, true]);
      const again = await store.publishEvent({ event: 'user.signed-up', build: buildFor('user.signed-up', 'u-1') });
      expect(again.results.map((r) => r.created)).toEqual([false, false]);
      expect(again.results.map((r) => r.task.id)).toEqual(first.results.map((r) => r.task.id));

      await store.saveSubscription(sub('user.signed-up', 'analytics'));
      const third = await store.publishEvent({ event: 'user.signed-up', build: buildFor('user.signed-up', 'u-1') });
      expect(third.results.map((r) => [r.task.taskType, r.created])).toEqual([
        ['analytics', true],
        ['crm', false],
        ['welcome', false],
      ]);
      const other = await store.publishEvent({ event: 'user.signed-up', build: buildFor('user.signed-up', 'u-2') });
      expect(other.results.map((r) => r.created)).toEqual([true, true, true]);
      expect((await store.listTasks({ scope: G, limit: 20 })).tasks).toHaveLength(6);
    });

    it('writes nothing when build throws', async () => {
      const { store } = current;
      await store.saveSubscription(sub('e', 'a'));
      await expect(
        store.publishEvent({
          event: 'e',
          build: () => {
            throw new Error('stale');
          },
        }),
      ).rejects.toThrow('stale');
      expect((await store.listTasks({ scope: G, limit: 10 })).tasks).toEqual([]);
    });

    it('wakes subscribers with the types a publish created', async () => {
      const { store } = current;
      await store.saveSubscription(sub('ping', 'gamma'));
      const events: { kind: string; taskTypes?: readonly string[] }[] = [];
      const off = store.subscribe((event) => events.push(event));
      await waitFor(() => (store as { listening?: boolean }).listening !== false, 'the store to listen');
      await store.publishEvent({ event: 'ping', build: buildFor('ping') });
      await waitFor(() => events.some((e) => e.kind === 'submitted' && (e.taskTypes ?? []).includes('gamma')), 'a submitted event naming gamma');
      off();
    });

    it('joins a caller’s transaction where submits can, and an unsubscribe of a row it read waits for its commit', async () => {
      const { store } = current;
      if (!store.capabilities.transactionalSubmit) {
        await expect(store.publishEvent({ event: 'x', build: buildFor('x'), transaction: {} as never })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
        return;
      }
      await store.saveSubscription(sub('invoice.sent', 'archive'));
      await store.saveSubscription(sub('invoice.sent', 'notify'));
      const tx = (await callerTransaction(store))!;
      try {
        // Rolled back: nothing.
        await tx.begin();
        await store.publishEvent({ event: 'invoice.sent', build: buildFor('invoice.sent'), transaction: tx.handle });
        await tx.rollback();
        expect((await store.listTasks({ scope: G, limit: 10 })).tasks).toEqual([]);

        await tx.begin();
        const published = await store.publishEvent({ event: 'invoice.sent', build: buildFor('invoice.sent'), transaction: tx.handle });
        expect(published.results.map((r) => r.task.taskType)).toEqual(['archive', 'notify']);
        let removed: boolean | undefined;
        const unsubscribe = store.deleteSubscription({ event: 'invoice.sent', taskType: 'notify' }).then((answer) => (removed = answer));
        await waitFor(() => tx.someoneWaits(), 'the unsubscribe to wait on the publish’s lock');
        expect(removed).toBeUndefined();
        await tx.commit();
        expect(await unsubscribe).toBe(true);
        // The publish holds the removed type's task; the next publish does not.
        expect((await store.listTasks({ scope: G, limit: 10 })).tasks.map((t) => t.taskType).sort()).toEqual(['archive', 'notify']);
        const after = await store.publishEvent({ event: 'invoice.sent', build: buildFor('invoice.sent') });
        expect(after.results.map((r) => r.task.taskType)).toEqual(['archive']);
      } finally {
        await tx.rollback().catch(() => undefined);
        await tx.release();
      }
    });
  });
}
