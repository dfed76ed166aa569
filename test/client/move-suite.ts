/**
 * moveStore (`tasklease move`) from SQLite to another store: every table
 * arrives whole while workers run on the source, no attempt starts twice,
 * the source claims nothing afterwards, a crash at any phase resumes to the
 * same end state, the way back into SQLite, and the typed refusals. Each target dialect runs it from
 * test/client/move-<dialect>.test.ts.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { allRows, MOVED_TABLES } from '../../src/client/move-copy.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import { MOVE_PHASES, moveStore, type MovePhase } from '../../src/client/move.js';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { MoveError, TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { SqliteStore } from '../../src/store/sqlite/store.js';
import { transferStoreOf, type TransferRow } from '../../src/store/transfer.js';
import type { Store } from '../../src/store/types.js';
import { createWorker, type Worker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const HOUR = 3_600_000;

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Handler starts per (task, attempt) and successes per task, whichever side ran them. */
class Runs {
  readonly starts = new Map<string, number>();
  readonly successes = new Map<string, number>();
  start(ctx: TaskContext): void {
    const key = `${ctx.task.id}#${ctx.attempt}`;
    this.starts.set(key, (this.starts.get(key) ?? 0) + 1);
  }
  succeed(ctx: TaskContext): TaskResult {
    this.successes.set(ctx.task.id, (this.successes.get(ctx.task.id) ?? 0) + 1);
    return TaskResult.success({});
  }
}

/** `slowGate`: what the slow task, and the quick ones, wait for before they succeed. */
function definitions(runs: Runs, slowGate: Promise<void>) {
  return {
    quick: defineTask({
      type: 'move.quick',
      execute: async (ctx) => {
        runs.start(ctx);
        await slowGate;
        return runs.succeed(ctx);
      },
    }),
    flaky: defineTask({
      type: 'move.flaky',
      maxAttempts: 3,
      retry: { baseDelayMs: HOUR, maxDelayMs: HOUR, jitter: 0 },
      execute: (ctx) => {
        runs.start(ctx);
        ctx.log.warn('flaky attempt', { attempt: ctx.attempt }); // per-task logs move with their task
        if (ctx.attempt === 1) throw new TaskFailure('first try fails', { code: 'FLAKY' });
        return runs.succeed(ctx);
      },
    }),
    doomed: defineTask({
      type: 'move.doomed',
      execute: (ctx) => {
        runs.start(ctx);
        throw new TaskFailure('never works', { code: 'DOOMED', retryable: false });
      },
    }),
    slow: defineTask({
      type: 'move.slow',
      execute: async (ctx) => {
        runs.start(ctx);
        await slowGate;
        return runs.succeed(ctx);
      },
    }),
  };
}

type Definitions = ReturnType<typeof definitions>;

/** Every moved table of a store, rows in key order. */
async function tables(store: Store): Promise<Record<string, TransferRow[]>> {
  const transfer = await transferStoreOf(store);
  const out: Record<string, TransferRow[]> = {};
  for (const table of MOVED_TABLES) out[table] = await allRows(transfer, table);
  return out;
}

/** The source as the target must hold it: without the move's own GLOBAL stop, schedules as they were before the stop. */
function asMoved(source: Record<string, TransferRow[]>, enabledBefore: Map<string, number>): Record<string, TransferRow[]> {
  return {
    ...source,
    policies: source.policies!.filter((row) => row.policy_key !== 'GLOBAL'),
    schedules: source.schedules!.map((row) => ({ ...row, enabled: enabledBefore.get(String(row.schedule_key)) ?? row.enabled ?? null })),
  };
}

async function statusOf(store: Store, id: string): Promise<string | undefined> {
  return (await store.getTask({ id, scope: Scope.global() }))?.status;
}

