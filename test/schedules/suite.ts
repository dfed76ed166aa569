/**
 * Periodic tasks on any store: the schedule table's writes, the tick claim's
 * compare-and-set, the missed-tick policy after a simulated downtime (a pass
 * at a later `now`), enable / disable at run time, typed errors for a bad
 * cron or time zone, and a worker submitting a per-second schedule on its
 * own timer. Each dialect runs it from test/schedules/<dialect>.test.ts;
 * several processes at once: test/schedules/processes.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { ErrorCode } from '../../src/core/errors.js';
import { defineTask } from '../../src/core/definition.js';
import { uuidv7 } from '../../src/core/ids.js';
import { normalizeSchedule, tickKey, type ScheduleInput } from '../../src/core/schedule.js';
import { Scope } from '../../src/core/scope.js';
import { scheduleStoreOf } from '../../src/store/schedules.js';
import type { Store } from '../../src/store/types.js';
import type { Announcer } from '../../src/worker/events.js';
import { PeriodicScheduler } from '../../src/worker/periodic-scheduler.js';
import { createWorker } from '../../src/worker/worker.js';
import { systemClock } from '../../src/core/clock.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { newTask } from '../store/fixtures.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const MINUTE = 60_000;
const report = defineTask<{ n: number }>({ type: 'schedule.report', execute: async () => undefined });

/** A scheduler that never arms its timer: the test calls runDue(now) itself. */
function manualScheduler(store: Store, errors: unknown[] = []): PeriodicScheduler {
  const events: Announcer = { emit: (name, event) => name === 'error' && errors.push(event), listening: () => false, storeAnswered: () => undefined };
  return new PeriodicScheduler(store, systemClock, events, { scheduleRefreshMs: 0, schedules: [] });
}

/** The minute ticks at or before `at`, newest last. */
function minuteTicksBefore(at: Date, count: number): Date[] {
  const newest = Math.floor(at.getTime() / MINUTE) * MINUTE;
  return Array.from({ length: count }, (_, i) => new Date(newest - (count - 1 - i) * MINUTE));
}

