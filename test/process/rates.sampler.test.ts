/**
 * Rate limits are exact across processes (issue 27): 4 worker processes
 * claim one type under a type rate of 10 starts per 2 s and a per-key rate of
 * 3 per 2 s (policy KEY:acct:*), on every store. The check runs over the
 * attempt rows' started_at (the claims' database clock): for every start as
 * a window's end, the sliding window (end − period, end] holds at most N
 * starts of the type and of each key.
 */
import { afterEach, expect, it } from 'vitest';
import { PolicyApi } from '../../src/client/policies.js';
import { uuidv7 } from '../../src/core/ids.js';
import { Scope } from '../../src/core/scope.js';
import type { NewTask } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import { onEveryStore } from './areas.js';
import type { ChildStoreConfig } from './child-store.js';
import { ChildWorker, killAllChildren } from './harness.js';

const PERIOD_MS = 2000;
const TYPE_RATE = 10;
const KEY_RATE = 3;
const KEYS = ['acct:1', 'acct:2', 'acct:3', 'acct:4'];
const PER_KEY = 8;
const UNKEYED = 18;
const TOTAL = KEYS.length * PER_KEY + UNKEYED;
const GLOBAL_RATE = 8;
const GLOBAL_TOTAL = 32;

/** The most starts any window (end − period, end] holds, every start taken as an end. */
export function maxInWindow(starts: readonly number[], periodMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let max = 0;
  let from = 0;
  for (let end = 0; end < sorted.length; end += 1) {
    while (sorted[from]! <= sorted[end]! - periodMs) from += 1;
    max = Math.max(max, end - from + 1);
  }
  return max;
}

afterEach(killAllChildren);

await onEveryStore('test/process/rates.sampler.test.ts', 'rate limits across 4 processes', (withArea) => {
  it(`type ${TYPE_RATE} / ${PERIOD_MS} ms and per key ${KEY_RATE} / ${PERIOD_MS} ms: no window ever holds more`, { timeout: 180_000 }, () =>
    withArea(async ({ store, childStore }) => {
      const policies = new PolicyApi(store);
      await policies.update('rate.sampled', { rateLimit: TYPE_RATE, ratePeriodMs: PERIOD_MS });
      await policies.update({ rateKey: 'acct:*' }, { rateLimit: KEY_RATE, ratePeriodMs: PERIOD_MS });
      const worker = { concurrency: 4, prefetch: 2, pollIntervalMs: 20, recoveryIntervalMs: 0, globalConcurrency: 100, typeConcurrency: 100 };
      const workers = ['r1', 'r2', 'r3', 'r4'].map(
        (label) => new ChildWorker({ label, store: childStore as ChildStoreConfig, types: ['rate.sampled'], handler: 'empty', worker }),
      );
      await Promise.all(workers.map((w) => w.until('ready')));
      await store.insertTasks({ tasks: [...KEYS.flatMap((k) => tasksOf(PER_KEY, k)), ...tasksOf(UNKEYED, null)] });
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === TOTAL, `${TOTAL} successes`, 120_000, 100);
      await Promise.all(workers.map((w) => w.stop()));

      const starts = await startsOf(store);
      expect(starts).toHaveLength(TOTAL);
      const typeMax = maxInWindow(
        starts.map((s) => s.at),
        PERIOD_MS,
      );
      const keyMax = Math.max(
        ...KEYS.map((k) =>
          maxInWindow(
            starts.filter((s) => s.rateKey === k).map((s) => s.at),
            PERIOD_MS,
          ),
        ),
      );
      console.log(
        `rates sampler on ${store.dialect}: ${starts.length} starts, max ${typeMax} of the type and ${keyMax} of a key in any ${PERIOD_MS} ms window`,
      );
      expect(typeMax).toBeLessThanOrEqual(TYPE_RATE);
      expect(keyMax).toBeLessThanOrEqual(KEY_RATE);
      expect(typeMax).toBe(TYPE_RATE); // the limits were reached, so the test had teeth
      expect(keyMax).toBe(KEY_RATE);
      for (const w of workers) expect(w.count('started')).toBeGreaterThan(0); // every process took part
    }),
  );

  it(`a global rate of ${GLOBAL_RATE} / ${PERIOD_MS} ms over two types (no key or owner rate): no window ever holds more`, { timeout: 180_000 }, () =>
    withArea(async ({ store, childStore }) => {
      await new PolicyApi(store).update(null, { rateLimit: GLOBAL_RATE, ratePeriodMs: PERIOD_MS });
      const worker = { concurrency: 4, prefetch: 2, pollIntervalMs: 20, recoveryIntervalMs: 0, globalConcurrency: 100, typeConcurrency: 100 };
      const types = ['rate.sampled', 'rate.other'];
      const workers = ['g1', 'g2', 'g3'].map((label) => new ChildWorker({ label, store: childStore as ChildStoreConfig, types, handler: 'empty', worker }));
      await Promise.all(workers.map((w) => w.until('ready')));
      const tasks = [...tasksOf(GLOBAL_TOTAL / 2, null), ...tasksOf(GLOBAL_TOTAL / 2, null).map((t) => ({ ...t, taskType: 'rate.other' }))];
      await store.insertTasks({ tasks });
      await waitFor(async () => (await store.countByStatus({ scope: Scope.global() })).SUCCESS === GLOBAL_TOTAL, `${GLOBAL_TOTAL} successes`, 120_000, 100);
      await Promise.all(workers.map((w) => w.stop()));
      const starts = await startsOf(store);
      expect(starts).toHaveLength(GLOBAL_TOTAL);
      const max = maxInWindow(
        starts.map((s) => s.at),
        PERIOD_MS,
      );
      console.log(`global rate sampler on ${store.dialect}: ${starts.length} starts, max ${max} in any ${PERIOD_MS} ms window`);
      expect(max).toBe(GLOBAL_RATE); // reached, never passed
    }),
  );
});

function tasksOf(n: number, rateKey: string | null): NewTask[] {
  return Array.from({ length: n }, (_, i) => ({
    id: uuidv7(),
    taskType: 'rate.sampled',
    payloadJson: `{"i":${i}}`,
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts: 3,
    owner: null,
    idempotencyKey: null,
    traceId: null,
    rateKey,
  }));
}

async function startsOf(store: Store): Promise<{ at: number; rateKey: string | null }[]> {
  const page = await store.listTasks({ scope: Scope.global(), limit: 1000 });
  const out: { at: number; rateKey: string | null }[] = [];
  for (const task of page.tasks) {
    for (const attempt of await store.listAttempts({ taskId: task.id })) out.push({ at: attempt.startedAt.getTime(), rateKey: task.rateKey });
  }
  return out;
}
