/**
 * A minimal OpenTelemetry SDK for tests, written against @opentelemetry/api
 * alone (the SDK's own packages pin an older API): a TracerProvider whose
 * spans are kept in memory when they end, and an AsyncLocalStorage context
 * manager so that `context.with` really makes a span active.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  context as contextApi,
  ROOT_CONTEXT,
  trace,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type Context,
  type ContextManager,
  type Span,
  type SpanContext,
  type SpanKind,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

export interface FinishedSpan {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Attributes;
  status: SpanStatus;
}

class MemorySpan implements Span {
  private readonly attributes: Attributes;
  private status: SpanStatus = { code: 0 };
  private ended = false;

  constructor(
    private readonly tracer: MemoryTracer,
    private readonly name: string,
    private readonly kind: SpanKind,
    private readonly context: SpanContext,
    private readonly parentSpanId: string | null,
    attributes: Attributes,
  ) {
    this.attributes = { ...attributes };
  }

  spanContext(): SpanContext {
    return this.context;
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.attributes, attributes);
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.status = status;
    return this;
  }
  updateName(): this {
    return this;
  }
  isRecording(): boolean {
    return !this.ended;
  }
  recordException(): void {}
  end(): void {
    if (this.ended) return;
    this.ended = true;
    const { traceId, spanId } = this.context;
    this.tracer.finished({
      name: this.name,
      kind: this.kind,
      traceId,
      spanId,
      parentSpanId: this.parentSpanId,
      attributes: this.attributes,
      status: this.status,
    });
  }
}

class MemoryTracer implements Tracer {
  constructor(readonly finished: (span: FinishedSpan) => void) {}

  startSpan(name: string, options: SpanOptions = {}, context: Context = contextApi.active()): Span {
    const parent = options.root ? undefined : trace.getSpanContext(context);
    const spanContext = { traceId: parent?.traceId ?? randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: TraceFlags.SAMPLED };
    return new MemorySpan(this, name, options.kind ?? 0, spanContext, parent?.spanId ?? null, options.attributes ?? {});
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: unknown[]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = (rest.length > 1 ? rest[0] : {}) as SpanOptions;
    const span = this.startSpan(name, options);
    return contextApi.with(trace.setSpan(contextApi.active(), span), () => fn(span)) as ReturnType<F>;
  }
}

class AsyncContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(context: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(context, () => fn.apply(thisArg, args));
  }
  bind<T>(_context: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

/** Registers the in-memory SDK globally; `spans` fills as spans end; `unregister` puts the API back to no-ops. */
export function registerMemoryTracer(onEnd?: (span: FinishedSpan) => void): { spans: FinishedSpan[]; unregister(): void } {
  const spans: FinishedSpan[] = [];
  const tracer = new MemoryTracer((span) => {
    spans.push(span);
    onEnd?.(span);
  });
  const provider: TracerProvider = { getTracer: () => tracer };
  contextApi.setGlobalContextManager(new AsyncContextManager());
  trace.setGlobalTracerProvider(provider);
  return {
    spans,
    unregister() {
      trace.disable();
      contextApi.disable();
    },
  };
}
