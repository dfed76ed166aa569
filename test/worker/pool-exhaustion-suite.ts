/**
 * B2 (issue 11): handlers that hold clients of the store's own pool must not
 * starve the worker's heartbeats. Before the fix heartbeats and outcome
 * writes queued behind handlers for a pool client: with 16 handlers holding
 * 4 clients, a renewal waited seconds, past the lease, and the worker gave its
 * leases up (or lost them). Heartbeats and outcome writes now run on a lease
 * pool no handler can reach.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';

/** Takes one connection of the store's main pool (the one handlers share); returns its release. */
export type HoldConnection = (store: Store) => Promise<() => void>;

const LEASE_MS = 1500;
const HOLD_MS = 700;
const TASKS = 16;

export function runPoolExhaustionSuite(factory: StoreFactory, hold: HoldConnection): void {
  describe(`handlers holding the store's pool on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('never delay a heartbeat past the lease: no lease is lost, every task runs once', async () => {
      const t = defineTask({
        type: 'pool-hog',
        execute: async () => {
          const release = await hold(env.store);
          // The handler's own work on its pool client (a long transaction, say).
          await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
          release();
          return { status: 'SUCCESS' as const };
        },
      });
      const worker = env.track(
        createWorker({
          store: env.store,
          tasks: [t],
          concurrency: TASKS,
          leaseMs: LEASE_MS,
          heartbeatIntervalMs: 200,
          pollIntervalMs: 20,
          recoveryIntervalMs: 0,
          globalConcurrency: 100,
          typeConcurrency: 100,
          logger: false,
        }),
      );
      const lost: string[] = [];
      const beats: number[] = [];
      let completed = 0;
      worker.on('leaseLost', ({ task, reason }) => lost.push(`${task.id}: ${reason}`));
      worker.on('heartbeat', () => beats.push(performance.now()));
      worker.on('completed', () => (completed += 1));
      const client = createClient({ store: env.store, tasks: [t] });
      const ids = [];
      for (let i = 0; i < TASKS; i += 1) ids.push((await client.submit(t, {})).task.id);
      worker.start();
      await waitFor(() => completed + lost.length >= TASKS, 'every task to end', 30_000);
      expect(lost).toEqual([]);
      const gaps = beats.slice(1).map((at, i) => at - beats[i]!);
      expect(Math.max(...gaps)).toBeLessThan(LEASE_MS);
      for (const id of ids) {
        expect((await env.store.getTask({ id, scope: Scope.global() }))?.status).toBe('SUCCESS');
        expect(await env.store.listAttempts({ taskId: id })).toHaveLength(1);
      }
    });
  });
}