export function runMoveSuite(targets: StoreFactory): void {
  describe(`move from sqlite to ${targets.dialect}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    function tempDir(): string {
      const dir = mkdtempSync(join(tmpdir(), 'tasklease-move-'));
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
      return dir;
    }

    function sqlite(path: string): SqliteStore {
      const store = new SqliteStore({ path });
      cleanups.push(() => store.close());
      return store;
    }

    async function emptyTarget(): Promise<Store> {
      const area = await targets.openUnmigrated();
      cleanups.push(() => area.dispose());
      return area.store;
    }

    async function worker(store: Store, defs: Definitions): Promise<Worker> {
      const started = createWorker({ store, tasks: Object.values(defs), ...FAST_WORKER, concurrency: 4 });
      cleanups.push(() => started.stop());
      await started.start();
      return started;
    }

    /** Policy, schedule, token, subscription on the source: what a move copies besides tasks. */
    async function configure(store: Store, defs: Definitions): Promise<void> {
      const client = createClient({ store, tasks: Object.values(defs) });
      await client.policies.update(defs.quick.type, { maxConcurrency: 4, retryBaseDelayMs: 25 });
      await client.schedules.save({ key: 'nightly', taskType: defs.quick.type, cron: '0 3 * * *', payload: { night: true } });
      await client.schedules.save({ key: 'paused-one', taskType: defs.quick.type, cron: '0 4 * * *', enabled: false });
      await client.tokens.create({ name: 'ops', role: 'operator' });
      await client.subscribe({ event: 'order.created', taskType: defs.quick.type, priority: 2 });
      // A type no worker here serves: its limit stays as set, on both sides.
      await client.adaptive.set('move.adaptive', { minLimit: 2, maxLimit: 9, codes: ['HTTP_503'], failureThreshold: 0.25 });
      // Queue history of two processes (minute rows and an hour's roll-up): the dashboard's charts move with the tasks.
      const history = await historyStoreOf(store);
      const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000;
      const counts = { ...emptyCounts(), submitted: 5, succeeded: 4, failed: 1 };
      await history.add('host-a:1', [
        { minuteStart: new Date(minute - 60_000), taskType: defs.quick.type, counts },
        { minuteStart: new Date(minute - 120_000), taskType: defs.quick.type, counts },
      ]);
      await history.add('host-b:2', [{ minuteStart: new Date(minute - 60_000), taskType: defs.quick.type, counts }]);
    }

    /** Waiting tasks of every kind a worker does not touch: delayed, cancelled, paused. */
    async function waiting(store: Store, defs: Definitions): Promise<{ delayed: string; cancelled: string; paused: string }> {
      const client = createClient({ store, tasks: Object.values(defs) });
      const delayed = (await client.submit(defs.quick, {}, { delayMs: HOUR, idempotencyKey: 'delayed-1' })).task.id;
      const cancelled = (await client.submit(defs.quick, {}, { delayMs: HOUR })).task.id;
      await client.requestCancellation(cancelled);
      const paused = (await client.submit(defs.quick, {}, { delayMs: HOUR })).task.id;
      await client.pause(paused);
      return { delayed, cancelled, paused };
    }

    it('moves every table while two workers run on the source; nothing runs twice; the target drains the rest', async () => {
      const runs = new Runs();
      const slowGate = gate();
      const defs = definitions(runs, slowGate.promise);
      const path = join(tempDir(), 'tasks.db');
      const source = sqlite(path);
      await source.migrate();
      const client = createClient({ store: source, tasks: Object.values(defs) });
      await configure(source, defs);
      const { delayed, cancelled, paused } = await waiting(source, defs);
      const doomed = (await client.submit(defs.doomed, {})).task.id;
      const flaky = (await client.submit(defs.flaky, {})).task.id;
      const slow = (await client.submit(defs.slow, {})).task.id;
      const workers = [await worker(source, defs), await worker(sqlite(path), defs)];
      await waitFor(async () => (await statusOf(source, doomed)) === 'FAILED', 'the doomed task to fail for good');
      await waitFor(async () => (await statusOf(source, flaky)) === 'RETRY_WAIT', 'the flaky task to wait for its retry');
      await waitFor(async () => (await statusOf(source, slow)) === 'RUNNING', 'the slow task to run');
      // Work the workers hold leases on through the first copy and the stop (the gate opens in the wait), and more that waits.
      const quick = (await client.submitMany(Array.from({ length: 150 }, () => ({ type: defs.quick.type, payload: {} })))).map((r) => r.task.id);
      await waitFor(async () => (await source.leasedCounts())[defs.quick.type]! >= 4, 'quick tasks to run on the source');

      const target = await emptyTarget();
      const phases: MovePhase[] = [];
      let leasesSeen = 0;
      const report = await moveStore({
        source,
        target,
        batchSize: 20,
        pollMs: 10,
        waitLeasesMs: 60_000,
        afterPhase: (phase) => void phases.push(phase),
        onProgress: (progress) => {
          // The slow task holds its lease into the wait: it may finish only once the move waits for it.
          if (progress.step === 'leases' && progress.done > 0) {
            leasesSeen = Math.max(leasesSeen, progress.done);
            slowGate.open();
          }
        },
      });
      slowGate.open();
      expect(phases).toEqual([...MOVE_PHASES]);
      expect(leasesSeen).toBeGreaterThan(0);
      expect(report.resumedAfter).toBeNull();
      expect(report.target).toEqual(report.source);
      expect(report.source.tasks).toMatchObject({ FAILED: 1, RETRY_WAIT: 1, CANCELLED: 1, PAUSED: 1, RUNNING: 0, CANCEL_REQUESTED: 0 });
      // The leases held when claims stopped ended on the source; what was never claimed moved as QUEUED.
      expect(report.source.tasks.SUCCESS).toBeGreaterThanOrEqual(5);
      expect(report.source.tasks.QUEUED).toBeGreaterThanOrEqual(100);
      expect(await statusOf(target, slow)).toBe('SUCCESS');

      // The source is retired: an old worker's claim (any type) gets nothing, though tasks wait there.
      await Promise.all(workers.map((w) => w.stop()));
      const claimed = await source.claimTasks({
        workerId: 'old-worker',
        taskTypes: Object.values(defs).map((d) => d.type),
        limit: 100,
        leaseMs: 5000,
        globalConcurrency: 100,
        typeConcurrency: 100,
      });
      expect(claimed).toEqual([]);
      expect((await source.listPolicies()).find((p) => p.policyKey === 'GLOBAL')?.enabled).toBe(false);
      const sourceSchedules = (await tables(source)).schedules!;
      expect(sourceSchedules.map((row) => row.enabled)).toEqual([0, 0]);

      // Every row arrived as it is on the source, history too.
      const moved = await tables(target);
      expect(moved.logs!.map((row) => row.message)).toContain('flaky attempt');
      expect(moved.queueStats!.map((row) => row.process_id).sort()).toEqual(['host-a:1', 'host-a:1', 'host-b:2']);
      expect(moved).toEqual(
        asMoved(
          await tables(source),
          new Map([
            ['nightly', 1],
            ['paused-one', 0],
          ]),
        ),
      );
      expect(moved.failures!.map((row) => row.task_id).sort()).toEqual([doomed, flaky].sort());
      expect(moved.deadLetters!.map((row) => row.original_task_id)).toEqual([doomed]);
      expect(moved.actions!.map((row) => row.action).sort()).toEqual(['CANCEL', 'PAUSE']);
      expect(moved.tokens!.map((row) => row.name)).toEqual(['ops']);
      expect(moved.subscriptions!.map((row) => [row.event_name, row.priority])).toEqual([['order.created', 2]]);
      expect(moved.adaptive!.map((row) => [row.task_type, row.failure_threshold, row.current_limit])).toEqual([['move.adaptive', 0.25, 9]]);
      expect(moved.limitChanges!.map((row) => row.cause_kind)).toEqual(['set']);
      expect(await statusOf(target, cancelled)).toBe('CANCELLED');
      expect(await statusOf(target, paused)).toBe('PAUSED');

      // Workers on the target run what waited, each task once; the delayed and the retrying one brought forward.
      const targetClient = createClient({ store: target, tasks: Object.values(defs) });
      await targetClient.reschedule(delayed, { delayMs: 0 });
      await targetClient.reschedule(flaky, { delayMs: 0 });
      await worker(target, defs);
      await waitFor(
        async () => {
          const counts = await target.countByStatus({ scope: Scope.global() });
          return counts.QUEUED + counts.RETRY_WAIT + counts.RUNNING === 0;
        },
        'the target to drain',
        60_000,
      );
      const after = await target.countByStatus({ scope: Scope.global() });
      expect(after).toMatchObject({ SUCCESS: quick.length + 3, FAILED: 1, CANCELLED: 1, PAUSED: 1 });
      for (const [key, count] of runs.starts) expect(count, `attempt ${key} started`).toBe(1);
      for (const id of [...quick, slow, flaky, delayed]) expect(runs.successes.get(id), `successes of ${id}`).toBe(1);
      expect([...runs.starts.keys()].filter((key) => key.startsWith(flaky)).sort()).toEqual([`${flaky}#1`, `${flaky}#2`]);
    }, 120_000);

    it('resumes after a crash at every phase (and mid-copy) to the same end state as a move never interrupted', async () => {
      const runs = new Runs();
      const defs = definitions(runs, Promise.resolve());
      const dir = tempDir();
      const prepared = join(dir, 'prepared.db');
      {
        const store = new SqliteStore({ path: prepared });
        await store.migrate();
        const client = createClient({ store, tasks: Object.values(defs) });
        await configure(store, defs);
        const doomed = (await client.submit(defs.doomed, {})).task.id;
        const flaky = (await client.submit(defs.flaky, {})).task.id;
        const done = (await client.submitMany(Array.from({ length: 5 }, () => ({ type: defs.quick.type, payload: {} })))).map((r) => r.task.id);
        const w = createWorker({ store, tasks: Object.values(defs), ...FAST_WORKER });
        await w.start();
        try {
          await waitFor(async () => (await statusOf(store, doomed)) === 'FAILED' && (await statusOf(store, flaky)) === 'RETRY_WAIT', 'the failures');
          for (const id of done) await waitFor(async () => (await statusOf(store, id)) === 'SUCCESS', `task ${id}`);
        } finally {
          await w.stop();
        }
        await waiting(store, defs);
        await client.submitMany(Array.from({ length: 30 }, () => ({ type: defs.quick.type, payload: {} })));
        await store.close();
      }
      const copyOfSource = (name: string): Store => {
        const path = join(dir, `${name}.db`);
        copyFileSync(prepared, path);
        return sqlite(path);
      };
      // A schedule's revision and updated_at on the target are the source's at the last copy: when it was switched off there.
      const endState = async (target: Store): Promise<Record<string, TransferRow[]>> => {
        const moved = await tables(target);
        return { ...moved, schedules: moved.schedules!.map(({ revision: _r, updated_at: _u, ...row }) => row) };
      };

      const baselineTarget = await emptyTarget();
      await moveStore({ source: copyOfSource('baseline'), target: baselineTarget, batchSize: 7 });
      const expected = await endState(baselineTarget);
      expect(expected.tasks!.length).toBe(5 + 2 + 3 + 30);

      const crashes: { name: string; options: Parameters<typeof moveStore>[0] extends infer O ? Partial<O> : never }[] = [
        ...MOVE_PHASES.map((phase) => ({
          name: `after ${phase}`,
          options: {
            afterPhase: (at: MovePhase) => {
              if (at === phase) throw new Error(`crash after ${phase}`);
            },
          },
        })),
        {
          name: 'mid-copy of waiting tasks',
          options: {
            onProgress: (progress: { phase: MovePhase; step: string | null; done: number }) => {
              if (progress.phase === 'copied' && progress.step === 'tasks' && progress.done > 0) throw new Error('crash mid-copy');
            },
          },
        },
      ];
      for (const crash of crashes) {
        const source = copyOfSource(crash.name.replace(/\W+/g, '-'));
        const target = await emptyTarget();
        await expect(moveStore({ source, target, batchSize: 7, ...crash.options }), crash.name).rejects.toThrow(/crash/);
        const report = await moveStore({ source, target, batchSize: 7 });
        expect(report.target, crash.name).toEqual(report.source);
        expect(await endState(target), crash.name).toEqual(expected);
      }
    }, 180_000);

    it('waits for running leases up to waitLeasesMs (MOVE_LEASES_HELD), and a re-run resumes from the stopped source', async () => {
      const runs = new Runs();
      const slowGate = gate();
      const defs = definitions(runs, slowGate.promise);
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const slow = (await createClient({ store: source, tasks: Object.values(defs) }).submit(defs.slow, {})).task.id;
      await worker(source, defs);
      await waitFor(async () => (await statusOf(source, slow)) === 'RUNNING', 'the slow task to run');
      const target = await emptyTarget();
      const error = await moveStore({ source, target, waitLeasesMs: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MoveError);
      expect(error).toMatchObject({ code: 'MOVE_LEASES_HELD', phase: 'drained', details: { held: 1 } });
      expect((await allRows(await transferStoreOf(target), 'moves')).map((row) => row.phase)).toEqual(['source-stopped']);
      slowGate.open();
      await waitFor(async () => (await statusOf(source, slow)) === 'SUCCESS', 'the slow task to finish on the source');
      const report = await moveStore({ source, target, waitLeasesMs: 0 });
      expect(report.resumedAfter).toBe('source-stopped');
      expect(await statusOf(target, slow)).toBe('SUCCESS');
      expect(runs.starts.get(`${slow}#1`)).toBe(1);
    }, 60_000);

    it("waits for a bulk operation running on the source: its changes after the stop are in the target's copy", async () => {
      const defs = definitions(new Runs(), Promise.resolve());
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const client = createClient({ store: source, tasks: Object.values(defs), bulkLeaseMs: 60_000 });
      const ids = (await client.submitMany(Array.from({ length: 30 }, (_v, i) => ({ type: defs.quick.type, payload: { i }, delayMs: HOUR })))).map(
        (r) => r.task.id,
      );
      // A pause in batches of 5 that holds after its first batch until the move has seen its lease.
      const operation = await client.bulk.start({ action: 'pause', filter: { taskType: defs.quick.type } }, { batchSize: 5, run: false });
      const held = gate();
      let batches = 0;
      const running = client.bulk.run(operation.id, {
        onProgress: async () => {
          batches += 1;
          if (batches === 1) await held.promise;
        },
      });
      await waitFor(() => batches === 1, 'the first batch');
      let seen = 0;
      const target = await emptyTarget();
      const report = await moveStore({
        source,
        target,
        pollMs: 20,
        waitLeasesMs: 30_000,
        onProgress: (progress) => {
          if (progress.step === 'leases' && progress.done > 0) {
            seen = Math.max(seen, progress.done);
            held.open();
          }
        },
      });
      held.open();
      expect((await running).status).toBe('SUCCEEDED');
      expect(seen).toBe(1);
      expect(report.target).toEqual(report.source);
      expect(report.target.tasks).toMatchObject({ PAUSED: 30, QUEUED: 0 });
      const statuses = await Promise.all(ids.map(async (id) => (await target.getTask({ id, scope: Scope.global() }))?.status));
      expect(new Set(statuses)).toEqual(new Set(['PAUSED']));
    });

    it(`moves back from ${targets.dialect} into a fresh SQLite file, row for row`, async () => {
      const defs = definitions(new Runs(), Promise.resolve());
      const dir = tempDir();
      const source = sqlite(join(dir, 'first.db'));
      await source.migrate();
      await configure(source, defs);
      await waiting(source, defs);
      await createClient({ store: source, tasks: Object.values(defs) }).submitMany(
        Array.from({ length: 12 }, () => ({ type: defs.quick.type, payload: { n: 1 } })),
      );
      const middle = await emptyTarget();
      await moveStore({ source, target: middle, batchSize: 5 });
      const back = sqlite(join(dir, 'back.db'));
      const report = await moveStore({ source: middle, target: back, batchSize: 5 });
      expect(report.target).toEqual(report.source);
      const before = await tables(middle);
      const after = await tables(back);
      // The middle store is the source now: its GLOBAL stop and switched-off schedules stay behind.
      expect(after).toEqual(
        asMoved(
          before,
          new Map([
            ['nightly', 1],
            ['paused-one', 0],
          ]),
        ),
      );
      expect(after.tasks).toHaveLength(15);
    });

    it('requeues the task of a worker that died holding its lease (the move sweeps the source), then moves it waiting', async () => {
      const defs = definitions(new Runs(), Promise.resolve());
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const id = (await createClient({ store: source, tasks: Object.values(defs) }).submit(defs.quick, {})).task.id;
      // A worker that claims and dies: nobody heartbeats the lease, nobody else sweeps this source.
      const [claimed] = await source.claimTasks({
        workerId: 'dead',
        taskTypes: [defs.quick.type],
        limit: 1,
        leaseMs: 300,
        globalConcurrency: 10,
        typeConcurrency: 10,
      });
      expect(claimed?.id).toBe(id);
      const target = await emptyTarget();
      const report = await moveStore({ source, target, pollMs: 20, waitLeasesMs: 30_000 });
      expect(report.target).toEqual(report.source);
      const moved = await target.getTask({ id, scope: Scope.global() });
      expect(moved).toMatchObject({ status: 'QUEUED', attemptCount: 1, leaseOwner: null });
      expect((await target.listFailures({ taskId: id })).map((failure) => failure.errorCode)).toEqual(['LEASE_EXPIRED']);
    });

    it('a finished move, run again, changes nothing on the target its workers have used since', async () => {
      const defs = definitions(new Runs(), Promise.resolve());
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const [first, second] = (
        await createClient({ store: source, tasks: Object.values(defs) }).submitMany([
          { type: defs.quick.type, payload: {} },
          { type: defs.quick.type, payload: {} },
        ])
      ).map((r) => r.task.id);
      const target = await emptyTarget();
      await moveStore({ source, target });
      await createClient({ store: target, tasks: Object.values(defs) }).pause(first!);
      const again = await moveStore({ source, target });
      expect(again.resumedAfter).toBe('verified');
      expect(again.copied.tasks).toBe(0);
      expect(await statusOf(target, first!)).toBe('PAUSED');
      expect(await statusOf(target, second!)).toBe('QUEUED');
    });

    it('rejects bad options before touching either store (INVALID_OPTIONS naming the field)', async () => {
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const target = await emptyTarget();
      await expect(moveStore({ source, target: source })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'target' });
      await expect(moveStore({ source, target, batchSize: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'batchSize' });
      await expect(moveStore({ source, target, waitLeases: 5 } as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      expect(await target.schemaVersion().catch(() => 0)).toBe(0);
    });

    it('refuses a target holding tasks no move put there (MOVE_TARGET_NOT_EMPTY), leaving the source running', async () => {
      const source = sqlite(join(tempDir(), 'tasks.db'));
      await source.migrate();
      const target = await emptyTarget();
      await target.migrate();
      const theirs = defineTask({ type: 'someone.else' });
      await createClient({ store: target, tasks: [theirs] }).submit(theirs, {});
      const error = await moveStore({ source, target }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'MOVE_TARGET_NOT_EMPTY', details: { tasks: 1 } });
      expect(await source.listPolicies()).toEqual([]);
      expect(await allRows(await transferStoreOf(target), 'moves')).toEqual([]);
    });

    it('refuses to resume a move from another source (MOVE_TARGET_NOT_EMPTY): one move per target', async () => {
      const first = sqlite(join(tempDir(), 'first.db'));
      const second = sqlite(join(tempDir(), 'second.db'));
      await first.migrate();
      await second.migrate();
      const target = await emptyTarget();
      await moveStore({ source: first, target, sourceName: 'sqlite:first.db' });
      const error = await moveStore({ source: second, target, sourceName: 'sqlite:second.db' }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'MOVE_TARGET_NOT_EMPTY', details: { source: 'sqlite:first.db', phase: 'verified' } });
      expect(await second.listPolicies()).toEqual([]);
    });
  });
}
