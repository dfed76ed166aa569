/**
 * Payload matching for enqueued()/assertEnqueued(): a subset match (every key
 * the expectation names must match; the payload may hold more), and the
 * readable message of a failed assertion. No test framework needed: the
 * error is node:assert's AssertionError, which every runner prints well.
 */
import { AssertionError } from 'node:assert';
import { inspect } from 'node:util';
import type { TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';

/** Which tasks enqueued() answers: a predicate, or fields to match (payload by subset). */
export type EnqueuedFilter =
  | ((task: Task) => boolean)
  | {
      /** A subset of the payload: objects match when every key given matches; arrays element by element; the rest by value. */
      payload?: unknown;
      status?: TaskStatus | readonly TaskStatus[];
      owner?: string | null;
      priority?: number;
    };

/** Whether `actual` holds `expected`: objects by the keys `expected` names (recursively), arrays by length and element, the rest by Object.is. */
export function matchesSubset(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, index) => matchesSubset(actual[index], item));
  }
  if (expected instanceof Date) return actual instanceof Date ? actual.getTime() === expected.getTime() : actual === expected.toISOString();
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    return Object.entries(expected).every(([key, value]) => Object.hasOwn(actual, key) && matchesSubset((actual as Record<string, unknown>)[key], value));
  }
  return Object.is(actual, expected);
}

export function matchesFilter(task: Task, filter: EnqueuedFilter | undefined): boolean {
  if (filter === undefined) return true;
  if (typeof filter === 'function') return filter(task);
  if ('payload' in filter && !matchesSubset(task.payload, filter.payload)) return false;
  if (filter.status !== undefined) {
    const statuses: readonly TaskStatus[] = typeof filter.status === 'string' ? [filter.status] : filter.status;
    if (!statuses.includes(task.status)) return false;
  }
  if (filter.owner !== undefined && task.owner !== filter.owner) return false;
  if (filter.priority !== undefined && task.priority !== filter.priority) return false;
  return true;
}

const show = (value: unknown): string => inspect(value, { depth: 6, breakLength: 120, compact: 4, sorted: true });

/** The error of assertEnqueued when no task matched: what was expected, and every task of the type that was there. */
export function notEnqueuedError(taskType: string, payload: unknown, candidates: readonly Task[], allTypes: readonly string[]): AssertionError {
  const lines = [`Expected a task of type ${taskType} enqueued with a payload matching ${show(payload)}`];
  if (candidates.length === 0) {
    const others = allTypes.filter((type) => type !== taskType);
    lines.push(`but no task of type ${taskType} was enqueued${others.length > 0 ? ` (enqueued types: ${others.join(', ')})` : ' (nothing was enqueued)'}.`);
  } else {
    lines.push(`but none of the ${candidates.length} task(s) of that type matched:`);
    for (const task of candidates.slice(0, 20)) lines.push(`  - ${task.id} ${task.status} payload ${show(task.payload)}`);
    if (candidates.length > 20) lines.push(`  … and ${candidates.length - 20} more`);
  }
  return new AssertionError({
    message: lines.join('\n'),
    actual: candidates.map((task) => task.payload),
    expected: payload,
    operator: 'assertEnqueued',
    stackStartFn: notEnqueuedError,
  });
}

/** The error of assertNotEnqueued when a task matched. */
export function enqueuedError(taskType: string, payload: unknown, matched: readonly Task[]): AssertionError {
  const lines = [`Expected no task of type ${taskType} enqueued with a payload matching ${show(payload)}, but ${matched.length} matched:`];
  for (const task of matched.slice(0, 20)) lines.push(`  - ${task.id} ${task.status} payload ${show(task.payload)}`);
  return new AssertionError({ message: lines.join('\n'), actual: matched.map((task) => task.payload), expected: payload, operator: 'assertNotEnqueued' });
}
