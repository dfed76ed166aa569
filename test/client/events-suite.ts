/**
 * Fan-out by event through the client, on any store: subscriptions managed
 * at run time, a publish creating one task per subscribed type with the
 * subscription's options, payloads checked against the schemas the client
 * knows (also of a type subscribed between the check and the transaction),
 * idempotent repeats, owners, events and metrics, and a worker running what
 * a publish created. Each dialect runs it from events-<dialect>.test.ts.
 */
import { Registry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient, type TaskLeaseClient } from '../../src/client/client.js';
import { defineTask, TaskResult } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import { createMetrics } from '../../src/observe/metrics.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { registerMemoryTracer } from '../helpers/memory-tracer.js';

const email = defineTask({ type: 'ev.email', priority: 3, maxAttempts: 4, schema: z.object({ orderId: z.string() }) });
const audit = defineTask({ type: 'ev.audit' });

export function runEventSuite(factory: StoreFactory): void {
  describe(`events on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let client: TaskLeaseClient;
    beforeEach(() => {
      client = createClient({ store: env.store, tasks: [email, audit] });
    });

    it('subscribes, lists and unsubscribes at run time, and refuses bad input with typed errors', async () => {
      await client.subscribe({ event: 'order.created', taskType: email.type });
      const updated = await client.subscribe({ event: 'order.created', taskType: email.type, priority: 50, maxAttempts: 2 });
      expect(updated).toMatchObject({ event: 'order.created', taskType: email.type, priority: 50, maxAttempts: 2 });
      await client.subscribe({ event: 'order.paid', taskType: 'billing.other-service' });
      expect((await client.listSubscriptions()).map((s) => `${s.event}/${s.taskType}`)).toEqual(['order.created/ev.email', 'order.paid/billing.other-service']);
      expect(await client.listSubscriptions({ event: 'order.paid' })).toHaveLength(1);
      expect(await client.listSubscriptions({ taskType: email.type })).toHaveLength(1);
      expect(await client.unsubscribe({ event: 'order.paid', taskType: 'billing.other-service' })).toBe(true);
      expect(await client.unsubscribe({ event: 'order.paid', taskType: 'billing.other-service' })).toBe(false);

      await expect(client.subscribe({ event: 'a:b', taskType: 'x' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'event' });
      await expect(client.subscribe({ event: '', taskType: 'x' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'event' });
      await expect(client.subscribe({ event: 'e', taskType: '' })).rejects.toMatchObject({ code: 'VALIDATION', field: 'type' });
      await expect(client.subscribe({ event: 'e', taskType: 'x', priority: 5000 })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(client.subscribe({ event: 'e', taskType: 'x', maxAttempts: 0 })).rejects.toMatchObject({ code: 'VALIDATION' });
      await expect(client.subscribe({ event: 'e', taskType: 'x', prio: 1 } as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      await expect(client.publish('bad event', {})).rejects.toMatchObject({ code: 'VALIDATION', field: 'event' });
      await expect(client.publish('e', {}, { ownr: 'x' } as never)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
      await expect(client.publish('e', {}, { idempotencyKey: 'k'.repeat(250) })).rejects.toMatchObject({ code: 'VALIDATION', field: 'idempotencyKey' });
    });

    it('publishes one task per subscribed type: the subscription’s options, else the definition’s, else the defaults; no subscriber: []', async () => {
      await client.subscribe({ event: 'order.created', taskType: email.type });
      await client.subscribe({ event: 'order.created', taskType: audit.type, priority: -5, maxAttempts: 9 });
      await client.subscribe({ event: 'order.created', taskType: 'warehouse.pick' });
      const published = client.waitFor('published');
      const { event, results } = await client.publish('order.created', { orderId: 'o-1' }, { owner: 'acme', traceId: 'tr-1' });
      expect(event).toBe('order.created');
      expect(results.map((r) => [r.task.taskType, r.created, r.task.priority, r.task.maxAttempts, r.task.owner, r.task.traceId])).toEqual([
        [audit.type, true, -5, 9, 'acme', 'tr-1'],
        [email.type, true, 3, 4, 'acme', 'tr-1'],
        ['warehouse.pick', true, 0, 3, 'acme', 'tr-1'],
      ]);
      expect(results[1]!.task.payload).toEqual({ orderId: 'o-1' });
      expect((await published).created).toHaveLength(3);
      // Owner scope: the tasks are acme's.
      expect((await client.list({ scope: Scope.owner('acme') })).tasks).toHaveLength(3);
      expect((await client.list({ scope: Scope.owner('other') })).tasks).toHaveLength(0);

      expect(await client.publish('nobody.cares', { any: 1 })).toEqual({ event: 'nobody.cares', results: [] });
    });

    it('checks the payload against each known subscribed type’s schema, writing nothing when one refuses it', async () => {
      await client.subscribe({ event: 'order.created', taskType: audit.type });
      await client.subscribe({ event: 'order.created', taskType: email.type });
      await expect(client.publish('order.created', { orderId: 42 })).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });
      expect((await client.list()).tasks).toEqual([]);
      // A client without the definition cannot check it: the task is created as the CLI's submit would.
      const bare = createClient({ store: env.store, tasks: [] });
      expect((await bare.publish('order.created', { orderId: 42 })).results).toHaveLength(2);
    });

    it('checks a type subscribed between its check and its transaction, and tries again', async () => {
      await client.subscribe({ event: 'order.created', taskType: audit.type });
      // The client reads the subscriptions before the transaction: this store hides email's the first time.
      let reads = 0;
      const lagging = new Proxy(env.store, {
        get(target, property, receiver) {
          if (property !== 'listSubscriptions') return Reflect.get(target, property, receiver);
          return async (params: Parameters<Store['listSubscriptions']>[0]) => {
            reads += 1;
            const rows = await target.listSubscriptions(params);
            if (reads === 1)
              await target.saveSubscription({ subscription: { event: 'order.created', taskType: email.type, priority: null, maxAttempts: null } });
            return rows;
          };
        },
      });
      const racing = createClient({ store: lagging, tasks: [email, audit] });
      await expect(racing.publish('order.created', { orderId: 42 })).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });
      expect((await client.list()).tasks).toEqual([]);
      const { results } = await racing.publish('order.created', { orderId: 'o-2' });
      expect(results.map((r) => r.task.taskType)).toEqual([audit.type, email.type]);
    });

    it('a repeat with the same key returns the same tasks (created: false); a type subscribed since gets its own once', async () => {
      await client.subscribe({ event: 'user.signed-up', taskType: audit.type });
      const first = await client.publish('user.signed-up', {}, { idempotencyKey: 'u-1', owner: 'acme' });
      expect(first.results[0]!.task.idempotencyKey).toBe('event:user.signed-up:u-1');
      const again = await client.publish('user.signed-up', {}, { idempotencyKey: 'u-1', owner: 'acme' });
      expect(again.results.map((r) => [r.task.id, r.created])).toEqual([[first.results[0]!.task.id, false]]);
      await client.subscribe({ event: 'user.signed-up', taskType: 'crm.sync' });
      const third = await client.publish('user.signed-up', {}, { idempotencyKey: 'u-1', owner: 'acme' });
      expect(third.results.map((r) => [r.task.taskType, r.created])).toEqual([
        ['crm.sync', true],
        [audit.type, false],
      ]);
      // Another owner's publish with the same key is its own.
      expect((await client.publish('user.signed-up', {}, { idempotencyKey: 'u-1', owner: 'zeta' })).results.map((r) => r.created)).toEqual([true, true]);
    });

    it('counts publishes and the tasks they created, the event as a label only when something subscribes to it', async () => {
      const registry = new Registry();
      const metrics = createMetrics({ registry });
      const detach = metrics.attachClient(client);
      await client.subscribe({ event: 'order.created', taskType: audit.type });
      await client.publish('order.created', {}, { idempotencyKey: 'k' });
      await client.publish('order.created', {}, { idempotencyKey: 'k' });
      await client.publish('made.up.by.a.caller', {});
      detach();
      const published = await registry.getSingleMetric('async_task_events_published_total')!.get();
      expect(published.values.map((v) => [v.labels.event, v.value])).toEqual([
        ['order.created', 2],
        ['', 1],
      ]);
      const created = await registry.getSingleMetric('async_task_event_tasks_created_total')!.get();
      expect(created.values.map((v) => [v.labels.event, v.value])).toEqual([['order.created', 1]]);
      const submitted = await registry.getSingleMetric('async_task_submitted_total')!.get();
      expect(submitted.values.map((v) => [v.labels.task_type, v.value])).toEqual([[audit.type, 1]]);
    });

    it('traces a publish as one submit span, its traceparent on every task it created', async () => {
      const tracer = registerMemoryTracer();
      try {
        await client.subscribe({ event: 'traced', taskType: audit.type });
        await client.subscribe({ event: 'traced', taskType: 'other.type' });
        const { results } = await client.publish('traced', {});
        const span = tracer.spans.find((s) => s.name === `submit ${audit.type},other.type`)!;
        expect(span.attributes).toMatchObject({ 'tasklease.task.count': 2, 'tasklease.task.created': 2 });
        for (const { task } of results) expect(task.traceParent).toContain(span.spanId);
      } finally {
        tracer.unregister();
      }
    });

    it('a worker runs what a publish created, each type its own task', async () => {
      const ran: string[] = [];
      const a = defineTask({ type: 'ev.run.a', execute: () => (ran.push('a'), TaskResult.success({})) });
      const b = defineTask({ type: 'ev.run.b', execute: () => (ran.push('b'), TaskResult.success({})) });
      const runner = createClient({ store: env.store, tasks: [a, b] });
      await runner.subscribe({ event: 'go', taskType: a.type });
      await runner.subscribe({ event: 'go', taskType: b.type });
      const { results } = await runner.publish('go', { n: 1 });
      await env.track(createWorker({ store: env.store, tasks: [a, b], ...FAST_WORKER })).start();
      for (const { task } of results) expect((await runner.waitFor(task.id, { timeoutMs: 20_000 })).status).toBe('SUCCESS');
      expect(ran.sort()).toEqual(['a', 'b']);
    });
  });
}
