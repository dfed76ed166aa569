/**
 * Awaiting a task's outcome from any process: a read of the task by its
 * primary key, repeated with backoff until its status is terminal. The
 * workers' finish path is untouched (no NOTIFY per outcome, no flag to
 * write), so a drain nobody waits on costs exactly what it did; a waiter
 * costs one indexed read per poll, at most `maxPollMs` apart.
 */
import { NotFoundError, ValidationError, WaitError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import { isTerminal } from '../core/status.js';
import type { Task } from '../core/task.js';
import { checkKnownKeys, keysOf } from '../core/validate.js';

export interface WaitOptions {
  /** Rejects with WAIT_TIMEOUT after this many milliseconds (1 to 24 h). Default: no limit. */
  timeoutMs?: number;
  /** Rejects with WAIT_ABORTED when it aborts. */
  signal?: AbortSignal;
  /** The first poll comes after `minPollMs`, each next one 1.5 times later, up to `maxPollMs`. Defaults 25 and 1000. */
  minPollMs?: number;
  maxPollMs?: number;
  scope?: Scope;
}

const KEYS = keysOf<WaitOptions>({ timeoutMs: true, signal: true, minPollMs: true, maxPollMs: true, scope: true });
const MAX_TIMEOUT_MS = 24 * 3600 * 1000;

export async function waitForTask(read: (id: string) => Promise<Task | null>, id: string, options: WaitOptions): Promise<Task> {
  checkKnownKeys('waitFor', options, KEYS);
  const timeoutMs = checkMs('timeoutMs', options.timeoutMs, 1, MAX_TIMEOUT_MS);
  const minPollMs = checkMs('minPollMs', options.minPollMs, 1, 60_000) ?? 25;
  const maxPollMs = checkMs('maxPollMs', options.maxPollMs, minPollMs, 60_000) ?? Math.max(1000, minPollMs);
  const stop = stopSignal(options.signal, timeoutMs);
  try {
    let pollMs = minPollMs;
    let task: Task | null = null;
    for (;;) {
      if (stop.signal.aborted) throw new WaitError(id, stop.reason(), task?.status ?? null);
      task = await read(id);
      if (!task) throw new NotFoundError('task', id);
      if (isTerminal(task.status)) return task;
      await pause(pollMs, stop.signal);
      pollMs = Math.min(maxPollMs, Math.ceil(pollMs * 1.5));
    }
  } finally {
    stop.dispose();
  }
}

function checkMs(field: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`waitFor: ${field} must be an integer from ${min} to ${max}, got ${String(value)}`, field);
  }
  return value;
}

/** One signal for the caller's abort and the timeout; `reason` says which fired. */
function stopSignal(outer: AbortSignal | undefined, timeoutMs: number | undefined) {
  if (outer !== undefined && !(outer instanceof AbortSignal)) throw new ValidationError('waitFor: signal must be an AbortSignal', 'signal');
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = (): void => controller.abort();
  outer?.addEventListener('abort', onAbort, { once: true });
  if (outer?.aborted) controller.abort();
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, timeoutMs);
  return {
    signal: controller.signal,
    reason: (): 'WAIT_TIMEOUT' | 'WAIT_ABORTED' => (timedOut ? 'WAIT_TIMEOUT' : 'WAIT_ABORTED'),
    dispose(): void {
      if (timer) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
