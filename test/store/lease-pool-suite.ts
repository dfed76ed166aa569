/**
 * B2 (issue 11) at the store: a worker's lease and outcome statements run on
 * the store's lease pool, never on the main pool (yours, when you pass one),
 * so a main pool whose every connection a handler holds delays no heartbeat,
 * progress or outcome write. A lease pool too small for a worker is refused
 * at construction, with the fix in the message.
 */
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { Store } from '../../src/store/types.js';
import { claimParams, leaseOf, newTask } from './fixtures.js';

export interface LeasePoolCase {
  dialect: string;
  /** A migrated store on a pool of one connection that the test owns. */
  openOnOwnPool(): Promise<{ store: Store; holdOnlyConnection(): Promise<() => Promise<void>>; dispose(): Promise<void> }>;
  /** The store constructor with this leasePoolSize. */
  construct(leasePoolSize: number): unknown;
}

export function runLeasePoolSuite(c: LeasePoolCase): void {
  describe(`the lease pool on ${c.dialect}`, () => {
    it('refuses a lease pool smaller than a worker needs, naming the fix', () => {
      expect(() => c.construct(1)).toThrow(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          field: 'leasePoolSize',
          message: expect.stringMatching(/one for heartbeats.*give leasePoolSize ≥ 2/),
        }),
      );
      expect(() => c.construct(2.5)).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'leasePoolSize' }));
    });

    it('renews, saves progress and writes outcomes while a handler holds every connection of your pool', async () => {
      const { store, holdOnlyConnection, dispose } = await c.openOnOwnPool();
      try {
        await store.insertTasks({ tasks: [newTask(), newTask()] });
        const [first, second] = await store.claimTasks(claimParams({ limit: 2 }));
        const release = await holdOnlyConnection();
        try {
          const renewed = await within(store.renewLeases({ leases: [leaseOf(first!), leaseOf(second!)], leaseMs: 30_000 }));
          expect([...renewed.renewed].sort()).toEqual([first!.id, second!.id].sort());
          expect(
            await within(
              store.saveProgress({ lease: leaseOf(first!), progress: { total: 2, processed: 1, succeeded: 1, failed: 0, skipped: 0, message: null } }),
            ),
          ).toBe(true);
          const finished = await within(
            store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(first!), artifactId: null, resultJson: '{"ok":1}', progress: null }] }),
          );
          expect(finished.applied).toEqual([true]);
          expect(await within(store.releaseTasks({ leases: [leaseOf(second!)] }))).toBe(1);
        } finally {
          await release();
        }
        expect((await store.getTask({ id: first!.id, scope: Scope.global() }))?.status).toBe('SUCCESS');
      } finally {
        await dispose();
      }
    });
  });
}

/** Before the fix these waited for the held connection forever: fail in bounded time instead. */
function within<T>(work: Promise<T>, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: the statement waited for the main pool`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
