/**
 * The entry of a sandboxed handler's thread (pool.ts starts it): loads the
 * handler's module once, then runs one task at a time with a context that
 * lives here and asks the worker's thread for what only it can do (progress,
 * the cancellation check, a step's record, the flow's edges, the fence). The worker's
 * thread writes everything, fenced by the lease as always; this thread never
 * touches the store. ctx.complete(tx) cannot work here (the caller's
 * transaction lives in the worker's thread): it throws SANDBOX_UNSUPPORTED.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { RelatedTask, TaskContext } from '../../core/context.js';
import { ErrorCode, SandboxError, TaskAbortedError } from '../../core/errors.js';
import type { Task, TaskProgress } from '../../core/task.js';
import type { TaskLogger, TaskLogLevel } from '../../core/logs.js';
import { fromWire, toWire, type ContextCall, type FromThread, type ThreadData, type ToThread } from './protocol.js';

type Handler = (ctx: TaskContext, payload: unknown) => unknown;

const port = parentPort!;
const post = (message: FromThread): void => port.postMessage(message);
const { moduleUrl, exportName } = workerData as ThreadData;

/** The run in progress: its abort, its calls waiting for a reply, its step functions waiting to be run. */
interface Run {
  controller: AbortController;
  calls: Map<number, { resolve(value: unknown): void; reject(error: Error): void }>;
  steps: Map<number, () => unknown>;
}

let current: Run | null = null;
let nextCallId = 1;

function call(run: Run, request: ContextCall, callId = nextCallId++): Promise<unknown> {
  return new Promise((resolve, reject) => {
    run.calls.set(callId, { resolve, reject });
    post({ kind: 'call', callId, ...request });
  });
}

function postLog(level: TaskLogLevel, message: unknown, fields: unknown): void {
  const text = typeof message === 'string' ? message : String(message);
  try {
    post({ kind: 'log', level, message: text, fields });
  } catch {
    // Fields structured clone cannot carry (a function, a class with private state): what JSON keeps of them.
    let plain: unknown;
    try {
      plain = JSON.parse(JSON.stringify(fields) ?? 'null');
    } catch {
      plain = { unserializable: true };
    }
    post({ kind: 'log', level, message: text, fields: plain });
  }
}

class ThreadContext implements TaskContext {
  readonly taskId: string;
  readonly taskType: string;
  readonly attempt: number;
  readonly owner: string | null;
  readonly traceId: string | null;
  readonly signal: AbortSignal;

  constructor(
    readonly task: Task,
    private readonly run: Run,
  ) {
    this.taskId = task.id;
    this.taskType = task.taskType;
    this.attempt = task.attemptCount;
    this.owner = task.owner;
    this.traceId = task.traceId;
    this.signal = run.controller.signal;
  }

  reportProgress(progress: Partial<TaskProgress>): void {
    post({ kind: 'progress', progress });
  }

  /** ctx.log: each line is posted to the worker's thread, which keeps it as for any handler. */
  readonly log: TaskLogger = {
    info: (message, fields) => postLog('info', message, fields),
    warn: (message, fields) => postLog('warn', message, fields),
    error: (message, fields) => postLog('error', message, fields),
  };

  async checkCancellation(): Promise<void> {
    this.throwIfAborted();
    await call(this.run, { method: 'checkCancellation' });
    this.throwIfAborted();
  }

  throwIfAborted(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }

  complete(): Promise<void> {
    const message = 'ctx.complete(tx) cannot run in a sandboxed handler: its transaction would live in another thread than the store';
    return Promise.reject(new SandboxError(ErrorCode.SANDBOX_UNSUPPORTED, message, { retryable: false }));
  }

  async parents(): Promise<RelatedTask[]> {
    return (await call(this.run, { method: 'parents' })) as RelatedTask[];
  }

  async children(): Promise<RelatedTask[]> {
    return (await call(this.run, { method: 'children' })) as RelatedTask[];
  }

  /** The worker's thread takes the fence (its durable confirmation) and keeps it for the attempt. */
  async fence(): Promise<number> {
    return (await call(this.run, { method: 'fence' })) as number;
  }

  async step<T>(name: string, fn: () => T | Promise<T>): Promise<Awaited<T>> {
    // The worker's thread decides whether fn runs (a step recorded by an earlier attempt does not): it asks with runStep.
    const callId = nextCallId++;
    this.run.steps.set(callId, fn);
    try {
      return (await call(this.run, { method: 'step', name }, callId)) as Awaited<T>;
    } finally {
      this.run.steps.delete(callId);
    }
  }
}

async function runStep(run: Run, callId: number): Promise<void> {
  let value: unknown;
  try {
    value = await run.steps.get(callId)!();
  } catch (error) {
    post({ kind: 'stepDone', callId, ok: false, error: toWire(error) });
    return;
  }
  try {
    post({ kind: 'stepDone', callId, ok: true, value });
  } catch (error) {
    // Not storable as JSON either: the step fails for good, like a result JSON cannot hold.
    const message = `the step's result cannot cross from its sandbox: ${(error as Error).message}`;
    post({
      kind: 'stepDone',
      callId,
      ok: false,
      error: { kind: 'failure', name: 'SandboxError', message, code: ErrorCode.SANDBOX_NOT_CLONEABLE, retryable: false },
    });
  }
}

async function execute(handler: Handler, task: Task, payload: unknown): Promise<void> {
  const run: Run = { controller: new AbortController(), calls: new Map(), steps: new Map() };
  current = run;
  try {
    const value = await handler(new ThreadContext(task, run), payload);
    try {
      post({ kind: 'done', ok: true, value });
    } catch (error) {
      // A result structured clone cannot carry (a function, a class with private state) is not storable either.
      const message = `the handler's result cannot cross from its sandbox: ${(error as Error).message}`;
      post({ kind: 'done', ok: false, error: { kind: 'failure', name: 'SandboxError', message, code: ErrorCode.RESULT_NOT_SERIALIZABLE, retryable: false } });
    }
  } catch (error) {
    post({ kind: 'done', ok: false, error: toWire(error) });
  } finally {
    if (current === run) current = null;
  }
}

function onMessage(handler: Handler, message: ToThread): void {
  if (message.kind === 'run') {
    void execute(handler, message.task, message.payload);
    return;
  }
  const run = current;
  if (!run) return; // about a run that has ended
  if (message.kind === 'abort') run.controller.abort(new TaskAbortedError(message.code, message.message));
  else if (message.kind === 'runStep') void runStep(run, message.callId);
  else {
    const waiting = run.calls.get(message.callId);
    run.calls.delete(message.callId);
    if (message.ok) waiting?.resolve(message.value);
    else waiting?.reject(fromWire(message.error));
  }
}

async function load(): Promise<Handler | null> {
  try {
    const module = (await import(moduleUrl)) as Record<string, unknown>;
    const handler = module[exportName];
    if (typeof handler === 'function') return handler as Handler;
    const message = `sandbox module ${moduleUrl} does not export a function named ${exportName}`;
    post({ kind: 'loadFailed', error: { kind: 'failure', name: 'SandboxError', message, code: ErrorCode.SANDBOX_MODULE_INVALID, retryable: true } });
  } catch (error) {
    const message = `sandbox module ${moduleUrl} could not be loaded: ${(error as Error)?.message ?? String(error)}`;
    post({ kind: 'loadFailed', error: { kind: 'failure', name: 'SandboxError', message, code: ErrorCode.SANDBOX_MODULE_INVALID, retryable: true } });
  }
  return null;
}

const handler = await load();
if (handler) {
  port.on('message', (message: ToThread) => onMessage(handler, message));
  post({ kind: 'ready' });
}
