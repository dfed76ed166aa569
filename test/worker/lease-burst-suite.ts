/**
 * Issue 22's two mechanisms, checked where they live (the fault suite's case
 * 15 and 18 check the whole under load):
 *
 * - A failed attempt costs no round trip of its own: its outcome write is
 *   fenced and decides the rest. A renewal per failure queued hundreds of
 *   statements ahead of the heartbeat on the lease pool, and a burst of
 *   failures made the worker give up its own live leases.
 * - A lease the worker gave up on its own (its local deadline passed) while
 *   the database still had it goes back to the queue uncharged: a worker's
 *   doubt is not a crash and must not count toward quarantine.
 * - A claim's leases count from when the claim is on a connection, not from
 *   when it began to wait for one: a claim queued behind handlers that hold
 *   the pool for longer than the lease used to arrive with its leases
 *   already past their local deadline, and the worker gave them up at once.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { hasPoolStats } from '../../src/store/pool-stats.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import type { HoldConnection } from './pool-exhaustion-suite.js';

const FAILURES = 200;
const LEASE_MS = 1500;

/** The store, with its renewal statements counted (every other call goes through as it is). */
function countingRenewals(store: Store): { store: Store; renewals: () => number } {
  let renewals = 0;
  const counted = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (name === 'renewLeases')
        return (...args: Parameters<Store['renewLeases']>) => {
          renewals += 1;
          return target.renewLeases(...args);
        };
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: counted, renewals: () => renewals };
}

export function runLeaseBurstSuite(factory: StoreFactory, hold?: HoldConnection): void {
  describe(`lease keeping under bursts on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it(`${FAILURES} attempts failing at once send no renewal of their own`, async () => {
      const t = defineTask({
        type: 'always-fails',
        execute: async () => {
          throw new Error('on purpose');
        },
      });
      const { store, renewals } = countingRenewals(env.store);
      const heartbeats: number[] = [];
      const lost: string[] = [];
      const worker = env.track(
        createWorker({
          store,
          tasks: [t],
          concurrency: FAILURES,
          claimBatchSize: FAILURES,
          // No heartbeat can fall due while the burst is written: every renewal counted would be the failures' own.
          leaseMs: 120_000,
          heartbeatIntervalMs: 30_000,
          recoveryIntervalMs: 0,
          globalConcurrency: 1000,
          typeConcurrency: 1000,
          retry: { baseDelayMs: 600_000, maxDelayMs: 600_000 },
          logger: false,
        }),
      );
      worker.on('heartbeat', () => heartbeats.push(1));
      worker.on('leaseLost', ({ reason }) => lost.push(reason));
      let failed = 0;
      worker.on('failed', () => (failed += 1));
      await createClient({ store: env.store, tasks: [t] }).submitMany(Array.from({ length: FAILURES }, () => ({ type: t.type, payload: {} })));
      worker.start();
      await waitFor(() => failed === FAILURES, `all ${FAILURES} attempts to fail`, 60_000);
      expect(lost).toEqual([]);
      expect(renewals() - heartbeats.length).toBe(0);
      expect(await env.store.countByStatus({ scope: Scope.global() })).toMatchObject({ RETRY_WAIT: FAILURES });
    });

    it('a lease the worker gave up while the database still had it goes back uncharged, not counted as a lost lease', async () => {
      let skewMs = 0;
      // The worker's clock jumps past the lease: its local deadline passes while the database's lease is alive.
      const clock: Clock = { ...systemClock, now: () => systemClock.now() + skewMs };
      const t = defineTask({
        type: 'doubted',
        execute: async (ctx) => {
          if (ctx.attempt === 1) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
          return { status: 'SUCCESS' as const };
        },
      });
      const worker = env.track(
        createWorker({ store: env.store, tasks: [t], clock, leaseMs: 60_000, heartbeatIntervalMs: 100, recoveryIntervalMs: 0, logger: false }),
      );
      const lost: string[] = [];
      const released: boolean[] = [];
      worker.on('leaseLost', ({ reason }) => lost.push(reason));
      worker.on('released', ({ started }) => released.push(started));
      const started = worker.waitFor('started');
      const completed = worker.waitFor('completed');
      worker.start();
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      await started;
      skewMs = 120_000;
      await completed;
      expect(lost).toEqual(['unreachable']);
      expect(released).toEqual([true]);
      expect((await env.store.listAttempts({ taskId: task.id })).map((a) => a.outcome)).toEqual(['RELEASED', 'SUCCESS']);
      const done = (await env.store.getTask({ id: task.id, scope: Scope.global() }))!;
      expect({ spent: done.attemptCount - done.attemptBase, leaseExpiries: done.leaseExpiries }).toEqual({ spent: 1, leaseExpiries: 0 });
    });

    if (hold)
      it('a claim that waited longer than the lease for a pool connection keeps the leases it got', async () => {
        // The handler outlives the moment its claim returns: a lease given up on arrival would be seen.
        const t = defineTask({
          type: 'short',
          execute: (ctx) => new Promise<{ status: 'SUCCESS' }>((resolve) => setTimeout(() => resolve({ status: 'SUCCESS' }), ctx.attempt * 100)),
        });
        const size = hasPoolStats(env.store) ? (env.store.poolStats()?.max ?? 1) : 1;
        let claims = 0;
        let held: Promise<() => void>[] = [];
        const original = env.store.claimTasks.bind(env.store);
        // The first claim queues behind handlers holding every connection of the main pool: the holds are asked for
        // first, so the pool serves them first.
        (env.store as { claimTasks: Store['claimTasks'] }).claimTasks = (params) => {
          claims += 1;
          if (claims === 1) held = Array.from({ length: size }, () => hold(env.store));
          return original(params);
        };
        const lost: string[] = [];
        let completed = 0;
        const worker = env.track(
          createWorker({
            store: env.store,
            tasks: [t],
            concurrency: 4,
            leaseMs: LEASE_MS,
            heartbeatIntervalMs: 200,
            pollIntervalMs: 50,
            recoveryIntervalMs: 0,
            globalConcurrency: 100,
            typeConcurrency: 100,
            logger: false,
          }),
        );
        worker.on('leaseLost', ({ task, reason }) => lost.push(`${task.id}: ${reason}`));
        worker.on('completed', () => (completed += 1));
        await createClient({ store: env.store, tasks: [t] }).submitMany(Array.from({ length: 4 }, () => ({ type: t.type, payload: {} })));
        worker.start();
        await waitFor(() => held.length === size, 'the first claim, behind the held connections');
        const releases = await Promise.all(held);
        // The claim waits for a connection for longer than a lease lasts.
        const heldSince = performance.now();
        await waitFor(() => performance.now() - heldSince > 1.5 * LEASE_MS, 'the claim to wait past a lease', 10_000, 25);
        for (const release of releases) release();
        await waitFor(() => completed + lost.length >= 4, 'the claimed tasks to end', 30_000);
        expect(lost).toEqual([]);
        expect(completed).toBe(4);
      });
  });
}
