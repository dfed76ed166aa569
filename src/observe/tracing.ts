/**
 * OpenTelemetry through `@opentelemetry/api` only: a PRODUCER span around
 * each submit and a CONSUMER span around each attempt, linked across
 * processes by the submit span's W3C traceparent, stored with the task
 * (column trace_parent; trace_id stays the producer's own correlation id).
 *
 * No SDK here: the application registers one, or every span is the API's
 * no-op. The API is an optional peer dependency, loaded on first use through
 * require (synchronous: the hot path never waits for it); without it tracing
 * is off for good. Its types are restated structurally below so that our
 * declarations never name the package.
 */
import { createRequire } from 'node:module';
import type { Task } from '../core/task.js';

type Attributes = Record<string, string | number | boolean>;

interface SpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
}

interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
}

interface OtelApi {
  trace: {
    getTracerProvider(): { getDelegate?(): unknown };
    getTracer(name: string, version?: string): { startSpan(name: string, options: { kind: number; attributes: Attributes }, context: unknown): Span };
    setSpan(context: unknown, span: Span): unknown;
    setSpanContext(context: unknown, spanContext: SpanContext): unknown;
  };
  context: { active(): unknown; with<R>(context: unknown, fn: () => R): R };
  ROOT_CONTEXT: unknown;
  isSpanContextValid(spanContext: SpanContext): boolean;
  SpanKind: { PRODUCER: number; CONSUMER: number };
  SpanStatusCode: { ERROR: number };
  ProxyTracerProvider: new () => { getDelegate(): unknown };
}

const TRACER = 'tasklease';
let loaded: OtelApi | null | undefined;
/** The API's no-op provider: what the global provider delegates to until an SDK registers one. */
let noopProvider: unknown;

/**
 * The API when an SDK is registered; null otherwise (not installed, or no
 * provider). Without a provider every span would be a no-op, yet making one,
 * its attributes and its context cost ~3.5 µs per attempt: skipped.
 */
function otel(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
      noopProvider = new loaded.ProxyTracerProvider().getDelegate();
    } catch {
      loaded = null;
    }
  }
  if (!loaded) return null;
  // (An API without getDelegate cannot tell: spans are made.)
  return loaded.trace.getTracerProvider().getDelegate?.() === noopProvider ? null : loaded;
}

/** A span of ours, or nothing when the API is absent. */
export interface TaskSpan {
  /** Runs `fn` with this span active (handlers' own spans become its children). */
  run<R>(fn: () => R): R;
  /** Ends it; `failure` (an error code or error) sets status ERROR. */
  end(failure?: string | Error | null, attributes?: Attributes): void;
}

/** The submit span (current context as parent) and the traceparent every task of the batch stores. */
export function startSubmitSpan(tasks: readonly { taskType: string; id: string }[]): { span: TaskSpan; traceParent: string | null } | null {
  const api = otel();
  if (!api) return null;
  const types = [...new Set(tasks.map((t) => t.taskType))];
  const attributes: Attributes = {
    'messaging.system': TRACER,
    'messaging.operation.type': 'send',
    'messaging.destination.name': types.join(','),
    'tasklease.task.type': types.join(','),
    'tasklease.task.count': tasks.length,
  };
  if (tasks.length === 1) attributes['tasklease.task.id'] = tasks[0]!.id;
  const span = api.trace.getTracer(TRACER).startSpan(`submit ${types.join(',')}`, { kind: api.SpanKind.PRODUCER, attributes }, api.context.active());
  const context = span.spanContext();
  return { span: wrap(api, span, api.context.active()), traceParent: api.isSpanContextValid(context) ? formatTraceParent(context) : null };
}

/** The span of one attempt: a child of the submit span whose traceparent the task carries (a root span without one). */
export function startExecuteSpan(task: Task, workerId: string): TaskSpan | null {
  const api = otel();
  if (!api) return null;
  const remote = task.traceParent ? parseTraceParent(task.traceParent) : null;
  const parent = remote && api.isSpanContextValid(remote) ? api.trace.setSpanContext(api.ROOT_CONTEXT, remote) : api.ROOT_CONTEXT;
  const attributes: Attributes = {
    'messaging.system': TRACER,
    'messaging.operation.type': 'process',
    'messaging.destination.name': task.taskType,
    'messaging.message.id': task.id,
    'tasklease.task.id': task.id,
    'tasklease.task.type': task.taskType,
    'tasklease.task.attempt': task.attemptCount,
    'tasklease.worker.id': workerId,
  };
  if (task.traceId !== null) attributes['tasklease.trace_id'] = task.traceId;
  const span = api.trace.getTracer(TRACER).startSpan(`execute ${task.taskType}`, { kind: api.SpanKind.CONSUMER, attributes }, parent);
  return wrap(api, span, parent);
}

function wrap(api: OtelApi, span: Span, parent: unknown): TaskSpan {
  return {
    run: (fn) => api.context.with(api.trace.setSpan(parent, span), fn),
    end: (failure, attributes) => {
      for (const [key, value] of Object.entries(attributes ?? {})) span.setAttribute(key, value);
      if (failure) {
        if (failure instanceof Error) span.recordException(failure);
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: failure instanceof Error ? failure.message : failure });
      }
      span.end();
    },
  };
}

const TRACE_PARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** W3C trace context, version 00: `00-<trace id>-<span id>-<flags>`. */
export function formatTraceParent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A stored traceparent as a remote span context; null when it is not one (never throws: it came from a row). */
export function parseTraceParent(text: string): SpanContext | null {
  const match = TRACE_PARENT.exec(text);
  if (!match || match[1] === 'ff' || (match[1] === '00' && match[5] !== undefined)) return null;
  return { traceId: match[2]!, spanId: match[3]!, traceFlags: parseInt(match[4]!, 16), isRemote: true };
}