export function runScheduleSuite(factory: StoreFactory): void {
  describe(`periodic tasks on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let store: Store;
    let client: TaskLeaseClient;
    let key: string;
    beforeEach(() => {
      store = env.store;
      client = createClient({ store, tasks: [report] });
      key = `s-${randomBytes(4).toString('hex')}`;
    });
    const every = (cron: string, extra: Partial<ScheduleInput> = {}): ScheduleInput => ({ key, taskType: report.type, cron, payload: { n: 1 }, ...extra });
    const tasksOf = async (scheduleKey: string) =>
      (await store.listTasks({ scope: Scope.global(), taskType: report.type, limit: 1000 })).tasks.filter((t) =>
        t.idempotencyKey?.startsWith(`schedule:${scheduleKey}:`),
      );

    it('saves, replaces, lists, enables and deletes a schedule; every write bumps the revision', async () => {
      const before = await store.now();
      const created = await client.schedules.save(every('0 3 * * *', { timeZone: 'Europe/Paris', catchUp: 2 }));
      expect(created).toMatchObject({
        key,
        cron: '0 3 * * *',
        timeZone: 'Europe/Paris',
        payload: { n: 1 },
        enabled: true,
        revision: 1,
        catchUp: 2,
        maxAttempts: 3,
      });
      expect(created.lastTickAt.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5);
      expect(created.nextRuns).toHaveLength(3);
      // 03:00 in Paris is 01:00 or 02:00 UTC, a day apart.
      expect([1, 2]).toContain(created.nextRuns[0]!.getUTCHours());
      expect(created.nextRuns[1]!.getTime() - created.nextRuns[0]!.getTime()).toBeGreaterThanOrEqual(23 * 3600_000);

      const disabled = await client.schedules.setEnabled(key, false);
      expect(disabled).toMatchObject({ enabled: false, revision: 2, nextRuns: [] });
      // A save without `enabled` (a worker redeclaring it in code) keeps the operator's choice.
      const replaced = await client.schedules.save(every('*/5 * * * *', { payload: { n: 2 } }));
      expect(replaced).toMatchObject({ enabled: false, revision: 3, cron: '*/5 * * * *', timeZone: 'UTC', payload: { n: 2 }, catchUp: 0 });
      expect(replaced.lastTickAt).toEqual(created.lastTickAt);

      expect((await client.schedules.list()).map((s) => s.key)).toContain(key);
      expect(await client.schedules.get(key)).toMatchObject({ revision: 3 });
      await client.schedules.delete(key);
      expect(await client.schedules.get(key)).toBeNull();
      await expect(client.schedules.delete(key)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
      await expect(client.schedules.setEnabled(key, true)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    });

    it('a tick claim is a compare-and-set: of two claims from one revision exactly one submits', async () => {
      const schedules = await scheduleStoreOf(store);
      const saved = await schedules.saveSchedule({ schedule: normalizeSchedule(every('* * * * *')) });
      const tick = new Date(Math.ceil(saved.lastTickAt.getTime() / MINUTE) * MINUTE);
      const task = (id: string) => newTask({ id, taskType: report.type, idempotencyKey: tickKey(key, tick) });
      const ids = [uuidv7(), uuidv7()];
      const claims = await Promise.all(ids.map((id) => schedules.claimTicks({ key, revision: saved.revision, cursor: tick, tasks: [task(id)] })));
      expect(claims.filter((c) => c.claimed)).toHaveLength(1);
      expect(claims.find((c) => !c.claimed)!.tasks).toEqual([]);
      expect(await tasksOf(key)).toHaveLength(1);
      const after = (await schedules.getSchedule({ key }))!;
      expect(after).toMatchObject({ revision: saved.revision + 1, lastTickAt: tick, lastTaskId: claims.find((c) => c.claimed)!.tasks[0]!.task.id });
      // A disabled schedule claims nothing, whatever revision the caller read.
      const disabled = (await schedules.setScheduleEnabled({ key, enabled: false }))!;
      const late = await schedules.claimTicks({ key, revision: disabled.revision, cursor: new Date(tick.getTime() + MINUTE), tasks: [task(uuidv7())] });
      expect(late.claimed).toBe(false);
      expect(await tasksOf(key)).toHaveLength(1);
    });

    it('after a downtime the newest tick runs with at most catchUp missed ones; the rest are skipped', async () => {
      const saved = await client.schedules.save(every('* * * * *', { catchUp: 2 }));
      const skipping = `${key}-skip`;
      await client.schedules.save({ ...every('* * * * *'), key: skipping });
      const later = new Date(saved.lastTickAt.getTime() + 10 * MINUTE + 1000);
      const scheduler = manualScheduler(store);
      const pass = await scheduler.runDue(later);
      const expected = minuteTicksBefore(later, 3);
      expect((await tasksOf(key)).map((t) => t.idempotencyKey).sort()).toEqual(expected.map((tick) => tickKey(key, tick)));
      expect((await tasksOf(skipping)).map((t) => t.idempotencyKey)).toEqual([tickKey(skipping, expected[2]!)]);
      expect(pass.submitted.filter((t) => t.idempotencyKey!.startsWith(`schedule:${key}:`))).toHaveLength(3);
      expect((await client.schedules.get(key))!.lastTickAt).toEqual(expected[2]);
      // The same moment again: nothing is due any more — even once cleanup has deleted those tasks (and
      // their idempotency keys): the cursor, not the key, says a tick is done.
      await client.cancelMany((await tasksOf(key)).map((t) => t.id));
      await store.purgeTerminalTasks({ finishedBefore: new Date(Date.now() + 3600_000), batchSize: 1000 });
      expect(await tasksOf(key)).toEqual([]);
      expect((await scheduler.runDue(later)).submitted.filter((t) => t.idempotencyKey!.includes(key))).toEqual([]);
      expect(pass.nextInMs).toBeLessThanOrEqual(MINUTE);
    });

    it('a disabled schedule submits nothing; enabled again it starts from now, not from before', async () => {
      await client.schedules.save(every('* * * * *', { catchUp: 100 }));
      await client.schedules.setEnabled(key, false);
      const scheduler = manualScheduler(store);
      const now = await store.now();
      await scheduler.runDue(new Date(now.getTime() + 30 * MINUTE));
      expect(await tasksOf(key)).toEqual([]);

      const enabled = await client.schedules.setEnabled(key, true);
      expect(enabled.lastTickAt.getTime()).toBeGreaterThanOrEqual(now.getTime());
      const later = new Date(enabled.lastTickAt.getTime() + 3 * MINUTE);
      await scheduler.runDue(later);
      const ticks = (await tasksOf(key)).map((t) => new Date(t.idempotencyKey!.slice(`schedule:${key}:`.length)));
      // Only the ticks after the enable, though catchUp would allow 100.
      expect(ticks.length).toBeGreaterThanOrEqual(2);
      expect(ticks.length).toBeLessThanOrEqual(3);
      for (const tick of ticks) expect(tick.getTime()).toBeGreaterThan(enabled.lastTickAt.getTime());
    });

    it('rejects a bad cron expression, time zone or field with typed errors, writing nothing', async () => {
      await expect(client.schedules.save(every('61 * * * *'))).rejects.toMatchObject({ code: ErrorCode.INVALID_CRON, field: 'cron' });
      await expect(client.schedules.save(every('every day'))).rejects.toMatchObject({ code: ErrorCode.INVALID_CRON });
      await expect(client.schedules.save(every('0 3 * * *', { timeZone: 'Mars/Olympus_Mons' }))).rejects.toMatchObject({
        code: ErrorCode.INVALID_TIME_ZONE,
        field: 'timeZone',
      });
      await expect(client.schedules.save({ ...every('0 3 * * *'), catchup: 1 } as ScheduleInput)).rejects.toMatchObject({ code: ErrorCode.VALIDATION });
      await expect(client.schedules.save(every('0 3 * * *', { catchUp: 101 }))).rejects.toMatchObject({ code: ErrorCode.VALIDATION, field: 'catchUp' });
      await expect(client.schedules.save({ ...every('0 3 * * *'), key: 'bad key' })).rejects.toMatchObject({ code: ErrorCode.VALIDATION, field: 'key' });
      expect(await client.schedules.get(key)).toBeNull();
      expect(() => createWorker({ ...FAST_WORKER, store, tasks: [report], schedules: [every('0 3 * * * * *')] })).toThrow(
        expect.objectContaining({ code: ErrorCode.INVALID_CRON }),
      );
    });

    it('a worker declaring a per-second schedule in code submits each tick on its own timer, and runs it', async () => {
      const ran: string[] = [];
      const handler = defineTask<{ n: number }>({ type: report.type, execute: async (ctx) => void ran.push(ctx.task.idempotencyKey!) });
      const worker = env.track(createWorker({ ...FAST_WORKER, store, tasks: [handler], schedules: [every('* * * * * *')], scheduleRefreshMs: 5000 }));
      worker.start();
      await waitFor(() => ran.length >= 2, 'two ticks run', 15_000);
      await worker.stop();
      const keys = (await tasksOf(key)).map((t) => t.idempotencyKey!);
      expect(new Set(keys).size).toBe(keys.length);
      expect(ran.every((k) => keys.includes(k))).toBe(true);
    });
  });
}
