/**
 * OpenTelemetry (issue 17): a submit span, and per attempt an execute span
 * that is its child — linked only through the traceparent stored with the
 * task (the worker runs outside the submit's context) — with the task's id,
 * type and attempt, status ERROR on failure, and the handler's own spans
 * nested inside. The seed's traceId is kept beside it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SpanKind, trace } from '@opentelemetry/api';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { registerMemoryTracer, type FinishedSpan } from '../helpers/memory-tracer.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

export function runTracingSuite(factory: StoreFactory): void {
  describe(`OpenTelemetry spans on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    let tracer: ReturnType<typeof registerMemoryTracer>;
    beforeAll(() => {
      tracer = registerMemoryTracer();
    });
    afterAll(() => tracer.unregister());
    beforeEach(() => {
      tracer.spans.length = 0;
    });
    const named = (prefix: string): FinishedSpan[] => tracer.spans.filter((span) => span.name.startsWith(prefix));

    it('the execute span is a child of the submit span, through the stored traceparent; the seed’s traceId is kept', async () => {
      let handlerSpan: string | undefined;
      const t = defineTask({
        type: 'traced',
        execute: () => {
          handlerSpan = trace.getActiveSpan()?.spanContext().spanId;
        },
      });
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {}, { traceId: 'req-42' });
      const [submit] = named('submit');
      expect(submit).toMatchObject({ name: 'submit traced', kind: SpanKind.PRODUCER, parentSpanId: null });
      expect(submit!.attributes).toMatchObject({ 'tasklease.task.id': task.id, 'tasklease.task.type': 'traced' });
      const stored = await env.store.getTask({ id: task.id, scope: Scope.global() });
      expect(stored).toMatchObject({ traceId: 'req-42', traceParent: `00-${submit!.traceId}-${submit!.spanId}-01` });

      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...FAST_WORKER }));
      worker.start();
      await waitFor(() => named('execute').length > 0, 'the execute span to end');
      const [execute] = named('execute');
      expect(execute).toMatchObject({ name: 'execute traced', kind: SpanKind.CONSUMER, traceId: submit!.traceId, parentSpanId: submit!.spanId });
      expect(execute!.attributes).toMatchObject({
        'tasklease.task.id': task.id,
        'tasklease.task.type': 'traced',
        'tasklease.task.attempt': 1,
        'tasklease.trace_id': 'req-42',
        'tasklease.outcome': 'SUCCESS',
      });
      expect(execute!.status.code).toBe(0); // unset: not an error
      expect(handlerSpan).toBe(execute!.spanId); // the handler runs with the execute span active
    });

    it('each attempt is a child of the one submit span; a failed attempt has status ERROR with its code', async () => {
      let runs = 0;
      const t = defineTask({
        type: 'traced-retry',
        execute: () => {
          runs += 1;
          if (runs === 1) throw new TaskFailure('first try fails', { code: 'FLAKY' });
          if (runs === 2) throw new TaskFailure('for good', { code: 'BROKEN', retryable: false });
        },
      });
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {}, { maxAttempts: 3 });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...FAST_WORKER }));
      worker.start();
      await waitFor(() => named('execute').length === 2, 'two execute spans');
      const [submit] = named('submit');
      const executes = named('execute').sort((a, b) => Number(a.attributes['tasklease.task.attempt']) - Number(b.attributes['tasklease.task.attempt']));
      for (const span of executes) expect(span).toMatchObject({ traceId: submit!.traceId, parentSpanId: submit!.spanId });
      expect(executes.map((span) => [span.attributes['tasklease.task.attempt'], span.attributes['tasklease.outcome'], span.status.code])).toEqual([
        [1, 'RETRY', 2],
        [2, 'FAILED', 2],
      ]);
      expect(executes[1]!.status.message).toMatch(/^BROKEN: /);
      expect(executes[1]!.attributes).toMatchObject({ 'tasklease.error_code': 'BROKEN', 'tasklease.task.id': task.id });
    });

    it('a batch shares one submit span; a submit inside an application span is its child', async () => {
      const t = defineTask({ type: 'traced-batch', execute: () => undefined });
      const client = createClient({ store: env.store, tasks: [t] });
      const outer = trace.getTracer('app').startSpan('http request');
      const results = await trace.getTracer('app').startActiveSpan('handler', async (span) => {
        const submitted = await client.submitMany([
          { type: 'traced-batch', payload: 1 },
          { type: 'traced-batch', payload: 2 },
        ]);
        span.end();
        return submitted;
      });
      outer.end();
      const [submit] = named('submit');
      const [handler] = named('handler');
      expect(submit).toMatchObject({ traceId: handler!.traceId, parentSpanId: handler!.spanId });
      expect(submit!.attributes['tasklease.task.count']).toBe(2);
      const parents = new Set(results.map((r) => r.task.traceParent));
      expect([...parents]).toEqual([`00-${submit!.traceId}-${submit!.spanId}-01`]);
    });
  });
}
