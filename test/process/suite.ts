/**
 * Multi-process fault tests, one suite for every server dialect: real OS
 * worker processes (worker-child.ts) against one database. A dialect's test
 * file (test/process/<dialect>.test.ts) calls runProcessSuite with a
 * ProcessDialect that creates a fresh database area and knows how to cut a
 * process's connections.
 *
 * What must hold: exactly-once completion under parallel claiming (attempt
 * rows prove it), limits as invariants across processes, crashed workers'
 * tasks coming back after the lease, zombies (SIGSTOP past the lease) whose
 * writes change nothing, and workers surviving the loss of their database
 * connections without losing a task.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../src/core/ids.js';
import { Scope } from '../../src/core/scope.js';
import type { NewTask } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import type { ChildStoreConfig } from './child-store.js';
import { ChildWorker, killAllChildren } from './harness.js';
import type { ChildConfig } from './worker-child.js';

export interface AttemptRow {
  task_id: string;
  attempt: number;
  worker_id: string;
  outcome: string | null;
}

export interface ProcessTarget {
  /** What a child needs to open a store on this database area. */
  storeConfig: ChildStoreConfig;
  /** The parent's own store: submits, policies, checks. */
  store: Store;
  /** Empties every tasklease table between tests. */
  clean(): Promise<void>;
  /** Every row of system_async_task_attempt. */
  attempts(): Promise<AttemptRow[]>;
  /** Cuts every database connection the child labelled `label` holds; returns how many. */
  terminateConnections(label: string): Promise<number>;
  destroy(): Promise<void>;
}

export interface ProcessDialect {
  name: string;
  /** Creates a fresh, migrated database area (its own schema or database). */
  create(): Promise<ProcessTarget>;
}

const G = Scope.global();

function tasks(type: string, count: number): NewTask[] {
  return Array.from({ length: count }, (_, i) => ({
    id: uuidv7(),
    taskType: type,
    payloadJson: `{"i":${i}}`,
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: 5,
    owner: null,
    idempotencyKey: null,
    traceId: null,
  }));
}

async function submit(store: Store, type: string, count: number): Promise<void> {
  const all = tasks(type, count);
  for (let i = 0; i < all.length; i += 2000) await store.insertTasks({ tasks: all.slice(i, i + 2000) });
}

