/**
 * Sandboxed handlers for the sandbox suite (sandbox-suite.ts): each export is
 * one handler, named by `sandbox.exportName`, run in a worker thread (loaded
 * through tsx: this is a .ts module). Module state lives per thread: `calls`
 * counts the tasks one warm thread has run.
 */
import { writeFileSync } from 'node:fs';
import type { TaskContext } from '../../src/core/context.js';
import { TaskFailure } from '../../src/core/errors.js';

let calls = 0;

export default function echo(ctx: TaskContext, payload: unknown): unknown {
  calls += 1;
  return { status: 'SUCCESS', result: { payload, attempt: ctx.attempt, taskId: ctx.taskId, calls } };
}

/** Progress, a ctx.log line, two durable steps (the second one fails on attempt 1), a cancellation check, the flow's edges. */
export async function steps(ctx: TaskContext): Promise<unknown> {
  ctx.reportProgress({ total: 2, processed: 1, message: 'half' });
  ctx.log.info('sandboxed line', { attempt: ctx.attempt, secret: 's3cret', run: () => 'not cloneable' });
  const first = await ctx.step('first', () => ({ attempt: ctx.attempt }));
  await ctx.checkCancellation();
  const second = await ctx.step('second', () => {
    if (ctx.attempt === 1) throw new TaskFailure('second step fails once', { code: 'STEP_ONCE' });
    return ctx.attempt;
  });
  ctx.reportProgress({ processed: 2, message: 'done' });
  return { status: 'SUCCESS', result: { first, second, parents: (await ctx.parents()).length } };
}

/** ctx.fence twice: the worker's thread confirms the lease once and keeps the answer. */
export async function fenced(ctx: TaskContext): Promise<unknown> {
  return { status: 'SUCCESS', result: { fence: await ctx.fence(), again: await ctx.fence() } };
}

export function failure(): never {
  throw new TaskFailure('refused on purpose', { code: 'REFUSED', retryable: false });
}

export function plainError(): never {
  throw Object.assign(new TypeError('bad input'), { code: 'E_BAD', retryable: false });
}

/** FAULTS.md 11 inside a sandbox: the thread's event loop never comes back. */
export function busy(): never {
  for (;;);
}

export function hog(): never {
  const kept: number[][] = [];
  for (;;) kept.push(Array.from({ length: 100_000 }, (_, i) => i));
}

export function crash(): Promise<never> {
  return new Promise(() => {
    setTimeout(() => {
      throw new RangeError('thrown outside the handler');
    }, 0);
  });
}

/** Writes an ever-growing counter to `payload.file`, deaf to its signal and its event loop blocked between writes. */
export function counter(_ctx: TaskContext, payload: { file: string }): never {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let n = 1; ; n += 1) {
    writeFileSync(payload.file, String(n));
    Atomics.wait(pause, 0, 0, 10);
  }
}

/** Waits for its signal and throws its reason (a handler that honours an abort). */
export function listening(ctx: TaskContext): Promise<never> {
  return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true }));
}

export async function complete(ctx: TaskContext): Promise<void> {
  await ctx.complete(null);
}

export function unclonable(): unknown {
  return { status: 'SUCCESS', result: { fn: () => 1 } };
}

export async function unclonableStep(ctx: TaskContext): Promise<void> {
  await ctx.step('returns-a-function', () => () => 1);
}

/** FAULTS.md 13's poison pill in a sandbox: process.exit in a worker thread ends that thread only. */
export function exit(): never {
  process.exit(3);
}
