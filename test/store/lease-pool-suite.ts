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
  /** The store constructor with these options (and the test server's address unless they give `pool`). */
  construct(options: { leasePoolSize?: number; leasePool?: object; pool?: object }): unknown;
  /** A pool of the dialect allowing `size` connections (none opened here), and its end. */
  pool(size: number): { pool: object; end(): Promise<void> };
  /** The pool option that sets its size. */
  sizeOption: string;
}

export function runLeasePoolSuite(c: LeasePoolCase): void {
  describe(`the lease pool on ${c.dialect}`, () => {
    it('refuses a lease pool smaller than a worker needs, naming the fix', () => {
      expect(() => c.construct({ leasePoolSize: 1 })).toThrow(
        expect.objectContaining({
          code: 'INVALID_OPTIONS',
          field: 'leasePoolSize',
          message: expect.stringMatching(/one for heartbeats.*give leasePoolSize ≥ 2/),
        }),
      );
      expect(() => c.construct({ leasePoolSize: 2.5 })).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'leasePoolSize' }));
    });

    it('refuses a lease pool of yours that is too small, or is the main pool, naming the fix', async () => {
      const small = c.pool(1);
      const main = c.pool(4);
      try {
        expect(() => c.construct({ leasePool: small.pool })).toThrow(
          expect.objectContaining({
            code: 'INVALID_OPTIONS',
            field: 'leasePool',
            message: expect.stringContaining(
              `allows 1 connection(s), but a worker needs 2 (one for heartbeats, one for outcome writes): create it with ${c.sizeOption} ≥ 2`,
            ),
          }),
        );
        expect(() => c.construct({ pool: main.pool, leasePool: main.pool })).toThrow(
          expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'leasePool', message: expect.stringContaining('is the same pool as `pool`') }),
        );
        expect(() => c.construct({ leasePool: main.pool, leasePoolSize: 3 })).toThrow(expect.objectContaining({ field: 'leasePoolSize' }));
      } finally {
        await small.end();
        await main.end();
      }
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
