/**
 * Sequences across real worker processes (issue 27): four processes claim
 * the tasks of many keys, with failures injected at heads; from the attempt
 * rows (the database's clock) no two attempts of one key overlap, each key's
 * tasks succeed in submit order, and a key with many tasks does not crowd
 * out keys with few (a binding type limit makes them compete for slots).
 */
import { afterEach, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { typePolicyKey } from '../../src/core/policy-keys.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { AttemptRecord } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import { onEveryStore } from './areas.js';
import type { ChildStoreConfig } from './child-store.js';
import { ChildWorker, killAllChildren } from './harness.js';

const G = Scope.global();
const TYPE = 'seq.proc';

interface Run {
  task: Task;
  attempts: AttemptRecord[];
}

afterEach(killAllChildren);

await onEveryStore('test/process/sequences.sampler.test.ts', 'sequences across 4 worker processes', (withArea) => {
  it('4 processes: each key one at a time in submit order through injected head failures; cold keys are not starved by a hot one', { timeout: 180_000 }, () =>
    withArea(async ({ store, childStore }) => {
      const target = { store, storeConfig: childStore as ChildStoreConfig };
      // Two slots for the whole type across the four processes: keys compete for them.
      await target.store.savePolicy({
        policy: { policyKey: typePolicyKey(TYPE), taskType: TYPE, maxConcurrency: 2, maxAttempts: null, retryBaseDelayMs: null, enabled: true },
      });
      const client = createClient({ store: target.store, tasks: [defineTask({ type: TYPE, maxAttempts: 5, execute: () => undefined })] });
      const requests = [];
      // A hot key first (14 tasks, its 1st and 6th fail twice), then 6 cold keys of 2 tasks (each head fails once).
      for (let n = 1; n <= 14; n += 1) requests.push({ type: TYPE, payload: { key: 'hot', n, failAttempts: n === 1 || n === 6 ? 2 : 0 }, sequenceKey: 'hot' });
      for (let n = 1; n <= 2; n += 1) {
        for (let k = 1; k <= 6; k += 1)
          requests.push({ type: TYPE, payload: { key: `cold-${k}`, n, failAttempts: n === 1 ? 1 : 0 }, sequenceKey: `cold-${k}` });
      }
      const submitted = (await client.submitMany(requests)).map((r) => r.task);
      const worker = {
        // One task at a time per process: the two slots of the type are always held by two processes.
        concurrency: 1,
        pollIntervalMs: 50,
        recoveryIntervalMs: 200,
        globalConcurrency: 100,
        typeConcurrency: 100,
        retry: { baseDelayMs: 50, maxDelayMs: 200, jitter: 0 },
      };
      const children = [1, 2, 3, 4].map(
        (i) => new ChildWorker({ label: `seq-${i}`, store: target.storeConfig, types: [TYPE], handler: 'sequence', sleepMs: 10, worker: { ...worker } }),
      );
      await Promise.all(children.map((c) => c.until('ready')));
      await waitFor(
        async () => (await target.store.countByStatus({ scope: G, taskType: TYPE })).SUCCESS === submitted.length,
        'every task to succeed',
        120_000,
        100,
      );
      await Promise.all(children.map((c) => c.stop()));

      const runs: Run[] = await Promise.all(
        submitted.map(async (task) => ({
          task: (await target.store.getTask({ id: task.id, scope: G }))!,
          attempts: await target.store.listAttempts({ taskId: task.id }),
        })),
      );
      const byKey = new Map<string, Run[]>();
      for (const run of runs) byKey.set(run.task.sequenceKey!, [...(byKey.get(run.task.sequenceKey!) ?? []), run]);
      const violations: string[] = [];
      for (const [key, keyRuns] of byKey) {
        const attempts = keyRuns
          .flatMap((run) => run.attempts.map((a) => ({ seq: run.task.sequenceSeq!, n: (run.task.payload as { n: number }).n, ...a })))
          .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime() || a.seq - b.seq);
        // No overlap: each attempt of the key started at or after the previous one finished.
        for (let i = 1; i < attempts.length; i += 1) {
          if (attempts[i]!.startedAt.getTime() < attempts[i - 1]!.finishedAt!.getTime()) {
            violations.push(`${key}: attempt of #${attempts[i]!.n} started before #${attempts[i - 1]!.n}'s attempt ended`);
          }
        }
        // Submit order: the task order of the attempts never goes back.
        const order = attempts.map((a) => a.n);
        if (order.join() !== [...order].sort((a, b) => a - b).join()) violations.push(`${key}: ran out of order ${order.join(',')}`);
        // The injected failures happened, and the key waited for them.
        const failed = attempts.filter((a) => a.outcome !== 'SUCCESS').map((a) => a.n);
        const expected = key === 'hot' ? [1, 1, 6, 6] : [1];
        if (failed.join() !== expected.join()) violations.push(`${key}: failed attempts of ${failed.join(',')}, expected ${expected.join(',')}`);
      }
      expect(violations).toEqual([]);
      // Fair turns: every cold key finished its 2 tasks before the hot key started its 10th of 14.
      const startOf = (key: string, n: number) =>
        Math.min(
          ...byKey
            .get(key)!
            .find((r) => (r.task.payload as { n: number }).n === n)!
            .attempts.map((a) => a.startedAt.getTime()),
        );
      const lastColdEnd = Math.max(...[...byKey.keys()].filter((k) => k !== 'hot').flatMap((k) => byKey.get(k)!.map((r) => r.task.finishedAt!.getTime())));
      const hotStarted = byKey.get('hot')!.filter((r) => Math.min(...r.attempts.map((a) => a.startedAt.getTime())) < lastColdEnd).length;
      const attempts = runs.reduce((sum, r) => sum + r.attempts.length, 0);
      console.log(
        `sequences sampler on ${store.dialect}: ${runs.length} tasks, ${attempts} attempts over ${byKey.size} keys, ${violations.length} violations; hot tasks started when the last cold key ended: ${hotStarted} of 14`,
      );
      expect(lastColdEnd).toBeLessThan(startOf('hot', 10));
      // Several processes ran it (one task at a time each, two slots).
      const workers = new Set(runs.flatMap((r) => r.attempts.map((a) => a.workerId)));
      expect(workers.size).toBeGreaterThan(1);
    }),
  );
});
