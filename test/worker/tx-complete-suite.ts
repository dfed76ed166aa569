/**
 * Exactly-once effects (issue 11): a handler completes its task inside its
 * own transaction with ctx.complete(tx), so that its writes and the fenced
 * SUCCESS commit together — and a zombie attempt (its lease expired and taken
 * over, the worker none the wiser) has its effect rolled back with it.
 * PostgreSQL and MySQL; the effect table is the test's own (raw SQL here).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskAbortedError, UnsupportedError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { MysqlStore } from '../../src/store/mysql/store.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

/** A caller's transaction on the same database, and the raw SQL the test needs around it. */
interface UserTx {
  handle: unknown;
  insertEffect(taskId: string, attempt: number): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
}

interface TxKit {
  createEffects(): Promise<void>;
  /** The effect rows of one task. */
  effects(taskId: string): Promise<{ taskId: string; attempt: number }[]>;
  /** Makes a lease look expired to the database (the worker holding it is not told). */
  expireLease(taskId: string): Promise<void>;
  /** Runs `work` in a transaction: committed if it returns, rolled back if it throws. */
  inTransaction(work: (tx: UserTx) => Promise<void>): Promise<void>;
}

function kitFor(store: Store): TxKit {
  return store.dialect === 'postgres' ? postgresKit(store as unknown as PostgresStore) : mysqlKit(store as unknown as MysqlStore);
}

