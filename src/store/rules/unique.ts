/**
 * Uniqueness windows, stored the same way on every dialect: a task carries
 * `unique_key` (the client's hash, plus the time bucket for a period) and
 * `unique_states` (a bitmask of the statuses in which it holds the key). A
 * unique index over UNIQUE_HOLD_SQL — the key while the row's status is in
 * its mask, else NULL — lets the database refuse a second holder, whatever
 * the number of concurrent submitters.
 */
import { ALL_STATUSES, type TaskStatus } from '../../core/status.js';
import type { UniqueHold, UniqueSpec } from '../../core/task.js';

/**
 * The statuses the indexed expression knows, frozen with it: BLOCKED (a flow's
 * waiting node, added later) holds no key — the client refuses `unique` on a
 * task with parents, and a fan-out's task waiting for its children lets its
 * key go until it is queued again.
 */
export const UNIQUE_STATUSES: readonly TaskStatus[] = ALL_STATUSES.filter((status) => status !== 'BLOCKED');

/** One bit per status, in UNIQUE_STATUSES order: QUEUED 1, RUNNING 2, … FAILED 256; BLOCKED none. */
export const STATUS_BITS = Object.fromEntries(
  ALL_STATUSES.map((status) => [status, status === 'BLOCKED' ? 0 : 1 << UNIQUE_STATUSES.indexOf(status)]),
) as Readonly<Record<TaskStatus, number>>;

/**
 * Held only before the first claim (attempt_count = 0). Debounce uses it: a
 * task requeued after a started attempt (a lease expiry, a retry) must not
 * claim the key back from the newer task a debounced submit made meanwhile —
 * the index would refuse that requeue.
 */
export const FRESH_ONLY_BIT = 1 << UNIQUE_STATUSES.length;

/**
 * The indexed expression (migrations add the index over this exact text, so it
 * never changes; the bits above are frozen with it). NULL for rows without a
 * key, and for rows whose status is outside their mask: those hold nothing.
 */
export const UNIQUE_HOLD_SQL =
  "CASE WHEN (unique_states & (CASE status WHEN 'QUEUED' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'RETRY_WAIT' THEN 4 " +
  "WHEN 'PAUSED' THEN 8 WHEN 'CANCEL_REQUESTED' THEN 16 WHEN 'CANCELLED' THEN 32 WHEN 'SUCCESS' THEN 64 " +
  "WHEN 'PARTIAL_SUCCESS' THEN 128 WHEN 'FAILED' THEN 256 ELSE 0 END)) <> 0 " +
  'AND ((unique_states & 512) = 0 OR attempt_count = 0) THEN unique_key END';

/** The unique index over UNIQUE_HOLD_SQL: the dialects recognise its violations by this name. */
export const UNIQUE_INDEX = 'ux_system_async_task_unique';

export function statesMask(statuses: readonly TaskStatus[]): number {
  return statuses.reduce((mask, status) => mask | STATUS_BITS[status], 0);
}

/** The key as stored: with a period, the window of the database clock it falls in is part of it. */
export function storedUniqueKey(spec: UniqueSpec, nowMs: number): string {
  return spec.periodMs === null ? spec.key : `${spec.key}@${Math.floor(nowMs / spec.periodMs)}`;
}

/** A debounced submit's start: the database clock + its delay. */
export function debouncedStart(spec: UniqueSpec, nowMs: number): Date {
  return new Date(nowMs + (spec.debounceMs ?? 0));
}

/** The stored key and mask read back (rows.ts): the same test as UNIQUE_HOLD_SQL, for display. */
export function uniqueHoldOf(key: string | null, mask: number, status: TaskStatus, attemptCount: number): UniqueHold | null {
  if (key === null) return null;
  const states = UNIQUE_STATUSES.filter((s) => (mask & STATUS_BITS[s]) !== 0);
  const beforeFirstRunOnly = (mask & FRESH_ONLY_BIT) !== 0;
  return { key, states, beforeFirstRunOnly, held: states.includes(status) && (!beforeFirstRunOnly || attemptCount === 0) };
}
