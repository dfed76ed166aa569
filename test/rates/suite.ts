/**
 * Rate limits on any store (issue 27): N starts per period per type, owner,
 * rate key (one budget per key of a KEY:<group>:* policy) and globally, with
 * the concurrency limits; a policy change applies at the next claim; an
 * exhausted key never hides another key's tasks; claim-along obeys them too.
 * Claims are called directly with periods far above a test's length, so no
 * count depends on timing (the one sliding-window test polls for its slot).
 * Each dialect runs it from test/rates/<dialect>.test.ts; the multi-process
 * sampler is test/process/rates.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/client/diagnose.js';
import { PolicyApi, type PolicyChange, type PolicyTarget } from '../../src/client/policies.js';
import { Scope } from '../../src/core/scope.js';
import { createMetrics } from '../../src/observe/metrics.js';
import { Registry } from 'prom-client';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import type { StoreFactory } from '../helpers/factory.js';
import { waitFor } from '../helpers/wait.js';
import { claimParams, leaseOf, newTask, useStore } from '../store/fixtures.js';

const MINUTE = 60_000;

function countBy(tasks: readonly Task[], key: (t: Task) => string | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of tasks) out[key(t) ?? '-'] = (out[key(t) ?? '-'] ?? 0) + 1;
  return out;
}

const done = (store: Store, tasks: readonly Task[]) =>
  store.finishAttempts({ outcomes: tasks.map((t) => ({ kind: 'SUCCESS' as const, lease: leaseOf(t), artifactId: null, resultJson: null, progress: null })) });

export function runRateSuite(factory: StoreFactory): void {
  describe(`rate limits on ${factory.dialect}`, () => {
    const current = useStore(factory);
    const policy = (target: PolicyTarget, change: PolicyChange) => new PolicyApi(current.store).update(target, change);
    const submit = (n: number, overrides: Parameters<typeof newTask>[0] = {}) =>
      current.store.insertTasks({ tasks: Array.from({ length: n }, () => newTask(overrides)) });
    const claim = (overrides: Parameters<typeof claimParams>[0] = {}) => current.store.claimTasks(claimParams(overrides));

    it('a type rate holds: N starts per period, finished or not', async () => {
      await policy('alpha', { rateLimit: 3, ratePeriodMs: MINUTE });
      await submit(6);
      const first = await claim();
      expect(first).toHaveLength(3);
      await done(current.store, first);
      expect(await claim()).toHaveLength(0);
      expect(await claim({ taskTypes: ['alpha', 'beta'] })).toHaveLength(0);
      await submit(2, { taskType: 'beta' });
      expect(await claim({ taskTypes: ['alpha', 'beta'] })).toHaveLength(2); // another type is not limited
    });

    it('the global rate counts every type', async () => {
      await policy(null, { rateLimit: 2, ratePeriodMs: MINUTE });
      await submit(3);
      await submit(3, { taskType: 'beta' });
      expect(await claim({ taskTypes: ['alpha', 'beta'] })).toHaveLength(2);
      expect(await claim({ taskTypes: ['alpha', 'beta'] })).toHaveLength(0);
    });

    it('an owner rate holds for that owner only', async () => {
      await policy({ owner: 'o1' }, { rateLimit: 2, ratePeriodMs: MINUTE });
      await submit(4, { owner: 'o1', priority: 5 });
      await submit(2, { owner: 'o2' });
      const first = await claim();
      expect(countBy(first, (t) => t.owner)).toEqual({ o1: 2, o2: 2 });
      expect(await claim()).toHaveLength(0);
    });

    it('a group policy gives every key its own budget; a key policy wins over its group', async () => {
      await policy({ rateKey: 'partner:*' }, { rateLimit: 2, ratePeriodMs: MINUTE });
      await policy({ rateKey: 'partner:b' }, { rateLimit: 1, ratePeriodMs: MINUTE });
      await submit(3, { rateKey: 'partner:a', priority: 9 });
      await submit(3, { rateKey: 'partner:b', priority: 8 });
      await submit(3, { rateKey: 'partner:c', priority: 7 });
      await submit(2, { rateKey: 'other' });
      await submit(2);
      const first = await claim({ limit: 20 });
      expect(countBy(first, (t) => t.rateKey)).toEqual({ 'partner:a': 2, 'partner:b': 1, 'partner:c': 2, other: 2, '-': 2 });
      expect(await claim({ limit: 20 })).toHaveLength(0);
    });

    it('head of line: an exhausted key does not hide another key behind its backlog', async () => {
      await policy({ rateKey: 'hot' }, { rateLimit: 1, ratePeriodMs: MINUTE });
      await submit(40, { rateKey: 'hot', priority: 10 });
      await submit(3, { rateKey: 'cold' });
      const first = await claim({ limit: 2 });
      expect(countBy(first, (t) => t.rateKey)).toEqual({ hot: 1, cold: 1 });
      const second = await claim({ limit: 2 });
      expect(countBy(second, (t) => t.rateKey)).toEqual({ cold: 2 });
    });

    it('combined with concurrency: a task starts only when both have room', async () => {
      await policy('alpha', { maxConcurrency: 2, rateLimit: 5, ratePeriodMs: MINUTE });
      await submit(10);
      const a = await claim();
      expect(a).toHaveLength(2); // concurrency binds
      await done(current.store, a);
      const b = await claim();
      expect(b).toHaveLength(2);
      await done(current.store, b);
      const c = await claim();
      expect(c).toHaveLength(1); // the rate binds: 5 starts
      await done(current.store, c);
      expect(await claim()).toHaveLength(0);
    });

    it('a policy change applies at the next claim, without a restart; clearing the rate lifts it', async () => {
      await policy('alpha', { rateLimit: 1, ratePeriodMs: MINUTE });
      await submit(6);
      expect(await claim()).toHaveLength(1);
      expect(await claim()).toHaveLength(0);
      await policy('alpha', { rateLimit: 3, ratePeriodMs: MINUTE });
      expect(await claim()).toHaveLength(2);
      await policy('alpha', { rateLimit: null, ratePeriodMs: null });
      expect(await claim()).toHaveLength(3);
    });

    it('claim-along (finishAndClaim) obeys the rates', async () => {
      await policy('alpha', { rateLimit: 2, ratePeriodMs: MINUTE });
      await submit(5);
      const first = await claim({ limit: 1 });
      expect(first).toHaveLength(1);
      const along = await current.store.finishAndClaim({
        outcomes: first.map((t) => ({ kind: 'SUCCESS' as const, lease: leaseOf(t), artifactId: null, resultJson: null, progress: null })),
        claim: claimParams(),
      });
      expect(along.claimed).toHaveLength(1);
      expect(await claim()).toHaveLength(0);
    });

    it('the window slides: a start leaves the count one period after it', async () => {
      await policy('alpha', { rateLimit: 2, ratePeriodMs: 800 });
      await submit(4);
      const first = await claim();
      expect(first).toHaveLength(2);
      const at = first[0]!.startedAt!.getTime();
      const next = await waitFor(async () => {
        const got = await claim();
        return got.length > 0 ? got : undefined;
      }, 'a slot after the period');
      expect(next).toHaveLength(2);
      expect(next[0]!.startedAt!.getTime() - at).toBeGreaterThanOrEqual(800);
    });

    it('diagnose: a waiting task is RATE_LIMITED, with its scope and when the next slot opens', async () => {
      await policy({ rateKey: 'partner:*' }, { rateLimit: 1, ratePeriodMs: MINUTE });
      const [first, second] = (await submit(2, { rateKey: 'partner:x' })).map((r) => r.task);
      const [started] = await claim();
      expect(started!.id).toBe(first!.id);
      const options = { scope: Scope.global(), globalConcurrency: 100, typeConcurrency: 100, workerSeenWithinMs: 60_000 };
      const diagnosis = await diagnose(current.store, second!.id, options);
      const cause = diagnosis.causes.find((c) => c.code === 'RATE_LIMITED');
      expect(cause?.scope).toBe('KEY:partner:x');
      expect(cause?.nextSlotAt?.getTime()).toBe(started!.startedAt!.getTime() + MINUTE);
      expect(cause?.message).toMatch(/KEY:partner:x \(policy KEY:partner:\*\) is spent: 1 of 1 starts/);
      expect(diagnosis.rates).toEqual([
        { scope: 'KEY:partner:x', policyKey: 'KEY:partner:*', rateLimit: 1, ratePeriodMs: MINUTE, used: 1, nextSlotAt: cause!.nextSlotAt },
      ]);
      const other = (await submit(1, { rateKey: 'partner:y' }))[0]!.task;
      const free = await diagnose(current.store, other.id, options);
      expect(free.causes.map((c) => c.code)).not.toContain('RATE_LIMITED');
      expect(free.rates[0]).toMatchObject({ scope: 'KEY:partner:y', used: 0, nextSlotAt: null });
    });

    it('gauges: spent scopes and window starts by scope kind, never by key', async () => {
      await policy({ rateKey: 'partner:*' }, { rateLimit: 1, ratePeriodMs: MINUTE });
      await policy('alpha', { rateLimit: 10, ratePeriodMs: MINUTE });
      await submit(2, { rateKey: 'partner:a' });
      await submit(2, { rateKey: 'partner:b' });
      await submit(1);
      expect(await claim()).toHaveLength(3);
      const registry = new Registry();
      createMetrics({ registry }).attachStore(current.store);
      const series = async (name: string) =>
        ((await registry.getMetricsAsJSON()).find((m) => m.name === name)!.values as { labels: Record<string, string>; value: number }[]).map((s) => [
          s.labels.scope_kind,
          s.value,
        ]);
      expect(await series('async_task_rate_limited_scopes')).toEqual([
        ['global', 0],
        ['type', 0],
        ['owner', 0],
        ['key', 2],
      ]);
      expect(await series('async_task_rate_window_starts')).toEqual([
        ['global', 0],
        ['type', 3],
        ['owner', 0],
        ['key', 2],
      ]);
    });

    it('rejects half a rate, and a key policy without one', async () => {
      await expect(policy('alpha', { rateLimit: 3 })).rejects.toThrow(/together/);
      await expect(policy({ rateKey: 'k' }, { maxConcurrency: 3 })).rejects.toThrow(/rate key policy/);
      await expect(policy('alpha', { rateLimit: 0, ratePeriodMs: 10 })).rejects.toThrow(/rateLimit/);
    });
  });
}
