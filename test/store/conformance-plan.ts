/**
 * The claim reads its index, not the table (FAULTS.md 17), on every dialect:
 * the store's explainClaim shows the database's plan for a claim under a
 * backlog of the claimed type beside other types' rows. A few thousand rows
 * suffice for the planners to choose as they do under the 100k flood
 * (test/faults/flood.slow.test.ts checks it there too).
 */
import { describe, expect, it } from 'vitest';
import { Scope } from '../../src/core/scope.js';
import type { StoreFactory } from '../helpers/factory.js';
import { newTask, useStore } from './fixtures.js';

const BACKLOG = 4000;
/** A read of the whole task table: PostgreSQL, MySQL (EXPLAIN type ALL), SQLite (SCAN, not SEARCH). */
export const TABLE_SCAN = /Seq Scan on system_async_task |"type":"ALL"|\bSCAN system_async_task\b/;

export function runPlanConformance(factory: StoreFactory): void {
  describe(`Claim plan: ${factory.dialect}`, () => {
    const current = useStore(factory);

    it('a claim under a backlog reads the claim index, not the table, and claims nothing', async () => {
      const store = current.store;
      for (let i = 0; i < BACKLOG; i += 1000) {
        const tasks = Array.from({ length: 1000 }, (_, j) => newTask({ taskType: (i + j) % 4 === 0 ? 'flood' : 'other', priority: j % 3 }));
        await store.insertTasks({ tasks });
      }
      const { plan } = await store.explainClaim({ taskType: 'flood' });
      expect(plan).toContain('ix_system_async_task_claim');
      expect(plan).not.toMatch(TABLE_SCAN);
      expect((await store.countByStatus({ scope: Scope.global() })).RUNNING).toBe(0);
    });
  });
}
