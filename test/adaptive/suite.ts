/**
 * Adaptive limits on any store (issue 27, part 3): the operator's API and the
 * audit trail, the compare-and-set that makes one step per cooldown however
 * many workers evaluate, the operator's override, and a simulated downstream
 * that fails above a capacity — the limit converges near it and the failure
 * rate falls. Each dialect runs it from test/adaptive/<dialect>.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { ErrorCode, TaskFailure } from '../../src/core/errors.js';
import { adaptiveStoreOf } from '../../src/store/adaptive.js';
import { nextLimit } from '../../src/store/rules/adaptive.js';
import { createWorker } from '../../src/worker/worker.js';
import { createMetrics } from '../../src/observe/metrics.js';
import { Registry } from 'prom-client';
import { AdaptiveController } from '../../src/worker/adaptive-controller.js';
import { systemClock } from '../../src/core/clock.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const TYPE = 'adaptive.call';
const noEvents = { emit: () => undefined, listening: () => false, storeAnswered: () => undefined } as never;

export function runAdaptiveSuite(factory: StoreFactory): void {
  describe(`adaptive limits on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    it('set starts from the policy clamped to the bounds, writes the policy and the trail; off keeps the limit', async () => {
      const client = createClient({ store: env.store, tasks: [], actor: 'ops' });
      await client.policies.update(TYPE, { maxConcurrency: 50, maxAttempts: 4 });
      const state = await client.adaptive.set(TYPE, { minLimit: 2, maxLimit: 20, codes: ['HTTP_503'], cooldownMs: 1000 });
      expect(state).toMatchObject({ taskType: TYPE, enabled: true, overridden: false, currentLimit: 20, minLimit: 2, maxLimit: 20, codes: ['HTTP_503'] });
      const policy = await client.policies.get(TYPE);
      expect(policy).toMatchObject({ maxConcurrency: 20, maxAttempts: 4 });
      const [set] = await client.adaptive.history(TYPE);
      expect(set).toMatchObject({ kind: 'set', fromLimit: 50, toLimit: 20, actor: 'ops' });
      expect(set!.cause).toContain('2..20');
      const off = await client.adaptive.disable(TYPE);
      expect(off).toMatchObject({ enabled: false, currentLimit: 20 });
      expect((await client.adaptive.history(TYPE)).map((c) => c.kind)).toEqual(['off', 'set']);
      // A type without a policy starts at its maximum, with a policy row made for it.
      const fresh = await client.adaptive.set('adaptive.other', { maxLimit: 7 });
      expect(fresh.currentLimit).toBe(7);
      expect((await client.policies.get('adaptive.other'))?.maxConcurrency).toBe(7);
      await expect(client.adaptive.set(TYPE, { maxLimit: 3, minLimit: 4 })).rejects.toMatchObject({ code: ErrorCode.VALIDATION, field: 'minLimit' });
      await expect(client.adaptive.set(TYPE, { maxLimit: 3, decreaseFactor: 1 })).rejects.toMatchObject({ field: 'decreaseFactor' });
      await expect(client.adaptive.set(TYPE, { maxLimit: 3, bogus: 1 } as never)).rejects.toMatchObject({ code: ErrorCode.VALIDATION });
      await expect(client.adaptive.disable('adaptive.never')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
      // Cleanup trims the trail by age, with the tasks' cut-off.
      const purged = await client.cleanup({ finishedBefore: new Date((await env.store.now()).getTime() + 60_000) });
      expect(purged.limitChanges).toBe(3);
      expect(await client.adaptive.history(TYPE)).toEqual([]);
    });

    it('the rule: multiplicative decrease at the threshold (counted codes only), additive increase below, within bounds', () => {
      const base = {
        taskType: TYPE,
        minLimit: 2,
        maxLimit: 10,
        windowMs: 30_000,
        minSamples: 10,
        failureThreshold: 0.2,
        codes: ['HTTP_503'],
        decreaseFactor: 0.5,
        increaseStep: 1,
        cooldownMs: 0,
        enabled: true,
        overridden: false,
        overrideUntil: null,
        currentLimit: 8,
        changedAt: new Date(),
        updatedAt: new Date(),
      };
      const down = nextLimit(base, { finished: 40, failed: 17, byCode: { HTTP_503: 17 } }, 30_000);
      expect(down).toMatchObject({ to: 4, kind: 'decrease' });
      expect(down!.cause).toBe('failure rate 0.42 ≥ 0.2 over 30 s, 40 attempts (HTTP_503 ×17)');
      // Other codes do not count; too few samples decide nothing; the bounds hold.
      expect(nextLimit(base, { finished: 40, failed: 17, byCode: { HANDLER_ERROR: 17 } }, 30_000)).toMatchObject({ to: 9, kind: 'increase' });
      expect(nextLimit(base, { finished: 9, failed: 9, byCode: { HTTP_503: 9 } }, 30_000)).toBeNull();
      expect(nextLimit({ ...base, currentLimit: 3 }, { finished: 10, failed: 10, byCode: { HTTP_503: 10 } }, 30_000)).toMatchObject({ to: 2 });
      expect(nextLimit({ ...base, currentLimit: 2 }, { finished: 10, failed: 10, byCode: { HTTP_503: 10 } }, 30_000)).toBeNull();
      expect(nextLimit({ ...base, currentLimit: 10 }, { finished: 10, failed: 0, byCode: {} }, 30_000)).toBeNull();
      expect(nextLimit({ ...base, codes: null }, { finished: 10, failed: 2, byCode: { ANY: 2 } }, 30_000)).toMatchObject({ to: 4 });
    });

    it('N controllers evaluating at once make one step per cooldown (compare-and-set on the limit, the policy and the trail together)', async () => {
      // The window must hold finished failures of the type: four failed attempts, run by a worker with no controller.
      const failing = defineTask<object>({ type: TYPE, maxAttempts: 1, execute: () => Promise.reject(new TaskFailure('down', { code: 'HTTP_503' })) });
      const client = createClient({ store: env.store, tasks: [failing] });
      await client.adaptive.set(TYPE, { maxLimit: 16, minSamples: 4, failureThreshold: 0.5, cooldownMs: 60_000, windowMs: 60_000 });
      const ids = await Promise.all([1, 2, 3, 4].map(async () => (await client.submit(TYPE, {})).task.id));
      env.track(createWorker({ store: env.store, tasks: [failing], ...FAST_WORKER, adaptiveIntervalMs: 0 })).start();
      await waitFor(async () => (await Promise.all(ids.map((id) => client.get(id)))).every((t) => t?.status === 'FAILED'), 'four failed attempts');
      // The set's own change started the cooldown: move it back, as if the last change were long ago.
      const adaptive = await adaptiveStoreOf(env.store);
      const state = (await adaptive.getAdaptive({ taskType: TYPE }))!;
      const now = await env.store.now();
      const old = { ...state, changedAt: new Date(now.getTime() - 120_000) };
      const stepped = await Promise.all(Array.from({ length: 5 }, () => adaptive.step({ state: old, step: { to: 8, kind: 'decrease', cause: 'test' }, now })));
      // The rows still say changed_at = the set's time, within the cooldown: none of these may apply.
      expect(stepped.filter(Boolean)).toHaveLength(0);
      // Five controllers over the real row, cooldown 0: exactly one step.
      await client.adaptive.set(TYPE, { maxLimit: 16, minSamples: 4, failureThreshold: 0.5, cooldownMs: 0, windowMs: 60_000 });
      const controllers = Array.from({ length: 5 }, () => new AdaptiveController(env.store, systemClock, noEvents, [TYPE], { adaptiveIntervalMs: 0 }));
      // The set's change is "now": the window starting there has no samples; the rule needs a window before it.
      await waitFor(async () => (await env.store.now()).getTime() > (await adaptive.getAdaptive({ taskType: TYPE }))!.changedAt.getTime(), 'the clock to move');
      const windowed = await adaptive.outcomeCounts({ since: new Date(0), scope: { taskType: TYPE } });
      expect(windowed).toMatchObject({ finished: 4, failed: 4, byCode: { HTTP_503: 4 } });
      const fresh = (await adaptive.getAdaptive({ taskType: TYPE }))!;
      const results = await Promise.all(
        controllers.map(() => adaptive.step({ state: fresh, step: { to: 8, kind: 'decrease', cause: 'race' }, now: new Date(fresh.changedAt.getTime() + 1) })),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await client.adaptive.get(TYPE))?.currentLimit).toBe(8);
      expect((await client.policies.get(TYPE))?.maxConcurrency).toBe(8);
      const trail = await client.adaptive.history(TYPE);
      expect(trail.filter((c) => c.cause === 'race')).toHaveLength(1);
      expect(trail[0]).toMatchObject({ kind: 'decrease', fromLimit: 16, toLimit: 8, actor: 'adaptive' });
    });

    it('an operator override wins: recorded, adaptation suspended until resumed or for a chosen time; a policy write in between is never overwritten', async () => {
      const client = createClient({ store: env.store, tasks: [], actor: { id: 'token:1', name: 'ops-laptop' } });
      await client.adaptive.set(TYPE, { maxLimit: 10, cooldownMs: 0 });
      await client.policies.update(TYPE, { maxConcurrency: 3 });
      let state = (await client.adaptive.get(TYPE))!;
      expect(state).toMatchObject({ overridden: true, overrideUntil: null, currentLimit: 3 });
      const [override] = await client.adaptive.history(TYPE);
      expect(override).toMatchObject({ kind: 'override', fromLimit: 10, toLimit: 3, actor: 'token:1', actorName: 'ops-laptop' });
      // The controller's step loses while overridden.
      const adaptive = await adaptiveStoreOf(env.store);
      const now = new Date((await env.store.now()).getTime() + 1000);
      expect(await adaptive.step({ state: { ...state, overridden: false }, step: { to: 4, kind: 'increase', cause: 'x' }, now })).toBe(false);
      state = await client.adaptive.resume(TYPE);
      expect(state).toMatchObject({ overridden: false, currentLimit: 3 });
      // A policy written behind the controller's back (its read said 3): the step sees the policy moved and changes nothing.
      await env.store.savePolicy({
        policy: { policyKey: `TYPE:${TYPE}`, taskType: TYPE, maxConcurrency: 6, maxAttempts: null, retryBaseDelayMs: null, enabled: true },
      });
      const later = new Date(state.changedAt.getTime() + 1000);
      expect(await adaptive.step({ state, step: { to: 4, kind: 'increase', cause: 'x' }, now: later })).toBe(false);
      expect((await client.policies.get(TYPE))?.maxConcurrency).toBe(6);
      // An override for a while ends by itself: the controller resumes at its next evaluation.
      await client.adaptive.override(TYPE, 5, { overrideForMs: 1 });
      expect((await client.adaptive.get(TYPE))?.overridden).toBe(true);
      const controller = new AdaptiveController(env.store, systemClock, noEvents, [TYPE], { adaptiveIntervalMs: 0 });
      await waitFor(async () => {
        await controller.evaluate();
        return (await client.adaptive.get(TYPE))?.overridden === false;
      }, 'the override to expire');
      const kinds = (await client.adaptive.history(TYPE)).map((c) => c.kind);
      expect(kinds.slice(0, 3)).toEqual(['resume', 'override', 'resume']);
      // A reset of the policy (back to the workers' default) turns adaptation off: the limit it moved is gone.
      await client.policies.reset(TYPE);
      expect(await client.adaptive.get(TYPE)).toMatchObject({ enabled: false });
      expect((await client.adaptive.history(TYPE))[0]).toMatchObject({ kind: 'off', actor: 'token:1' });
      // A non-adaptive type's policy change records nothing.
      await client.policies.update('plain.type', { maxConcurrency: 4 });
      expect(await client.adaptive.history('plain.type')).toEqual([]);
    });

    it('converges near a downstream capacity: the limit steps down from its maximum and the failure rate falls below the threshold', async () => {
      const CAPACITY = 8;
      const THRESHOLD = 0.1;
      let inFlight = 0;
      const outcomes: { at: number; failed: boolean }[] = [];
      // The downstream: each call takes ~20 ms; a call that finds more than CAPACITY in flight answers 503 after the same time.
      const call = defineTask<object>({
        type: TYPE,
        maxAttempts: 1,
        execute: async () => {
          inFlight++;
          const overloaded = inFlight > CAPACITY;
          try {
            await new Promise((resolve) => setTimeout(resolve, 20));
          } finally {
            inFlight--;
          }
          outcomes.push({ at: Date.now(), failed: overloaded });
          if (overloaded) throw new TaskFailure('service unavailable', { code: 'HTTP_503', retryable: false });
        },
      });
      const client = createClient({ store: env.store, tasks: [call] });
      await client.adaptive.set(TYPE, {
        minLimit: 1,
        maxLimit: 20,
        windowMs: 1500,
        minSamples: 12,
        failureThreshold: THRESHOLD,
        codes: ['HTTP_503'],
        decreaseFactor: 0.5,
        increaseStep: 1,
        cooldownMs: 300,
      });
      const feed = async (n: number) => client.submitMany(Array.from({ length: n }, () => ({ type: TYPE, payload: {} })));
      await feed(4000);
      const worker = env.track(createWorker({ store: env.store, tasks: [call], ...FAST_WORKER, concurrency: 24, adaptiveIntervalMs: 50 })).start();
      const metrics = createMetrics({ registry: new Registry() });
      metrics.attachStore(env.store);
      metrics.attachWorker(worker);
      // Converged: a decrease has happened and the limit has spent its last 6 changes within [CAPACITY/2, CAPACITY+2].
      const trajectory = async () => (await client.adaptive.history(TYPE, { limit: 1000 })).reverse();
      await waitFor(
        async () => {
          const changes = (await trajectory()).filter((c) => c.kind === 'increase' || c.kind === 'decrease');
          const last = changes.slice(-6);
          return last.length === 6 && last.every((c) => c.toLimit! >= CAPACITY / 2 && c.toLimit! <= CAPACITY + 2);
        },
        'the limit to settle near the capacity',
        60_000,
        100,
      );
      // The window after settling: failures below the threshold (the overloaded first window: far above it).
      const settledAt = Date.now();
      await waitFor(() => outcomes.filter((o) => o.at >= settledAt).length >= 1000, '1000 calls after settling', 60_000, 50);
      await worker.stop();
      // /metrics: the limit in force per type, and the controller's changes by direction (counted where they were made).
      const scraped = await metrics.registry.metrics();
      const gauge = Number(/async_task_adaptive_limit\{task_type="adaptive\.call"\} (\d+)/.exec(scraped)?.[1]);
      expect(gauge).toBe((await client.adaptive.get(TYPE))!.currentLimit);
      expect(scraped).toMatch(/async_task_limit_changes_total\{task_type="adaptive\.call",direction="decrease"\} [1-9]/);
      expect(scraped).toMatch(/async_task_limit_changes_total\{task_type="adaptive\.call",direction="increase"\} [1-9]/);
      const path = (await trajectory()).map((c) => c.toLimit);
      const early = outcomes.slice(0, 60);
      const late = outcomes.filter((o) => o.at >= settledAt);
      const rate = (list: typeof outcomes) => list.filter((o) => o.failed).length / list.length;
      console.log(
        `[${factory.dialect}] capacity ${CAPACITY}: limit path ${path.join(' → ')}; failure rate first 60 calls ${rate(early).toFixed(2)}, after settling ${rate(late).toFixed(2)} (${late.length} calls)`,
      );
      expect(path[0]).toBe(20);
      expect(rate(early)).toBeGreaterThan(THRESHOLD);
      expect(rate(late)).toBeLessThan(THRESHOLD);
    }, 120_000);
  });
}
