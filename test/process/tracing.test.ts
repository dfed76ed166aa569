/**
 * OpenTelemetry across processes (issue 17): the submit span is made here,
 * the execute span in a worker process of its own, and the only thing that
 * links them is the traceparent stored with the task.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { SpanKind } from '@opentelemetry/api';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import { describeOnServer } from '../helpers/factory.js';
import { registerMemoryTracer } from '../helpers/memory-tracer.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { ChildWorker, killAllChildren } from './harness.js';

const available = await postgresAvailable('test/process/tracing.test.ts');

describeOnServer(available, 'PostgreSQL', 'OpenTelemetry spans across processes', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  let tracer: ReturnType<typeof registerMemoryTracer>;
  beforeAll(async () => {
    schema = await createTestSchema();
    store = new PostgresStore({ connectionString: PG_URL, schema: schema.name, poolSize: 2 });
    await store.migrate();
    tracer = registerMemoryTracer();
  });
  afterEach(killAllChildren);
  afterAll(async () => {
    tracer?.unregister();
    await store?.close();
    await schema?.drop();
  });

  it('the execute span in a worker process is a child of the submit span made in this one', async () => {
    const t = defineTask({ type: 'traced-remote' });
    const { task } = await createClient({ store, tasks: [t] }).submit(t, {});
    const submit = tracer.spans.find((span) => span.name === 'submit traced-remote')!;
    const child = new ChildWorker({
      label: 'traced',
      store: { dialect: 'postgres', url: PG_URL, schema: schema.name },
      types: ['traced-remote'],
      handler: 'empty',
      trace: true,
      worker: { pollIntervalMs: 50, globalConcurrency: 10, typeConcurrency: 10 },
    });
    const { span } = await child.until('span');
    expect(span).toMatchObject({ name: 'execute traced-remote', kind: SpanKind.CONSUMER, traceId: submit.traceId, parentSpanId: submit.spanId });
    expect(span!.attributes).toMatchObject({ 'tasklease.task.id': task.id, 'tasklease.task.type': 'traced-remote', 'tasklease.task.attempt': 1 });
    await child.stop();
  });
});