function postgresKit(store: PostgresStore): TxKit {
  const effects = `"${store.schema}".test_effects`;
  return {
    createEffects: async () => void (await store.pool.query(`CREATE TABLE IF NOT EXISTS ${effects} (task_id text, attempt int)`)),
    effects: async (taskId) =>
      (await store.pool.query(`SELECT task_id, attempt FROM ${effects} WHERE task_id = $1 ORDER BY attempt`, [taskId])).rows.map((r) => ({
        taskId: r.task_id,
        attempt: r.attempt,
      })),
    expireLease: async (taskId) =>
      void (await store.pool.query(`UPDATE "${store.schema}".system_async_task SET lease_until = now() - interval '1 second' WHERE id = $1`, [taskId])),
    inTransaction: async (work) => {
      const client = await store.pool.connect();
      try {
        await client.query('BEGIN');
        await work({
          handle: client,
          insertEffect: async (taskId, attempt) => void (await client.query(`INSERT INTO ${effects} VALUES ($1, $2)`, [taskId, attempt])),
          commit: async () => void (await client.query('COMMIT')),
          rollback: async () => void (await client.query('ROLLBACK')),
        });
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
  };
}

function mysqlKit(store: MysqlStore): TxKit {
  const pool = store.db.pool;
  return {
    createEffects: async () => void (await pool.query('CREATE TABLE IF NOT EXISTS test_effects (task_id varchar(64), attempt int) ENGINE=InnoDB')),
    effects: async (taskId) => {
      const [rows] = await pool.query('SELECT task_id, attempt FROM test_effects WHERE task_id = ? ORDER BY attempt', [taskId]);
      return (rows as { task_id: string; attempt: number }[]).map((r) => ({ taskId: r.task_id, attempt: Number(r.attempt) }));
    },
    expireLease: async (taskId) => void (await pool.query('UPDATE system_async_task SET lease_until = NOW(3) - INTERVAL 1 SECOND WHERE id = ?', [taskId])),
    inTransaction: async (work) => {
      const conn = await pool.getConnection();
      try {
        await conn.beginTransaction();
        await work({
          handle: conn,
          insertEffect: async (taskId, attempt) => void (await conn.query('INSERT INTO test_effects VALUES (?, ?)', [taskId, attempt])),
          commit: () => conn.commit(),
          rollback: () => conn.rollback(),
        });
        await conn.commit();
      } catch (error) {
        await conn.rollback();
        throw error;
      } finally {
        conn.release();
      }
    },
  };
}

/** The store, counting the outcome writes the worker makes on its own connections (not inside a caller's transaction). */
function countingOwnWrites(store: Store): { store: Store; writes: () => number } {
  let writes = 0;
  const overrides: PropertyDescriptorMap = {
    finishAttempts: {
      value: (params: Parameters<Store['finishAttempts']>[0]) => {
        if (params.transaction === undefined) writes += params.outcomes.length;
        return store.finishAttempts(params);
      },
    },
    finishAndClaim: {
      value: (params: Parameters<Store['finishAndClaim']>[0]) => {
        writes += params.outcomes.length;
        return store.finishAndClaim(params);
      },
    },
  };
  return { store: Object.create(store, overrides) as Store, writes: () => writes };
}

const options = { ...FAST_WORKER, recoveryIntervalMs: 0, concurrency: 1 };
const G = Scope.global();

export function runTxCompleteSuite(factory: StoreFactory): void {
  if (factory.dialect === 'sqlite') {
    runUnsupported(factory);
    return;
  }
  describe(`ctx.complete(tx) on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('keeps the ctx.log lines logged before ctx.complete(tx): they are written first, while the lease still fences them; later ones go to the process log only', async () => {
      const kit = kitFor(env.store);
      await kit.createEffects();
      const t = defineTask({
        type: 'tx-logged',
        execute: (ctx: TaskContext) =>
          kit.inTransaction(async (tx) => {
            ctx.log.info('inserting the effect', { attempt: ctx.attempt });
            await tx.insertEffect(ctx.taskId, ctx.attempt);
            ctx.log.warn('completing in my transaction');
            await ctx.complete(tx.handle, { status: 'SUCCESS' });
            ctx.log.info('after complete: the process log only'); // the task row is the handler's until it commits
          }),
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const processLog: string[] = [];
      worker.on('logged', ({ message }) => processLog.push(message));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the task to succeed');
      await worker.stop();
      expect((await env.store.listTaskLogs({ taskId: task.id, limit: 10 })).map((l) => [l.attempt, l.level, l.message])).toEqual([
        [1, 'info', 'inserting the effect'],
        [1, 'warn', 'completing in my transaction'],
      ]);
      expect(processLog).toEqual(['inserting the effect', 'completing in my transaction', 'after complete: the process log only']);
    });

    it('commits the effect and SUCCESS together; the worker writes no second outcome and still reports the completion (event, metric)', async () => {
      const kit = kitFor(env.store);
      await kit.createEffects();
      const counted = countingOwnWrites(env.store);
      const t = defineTask({
        type: 'tx-effect',
        execute: (ctx: TaskContext) =>
          kit.inTransaction(async (tx) => {
            await tx.insertEffect(ctx.taskId, ctx.attempt);
            await ctx.complete(tx.handle, { status: 'SUCCESS', result: { by: ctx.attempt } });
          }),
      });
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const registry = new Registry();
      createMetrics({ registry }).attachWorker(worker);
      const completed: string[] = [];
      worker.on('completed', ({ task, status }) => completed.push(`${task.id}:${status}`));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(() => completed.length > 0, 'the completed event');
      expect(completed).toEqual([`${task.id}:SUCCESS`]);
      expect(await env.store.getTask({ id: task.id, scope: G })).toMatchObject({ status: 'SUCCESS', result: { by: 1 }, leaseOwner: null });
      expect(await kit.effects(task.id)).toEqual([{ taskId: task.id, attempt: 1 }]);
      const attempts = await env.store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => a.outcome)).toEqual(['SUCCESS']);
      const successes = (await registry.getSingleMetric('async_task_completed_total')!.get()).values.filter(
        (v) => v.labels.status === 'SUCCESS' && v.labels.task_type === 'tx-effect',
      );
      expect(successes.map((v) => v.value)).toEqual([1]);
      await worker.stop();
      expect(counted.writes()).toBe(0);
    });

    it('a zombie attempt (lease expired and taken over) cannot commit its effect: LEASE_LOST, rolled back; the new holder’s effect and SUCCESS stand', async () => {
      const kit = kitFor(env.store);
      await kit.createEffects();
      let releaseZombie!: () => void;
      const zombieMayGo = new Promise<void>((resolve) => (releaseZombie = resolve));
      let zombieStarted = false;
      const zombieErrors: unknown[] = [];
      const t = defineTask({
        type: 'tx-zombie',
        execute: async (ctx: TaskContext) => {
          if (ctx.attempt === 1) {
            zombieStarted = true;
            await zombieMayGo;
          }
          await kit
            .inTransaction(async (tx) => {
              await tx.insertEffect(ctx.taskId, ctx.attempt);
              await ctx.complete(tx.handle, { status: 'SUCCESS', result: { by: ctx.attempt } });
            })
            .catch((error: unknown) => {
              zombieErrors.push(error);
              throw error;
            });
        },
      });
      // The zombie's worker never renews nor checks its lease while the test runs: it does not know it lost it.
      const zombie = env.track(createWorker({ store: env.store, tasks: [t], ...options, leaseMs: 120_000, heartbeatIntervalMs: 60_000 }));
      const zombieLost: string[] = [];
      zombie.on('leaseLost', ({ reason }) => zombieLost.push(reason));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      zombie.start();
      await waitFor(() => zombieStarted, 'the first attempt to start');
      await kit.expireLease(task.id);
      expect((await env.store.recover({ batchSize: 10 })).requeued).toBe(1);
      const heir = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      heir.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the second attempt to succeed');
      releaseZombie();
      await waitFor(() => zombieErrors.length > 0, 'the zombie to try completing');
      expect(zombieErrors[0]).toBeInstanceOf(TaskAbortedError);
      expect(zombieErrors[0]).toMatchObject({ code: 'LEASE_LOST' });
      expect(zombieLost).toEqual(['write']);
      expect(await kit.effects(task.id)).toEqual([{ taskId: task.id, attempt: 2 }]);
      expect(await env.store.getTask({ id: task.id, scope: G })).toMatchObject({ status: 'SUCCESS', result: { by: 2 }, attemptCount: 2 });
      const attempts = await env.store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'LEASE_EXPIRED'],
        [2, 'SUCCESS'],
      ]);
    });

    it('while a completed transaction stays open, the worker keeps renewing its other leases (the locked row is left out)', async () => {
      const kit = kitFor(env.store);
      await kit.createEffects();
      let commitNow!: () => void;
      const mayCommit = new Promise<void>((resolve) => (commitNow = resolve));
      let finishOther!: () => void;
      const otherMayFinish = new Promise<void>((resolve) => (finishOther = resolve));
      let completedInTx = false;
      const t = defineTask<{ hold: boolean }>({
        type: 'tx-hold',
        execute: async (ctx: TaskContext, { hold }) => {
          if (!hold) return otherMayFinish;
          await kit.inTransaction(async (tx) => {
            await tx.insertEffect(ctx.taskId, ctx.attempt);
            await ctx.complete(tx.handle);
            completedInTx = true;
            await mayCommit;
          });
        },
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options, concurrency: 2 }));
      const lost: string[] = [];
      worker.on('leaseLost', ({ task }) => lost.push(task.id));
      const renewals: number[] = [];
      worker.on('heartbeat', ({ renewed }) => completedInTx && renewals.push(renewed));
      const client = createClient({ store: env.store, tasks: [t] });
      const [other, held] = await client.submitMany([
        { type: 'tx-hold', payload: { hold: false } },
        { type: 'tx-hold', payload: { hold: true } },
      ]);
      worker.start();
      try {
        // A heartbeat that asked for the held row would wait for its lock, and so would every other lease of the worker.
        await waitFor(() => renewals.length >= 3, 'three heartbeats while the completing transaction is open');
        expect(renewals.slice(0, 3)).toEqual([1, 1, 1]);
      } finally {
        commitNow(); // even on failure: an open transaction would hold the worker's stop
        finishOther();
      }
      for (const { task } of [other!, held!]) {
        await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', `task ${task.id} to succeed`);
      }
      expect(lost).toEqual([]);
      expect(await kit.effects(held!.task.id)).toEqual([{ taskId: held!.task.id, attempt: 1 }]);
    });

    it('a transaction rolled back after ctx.complete leaves the task to the handler’s own outcome', async () => {
      const kit = kitFor(env.store);
      await kit.createEffects();
      let runs = 0;
      const t = defineTask({
        type: 'tx-rollback',
        execute: async (ctx: TaskContext) => {
          runs += 1;
          await kit.inTransaction(async (tx) => {
            await tx.insertEffect(ctx.taskId, ctx.attempt);
            await ctx.complete(tx.handle, { status: 'SUCCESS', result: { by: ctx.attempt } });
            if (ctx.attempt === 1) throw new Error('the commit failed'); // rolled back: effect and completion undone
          });
        },
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'SUCCESS', 'the retry to succeed');
      expect(runs).toBe(2);
      expect(await kit.effects(task.id)).toEqual([{ taskId: task.id, attempt: 2 }]);
      const attempts = await env.store.listAttempts({ taskId: task.id });
      expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [1, 'FAILED'],
        [2, 'SUCCESS'],
      ]);
    });
  });
}

/** SQLite: no transaction of the handler's can hold the outcome. The capability says so; the call throws UNSUPPORTED, and the task fails for good. */
function runUnsupported(factory: StoreFactory): void {
  describe(`ctx.complete(tx) on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('is refused with UNSUPPORTED (capabilities.transactionalComplete false), and a handler that lets it escape fails for good', async () => {
      expect(env.store.capabilities.transactionalComplete).toBe(false);
      const thrown: unknown[] = [];
      const t = defineTask({
        type: 'tx-unsupported',
        execute: (ctx: TaskContext) =>
          ctx.complete({}).catch((error: unknown) => {
            thrown.push(error);
            throw error;
          }),
      });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {}, { maxAttempts: 3 });
      worker.start();
      await waitFor(async () => (await env.store.getTask({ id: task.id, scope: G }))?.status === 'FAILED', 'the task to fail');
      expect(thrown[0]).toBeInstanceOf(UnsupportedError);
      expect(thrown[0]).toMatchObject({ code: 'UNSUPPORTED' });
      expect(thrown).toHaveLength(1); // not retried: no retry can help
    });
  });
}
