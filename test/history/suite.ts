/**
 * Queue history (issue 29) on every store: the counters a drain leaves (successes, attempt failures, a dead
 * letter, submits), two processes' rows merged on read, minute boundaries under an injected clock, the roll-up of
 * minute rows into hours and the retention removing old hours (cleanup), and bad queries refused. Each dialect
 * runs it from test/history/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { recordQueueHistory } from '../../src/observe/queue-history.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** A fixed wall clock for the recorders: 10:00:30 on a day in the past. */
const T0 = Date.UTC(2026, 0, 15, 10, 0, 30);

const ok = defineTask<{ n: number }>({ type: 'history.ok', execute: async () => undefined });
const flaky = defineTask<{ n: number }>({
  type: 'history.flaky',
  execute: async (ctx) => {
    // First attempt fails (retried), the second fails for good (dead letter).
    if (ctx.attempt < 2) throw new TaskFailure('not yet', { code: 'NOT_YET' });
    throw new TaskFailure('never', { code: 'NEVER', retryable: false });
  },
});

export function runHistorySuite(factory: StoreFactory): void {
  describe(`queue history on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    const client = (): TaskLeaseClient => createClient({ store: env.store, tasks: [ok, flaky] });

    it('counts a drain: submits, starts, successes, attempt failures and a dead letter, one row per type', async () => {
      const c = client();
      const producer = recordQueueHistory({ store: env.store, client: c, processId: 'producer', now: () => T0 });
      for (let n = 0; n < 5; n++) await c.submit(ok, { n });
      await c.submit(flaky, { n: 9 }, { maxAttempts: 3 });
      const worker = env.track(createWorker({ ...FAST_WORKER, store: env.store, tasks: [ok, flaky], concurrency: 4 }));
      const consumer = recordQueueHistory({ store: env.store, worker, processId: 'consumer', now: () => T0 });
      let dead = 0;
      let done = 0;
      worker.on('deadLettered', () => dead++);
      worker.on('completed', () => done++);
      worker.start();
      await waitFor(() => dead === 1 && done === 5, 'the drain');
      await worker.stop();
      await Promise.all([producer.stop(), consumer.stop()]);
      const series = await c.history({ from: new Date(T0 - MINUTE), to: new Date(T0 + 30_000), step: 'minute' });
      expect(series.points.map((p) => p.at.getTime())).toEqual([T0 - 30_000 - MINUTE, T0 - 30_000]);
      expect(series.points[0]).toMatchObject({ submitted: 0, started: 0, waitP50Ms: null });
      expect(series.points[1]).toMatchObject({ submitted: 6, started: 7, succeeded: 5, failed: 2, deadLettered: 1 });
      expect(series.points[1]!.runP95Ms).not.toBeNull();
      expect(series.points[1]!.waitP50Ms).toBeGreaterThanOrEqual(0);
      const one = await c.history({ taskType: flaky.type, from: new Date(T0), to: new Date(T0 + 1), step: 'minute' });
      expect(one.points).toHaveLength(1);
      expect(one.points[0]).toMatchObject({ submitted: 1, started: 2, succeeded: 0, failed: 2, deadLettered: 1 });
      // The producer's and the consumer's rows of each type, summed on read: one row per type and minute.
      const rows = await (await historyStoreOf(env.store)).read({ grain: 'minute', from: new Date(T0 - HOUR), to: new Date(T0 + HOUR) });
      expect(rows.map((r) => [r.taskType, r.submitted, r.started])).toEqual([
        ['history.flaky', 1, 2],
        ['history.ok', 5, 5],
      ]);
    });

    it('merges two processes’ rows of the same minute, and adds a process’s second write to its row', async () => {
      const history = await historyStoreOf(env.store);
      const minute = new Date(T0 - 30_000);
      const counts = (started: number, waitBucket: number) => {
        const c = emptyCounts();
        c.started = started;
        c.waitBuckets[waitBucket] = started;
        return c;
      };
      await history.add('p1', [{ minuteStart: minute, taskType: 'history.ok', counts: counts(3, 0) }]);
      await history.add('p2', [{ minuteStart: minute, taskType: 'history.ok', counts: counts(4, 2) }]);
      await history.add('p1', [{ minuteStart: minute, taskType: 'history.ok', counts: counts(1, 0) }]);
      const [point] = (await client().history({ from: minute, to: new Date(minute.getTime() + MINUTE), step: 'minute' })).points;
      expect(point).toMatchObject({ started: 8 });
      // 4 waits in the first bucket (≤ 10 ms), 4 in the third (100 ms–1 s): the median sits at the first bucket's top.
      expect(point!.waitP50Ms).toBe(10);
      expect(point!.waitP95Ms).toBeGreaterThan(100);
    });

    it('cuts minutes by the recorder’s clock: a flush writes only closed minutes, stop writes the rest', async () => {
      let now = T0;
      const c = client();
      const recorder = recordQueueHistory({ store: env.store, client: c, processId: 'p', now: () => now });
      await c.submit(ok, { n: 1 });
      now = T0 + 29_999; // 10:00:59.999, same minute
      await c.submit(ok, { n: 2 });
      now = T0 + 30_000; // 10:01:00, the next minute
      await c.submit(ok, { n: 3 });
      await recorder.flush();
      const range = { from: new Date(T0 - 30_000), to: new Date(T0 + 90_000), step: 'minute' as const };
      expect((await c.history(range)).points.map((p) => p.submitted)).toEqual([2, 0]);
      await recorder.stop();
      expect((await c.history(range)).points.map((p) => p.submitted)).toEqual([2, 1]);
      // Stopped: no more counting.
      await c.submit(ok, { n: 4 });
      await recorder.flush({ all: true });
      expect((await c.history(range)).points.map((p) => p.submitted)).toEqual([2, 1]);
    });

    it('cleanup rolls minute rows past their retention into hour rows and removes hours past theirs', async () => {
      const history = await historyStoreOf(env.store);
      const now = (await env.store.now()).getTime();
      const hourOf = (t: number): number => Math.floor(t / HOUR) * HOUR;
      const old = hourOf(now - 50 * HOUR); // rolled up (minute retention 48 h)
      const recent = hourOf(now - 3 * HOUR); // kept as minutes
      const ancient = hourOf(now - 40 * 24 * HOUR); // rolled up, then removed (hour retention 30 days)
      const submitted = (n: number) => ({ ...emptyCounts(), submitted: n });
      await history.add('p1', [
        { minuteStart: new Date(old + 5 * MINUTE), taskType: 'a', counts: submitted(1) },
        { minuteStart: new Date(old + 59 * MINUTE), taskType: 'a', counts: submitted(2) },
        { minuteStart: new Date(recent + MINUTE), taskType: 'a', counts: submitted(4) },
        { minuteStart: new Date(ancient), taskType: 'a', counts: submitted(8) },
      ]);
      await history.add('p2', [{ minuteStart: new Date(old + 5 * MINUTE), taskType: 'b', counts: submitted(16) }]);
      const result = await client().cleanup({ retentionDays: 1 });
      expect(result).toMatchObject({ historyHoursRolledUp: 2, historyHourRowsRemoved: 1 });
      const hourly = async (from: number, to: number, taskType?: string) =>
        (await client().history({ from: new Date(from), to: new Date(to), step: 'hour', ...(taskType ? { taskType } : {}) })).points.map((p) => p.submitted);
      expect(await hourly(old, old + 2 * HOUR)).toEqual([19, 0]);
      expect(await hourly(old, old + HOUR, 'a')).toEqual([3]);
      expect(await hourly(ancient, ancient + HOUR)).toEqual([0]);
      // The old minutes are gone as minutes; the recent ones are still there, and read by an hour step too.
      expect((await client().history({ from: new Date(old), to: new Date(old + HOUR), step: 'minute' })).points.every((p) => p.submitted === 0)).toBe(true);
      expect((await client().history({ from: new Date(recent + MINUTE), to: new Date(recent + 2 * MINUTE), step: 'minute' })).points[0]!.submitted).toBe(4);
      expect(await hourly(recent, recent + HOUR)).toEqual([4]);
      // A second cleanup finds nothing more to do (and does not count twice).
      const again = await client().cleanup({ retentionDays: 1 });
      expect(again.historyHoursRolledUp).toBeUndefined();
      expect(await hourly(old, old + HOUR)).toEqual([19]);
      // A shorter minute retention rolls the recent hour up too.
      expect(await client().cleanup({ retentionDays: 1, historyMinuteRetentionHours: 1 })).toMatchObject({ historyHoursRolledUp: 1 });
      expect(await hourly(recent, recent + HOUR)).toEqual([4]);
    });

    it('refuses bad queries and retentions with a validation error', async () => {
      const c = client();
      const from = new Date(T0);
      await expect(c.history({ from, to: from, step: 'minute' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'to' });
      await expect(c.history({ from, to: new Date(T0 + HOUR), step: 'day' as 'hour' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'step' });
      await expect(c.history({ from: new Date('x'), to: new Date(T0 + HOUR), step: 'hour' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'from' });
      await expect(c.history({ from, to: new Date(T0 + 30 * 24 * HOUR), step: 'minute' })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(c.cleanup({ retentionDays: 1, historyMinuteRetentionHours: 0 })).rejects.toMatchObject({ field: 'historyMinuteRetentionHours' });
    });
  });
}