export function runProcessSuite(dialect: ProcessDialect): void {
  describe(`worker processes on ${dialect.name}`, () => {
    let target: ProcessTarget;
    beforeAll(async () => {
      target = await dialect.create();
    });
    afterEach(async () => {
      await killAllChildren();
      await target.clean();
    });
    afterAll(async () => {
      await killAllChildren();
      await target?.destroy();
    });

    const child = (label: string, overrides: Partial<ChildConfig> & Pick<ChildConfig, 'types' | 'handler'>): ChildWorker =>
      new ChildWorker({ label, store: target.storeConfig, worker: {}, ...overrides });
    const count = async (type: string) => target.store.countByStatus({ scope: G, taskType: type });

    it('4 workers drain 20,000 tasks, each completed exactly once', async () => {
      const worker = {
        concurrency: 10,
        prefetch: 100,
        claimBatchSize: 200,
        pollIntervalMs: 50,
        recoveryIntervalMs: 0,
        globalConcurrency: 10_000,
        typeConcurrency: 10_000,
      };
      const workers = ['d1', 'd2', 'd3', 'd4'].map((label) => child(label, { types: ['drain'], handler: 'empty', worker }));
      await Promise.all(workers.map((w) => w.until('ready')));
      await submit(target.store, 'drain', 20_000);
      await waitFor(async () => (await count('drain')).SUCCESS === 20_000, '20,000 successes', 120_000, 200);
      const completed = (await Promise.all(workers.map((w) => w.stop()))).map((ids) => ids);
      const all = completed.flat();
      expect(all).toHaveLength(20_000);
      expect(new Set(all).size).toBe(20_000);
      for (const ids of completed) expect(ids.length).toBeGreaterThan(0); // every process took part
      const attempts = await target.attempts();
      expect(attempts).toHaveLength(20_000);
      expect(new Set(attempts.map((a) => a.task_id)).size).toBe(20_000);
      expect(attempts.every((a) => a.attempt === 1 && a.outcome === 'SUCCESS')).toBe(true);
    }, 180_000);

    it('limits global 5 / per type 3 hold across 4 processes: a sampler never sees more', async () => {
      const policy = (policyKey: string, taskType: string | null, maxConcurrency: number) =>
        target.store.savePolicy({ policy: { policyKey, taskType, maxConcurrency, maxAttempts: null, retryBaseDelayMs: null, enabled: true } });
      await policy('GLOBAL', null, 5);
      await policy('TYPE:la', 'la', 3);
      await policy('TYPE:lb', 'lb', 3);
      const worker = { concurrency: 6, prefetch: 2, pollIntervalMs: 20, recoveryIntervalMs: 0, globalConcurrency: 100, typeConcurrency: 100 };
      const workers = ['l1', 'l2', 'l3', 'l4'].map((label) => child(label, { types: ['la', 'lb'], handler: 'sleep', sleepMs: 15, worker }));
      await Promise.all(workers.map((w) => w.until('ready')));
      await submit(target.store, 'la', 150);
      await submit(target.store, 'lb', 150);
      let max = { total: 0, la: 0, lb: 0 };
      const violations: Record<string, number>[] = [];
      let samples = 0;
      await waitFor(
        async () => {
          const leased = await target.store.leasedCounts();
          const total = Object.values(leased).reduce((a, b) => a + b, 0);
          const la = leased.la ?? 0;
          const lb = leased.lb ?? 0;
          samples += 1;
          max = { total: Math.max(max.total, total), la: Math.max(max.la, la), lb: Math.max(max.lb, lb) };
          if (total > 5 || la > 3 || lb > 3) violations.push(leased);
          const [a, b] = [await count('la'), await count('lb')];
          return a.SUCCESS + b.SUCCESS === 300;
        },
        '300 successes under the limits',
        120_000,
        5,
      );
      await Promise.all(workers.map((w) => w.stop()));
      expect(violations).toEqual([]);
      expect(samples).toBeGreaterThan(20);
      expect(max.total).toBe(5); // the limits were reached, so the test had teeth
    }, 180_000);

    it('SIGKILL mid-task: its tasks come back after the lease and another worker completes them', async () => {
      const lease = { leaseMs: 1500, heartbeatIntervalMs: 300, pollIntervalMs: 50 };
      const victim = child('k1', { types: ['kill'], handler: 'hold', worker: { ...lease, concurrency: 4, recoveryIntervalMs: 0 } });
      await victim.until('ready');
      await submit(target.store, 'kill', 4);
      await waitFor(() => victim.count('started') === 4, 'the victim to start all 4 tasks');
      victim.signal('SIGKILL');
      await victim.exit();
      const rescuer = child('k2', { types: ['kill'], handler: 'empty', worker: { ...lease, concurrency: 4, recoveryIntervalMs: 200 } });
      await waitFor(async () => (await count('kill')).SUCCESS === 4, 'the rescuer to complete all 4', 30_000, 50);
      await rescuer.stop();
      const attempts = await target.attempts();
      for (const [taskId, rows] of groupBy(attempts)) {
        expect(
          rows.map((r) => [r.attempt, r.worker_id, r.outcome]),
          taskId,
        ).toEqual([
          [1, 'k1', 'LEASE_EXPIRED'],
          [2, 'k2', 'SUCCESS'],
        ]);
      }
      expect(groupBy(attempts).size).toBe(4);
    }, 60_000);

    it('SIGSTOP past the lease, another reclaims, SIGCONT: the zombie changes nothing and its handler is aborted', async () => {
      const lease = { leaseMs: 1200, heartbeatIntervalMs: 200, pollIntervalMs: 50 };
      const zombie = child('z1', { types: ['zombie'], handler: 'hold', holdMs: 60_000, worker: { ...lease, concurrency: 1, recoveryIntervalMs: 0 } });
      await zombie.until('ready');
      await submit(target.store, 'zombie', 1);
      const { id } = await zombie.until('started');
      zombie.signal('SIGSTOP');
      const rescuer = child('z2', { types: ['zombie'], handler: 'empty', worker: { ...lease, concurrency: 1, recoveryIntervalMs: 100 } });
      await waitFor(async () => (await target.store.getTask({ id: id!, scope: G }))?.status === 'SUCCESS', 'the rescuer to complete the task', 30_000, 50);
      const settled = await target.store.getTask({ id: id!, scope: G });
      await rescuer.stop();
      zombie.signal('SIGCONT');
      await zombie.until('leaseLost', 15_000, id);
      const aborted = await zombie.until('aborted', 15_000, id);
      expect(aborted.reason).toBe('LEASE_LOST');
      await zombie.stop();
      const after = await target.store.getTask({ id: id!, scope: G });
      expect(after).toEqual(settled); // the zombie's outcome write changed nothing
      expect(after!.result).toEqual({ by: 'z2' });
      const attempts = await target.attempts();
      expect(attempts.map((r) => [r.attempt, r.worker_id, r.outcome])).toEqual([
        [1, 'z1', 'LEASE_EXPIRED'],
        [2, 'z2', 'SUCCESS'],
      ]);
    }, 60_000);

    it('a worker whose database connections are cut reconnects and carries on; no task is lost', async () => {
      const worker = { concurrency: 8, prefetch: 8, claimBatchSize: 50, pollIntervalMs: 50, leaseMs: 2000, heartbeatIntervalMs: 400, recoveryIntervalMs: 300 };
      const victim = child('c1', { types: ['cut'], handler: 'sleep', sleepMs: 2, worker });
      await victim.until('ready');
      await submit(target.store, 'cut', 2000);
      await waitFor(async () => (await count('cut')).SUCCESS >= 300, 'some progress before the cut', 60_000, 50);
      expect(await target.terminateConnections('c1')).toBeGreaterThan(0);
      await waitFor(async () => (await count('cut')).SUCCESS === 2000, 'every task to succeed after the cut', 90_000, 100);
      await victim.stop();
      const attempts = await target.attempts();
      const byTask = groupBy(attempts);
      expect(byTask.size).toBe(2000);
      for (const [taskId, rows] of byTask)
        expect(
          rows.filter((r) => r.outcome === 'SUCCESS'),
          taskId,
        ).toHaveLength(1);
      // at-least-once, not more than the cut can explain: only tasks in flight at the cut ran twice
      expect(attempts.length - 2000).toBeLessThanOrEqual(100);
    }, 150_000);
  });
}

function groupBy(rows: AttemptRow[]): Map<string, AttemptRow[]> {
  const map = new Map<string, AttemptRow[]>();
  for (const row of [...rows].sort((a, b) => a.attempt - b.attempt)) {
    const list = map.get(row.task_id) ?? [];
    list.push(row);
    map.set(row.task_id, list);
  }
  return map;
}
