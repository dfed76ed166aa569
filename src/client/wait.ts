/**
 * Awaiting a task's outcome from any process: a read of the task by its
 * primary key, again whenever the store says its outcome may have been
 * written (store.watchOutcome: NOTIFY on PostgreSQL, the -wal file watch on
 * SQLite, this process's writes everywhere), and on a backoff timer as the
 * fallback (a store that missed the wake-up, MySQL across processes).
 * Wake-ups cost the drain nothing while nobody waits; a waiter costs one
 * indexed read per wake-up (at most one per PING_GAP_MS) or per poll.
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

/** A burst of wake-ups (SQLite: every commit of a busy database) makes at most one read per this many ms. */
const PING_GAP_MS = 10;

export type WatchOutcome = (listener: () => void) => Promise<() => Promise<void>>;

export async function waitForTask(read: (id: string) => Promise<Task | null>, watch: WatchOutcome, id: string, options: WaitOptions): Promise<Task> {
  checkKnownKeys('waitFor', options, KEYS);
  const timeoutMs = checkMs('timeoutMs', options.timeoutMs, 1, MAX_TIMEOUT_MS);
  const minPollMs = checkMs('minPollMs', options.minPollMs, 1, 60_000) ?? 25;
  const maxPollMs = checkMs('maxPollMs', options.maxPollMs, minPollMs, 60_000) ?? Math.max(1000, minPollMs);
  const stop = stopSignal(options.signal, timeoutMs);
  const wake = new Wake();
  // Armed before the first read: an outcome written after that read is heard. Unarmed, polling remains.
  const unwatch = stop.signal.aborted ? null : await watch(() => wake.ping()).catch(() => null);
  try {
    let pollMs = minPollMs;
    let task: Task | null = null;
    for (;;) {
      if (stop.signal.aborted) throw new WaitError(id, stop.reason(), task?.status ?? null);
      wake.reset();
      const readAt = Date.now();
      task = await read(id);
      if (!task) throw new NotFoundError('task', id);
      if (isTerminal(task.status)) return task;
      if (!(await wake.pause(pollMs, stop.signal))) pollMs = Math.min(maxPollMs, Math.ceil(pollMs * 1.5));
      else if (Date.now() - readAt < PING_GAP_MS) await wake.pause(PING_GAP_MS - (Date.now() - readAt), stop.signal, false);
    }
  } finally {
    stop.dispose();
    await unwatch?.();
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

/** Wake-ups since the last read: a pause ends early on one, also on one that came during the read. */
class Wake {
  private pinged = false;
  private wakeNow: (() => void) | null = null;

  ping(): void {
    this.pinged = true;
    this.wakeNow?.();
  }

  reset(): void {
    this.pinged = false;
  }

  /** True when a wake-up ended it (`early`: wake-ups may end it). */
  pause(ms: number, signal: AbortSignal, early = true): Promise<boolean> {
    if (early && this.pinged) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (byPing: boolean): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.wakeNow = null;
        resolve(byPing);
      };
      const onAbort = (): void => done(false);
      const timer = setTimeout(() => done(false), ms);
      signal.addEventListener('abort', onAbort, { once: true });
      if (early) this.wakeNow = () => done(true);
    });
  }
}
