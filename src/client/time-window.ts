/**
 * A creation-time window for task lists without a store change: task ids are
 * UUIDv7, whose first 48 bits are the submit's Unix milliseconds, and lists
 * run newest first by id. So "created before T" is a cursor (ids below T's
 * smallest id) and "created after T" cuts the page at T's smallest id.
 * The time is the submitting client's clock, to the millisecond.
 */
import { ValidationError } from '../core/errors.js';
import type { TaskPage } from '../store/types.js';

/** The smallest UUIDv7 of millisecond `ms`: every id made at `ms` or later sorts at or above it. */
export function smallestIdAt(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

export interface TimeWindow {
  createdAfter?: Date;
  createdBefore?: Date;
}

/** The cursor to start from: the caller's, or the window's upper edge, whichever is lower. */
export function windowCursor(cursor: string | null, window: TimeWindow): string | null {
  for (const field of ['createdAfter', 'createdBefore'] as const) {
    const value = window[field];
    if (value !== undefined && (!(value instanceof Date) || Number.isNaN(value.getTime()))) throw new ValidationError(`${field} must be a valid Date`, field);
  }
  if (!window.createdBefore) return cursor;
  const edge = smallestIdAt(window.createdBefore.getTime());
  return cursor === null || edge < cursor ? edge : cursor;
}

/** Drops tasks created before the window; past its lower edge there is no next page. */
export function cutPage(page: TaskPage, window: TimeWindow): TaskPage {
  if (!window.createdAfter) return page;
  const floor = smallestIdAt(window.createdAfter.getTime());
  const tasks = page.tasks.filter((task) => task.id >= floor);
  return { tasks, nextCursor: tasks.length < page.tasks.length ? null : page.nextCursor };
}
