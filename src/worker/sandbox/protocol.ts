/**
 * What crosses between the worker's thread and a sandboxed handler's thread
 * (pool.ts, thread.ts), by structured clone. Errors cross as plain records:
 * structured clone keeps an Error's name and message but drops its own
 * fields (code, retryable), which decide its failure record (core/failure.ts).
 */
import { ErrorCode, TaskAbortedError, TaskFailure } from '../../core/errors.js';
import type { Task, TaskProgress } from '../../core/task.js';
import type { TaskLogLevel } from '../../core/logs.js';

export type AbortCode = ConstructorParameters<typeof TaskAbortedError>[0];

/** What the thread is started with (workerData). */
export interface ThreadData {
  moduleUrl: string;
  exportName: string;
}

/** An error as it crosses: `kind` says which class to make of it on the other side. */
export interface WireError {
  kind: 'failure' | 'aborted' | 'error';
  name: string;
  message: string;
  code?: string;
  retryable?: boolean;
}

/** The context calls the thread asks the worker's thread to make for it. */
export type ContextCall =
  { method: 'checkCancellation' } | { method: 'parents' } | { method: 'children' } | { method: 'step'; name: string } | { method: 'fence' };

export type ToThread =
  | { kind: 'run'; task: Task; payload: unknown }
  | { kind: 'abort'; code: AbortCode; message: string }
  | { kind: 'reply'; callId: number; ok: true; value: unknown }
  | { kind: 'reply'; callId: number; ok: false; error: WireError }
  /** Run the fn of the ctx.step call `callId` now (the step was not recorded by an earlier attempt). */
  | { kind: 'runStep'; callId: number };

export type FromThread =
  | { kind: 'ready' }
  | { kind: 'loadFailed'; error: WireError }
  | { kind: 'progress'; progress: Partial<TaskProgress> }
  /** A ctx.log line: the worker's thread bounds, redacts, buffers and writes it. */
  | { kind: 'log'; level: TaskLogLevel; message: unknown; fields: unknown }
  | ({ kind: 'call'; callId: number } & ContextCall)
  | { kind: 'stepDone'; callId: number; ok: true; value: unknown }
  | { kind: 'stepDone'; callId: number; ok: false; error: WireError }
  | { kind: 'done'; ok: true; value: unknown }
  | { kind: 'done'; ok: false; error: WireError };

/** By name as well as by class: a handler module may import another copy of tasklease than the thread's. */
export function toWire(error: unknown): WireError {
  if (!(error instanceof Error)) return { kind: 'error', name: typeof error, message: String(error) };
  const { code, retryable } = error as { code?: unknown; retryable?: unknown };
  const fields = {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof retryable === 'boolean' ? { retryable } : {}),
  };
  if (error instanceof TaskAbortedError || error.name === 'TaskAbortedError') return { kind: 'aborted', ...fields };
  if (error instanceof TaskFailure || error.name === 'TaskFailure' || error.name === 'SandboxError') return { kind: 'failure', ...fields };
  return { kind: 'error', ...fields };
}

export function fromWire(wire: WireError): Error {
  if (wire.kind === 'aborted') return new TaskAbortedError((wire.code ?? ErrorCode.CANCELLED) as AbortCode, wire.message);
  if (wire.kind === 'failure') {
    const failure = new TaskFailure(wire.message, { code: wire.code, retryable: wire.retryable });
    failure.name = wire.name;
    return failure;
  }
  const error = new Error(wire.message) as Error & { code?: string; retryable?: boolean };
  error.name = wire.name;
  if (wire.code !== undefined) error.code = wire.code;
  if (wire.retryable !== undefined) error.retryable = wire.retryable;
  return error;
}
