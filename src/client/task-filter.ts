/**
 * Which tasks a call means: one filter, checked once, for a listing
 * (client.list) and for a bulk operation (bulk.ts) alike.
 */
import { ValidationError } from '../core/errors.js';
import type { Scope } from '../core/scope.js';
import { checkKeyPrefix, payloadConditions, type PayloadFilter } from '../core/search.js';
import { isTaskStatus, type TaskStatus } from '../core/status.js';
import { checkNoNul } from '../core/text.js';
import type { TaskFilterParams } from '../store/types.js';
import { checkIds } from './dead-letters.js';
import { checkOptionalString, STRING_LIMITS } from './submit.js';
import { smallestIdAt, windowCursor, type TimeWindow } from './time-window.js';

export interface TaskFilter {
  taskType?: string;
  status?: TaskStatus | readonly TaskStatus[];
  owner?: string;
  /** Exact idempotency key, any task type (a search, not a prefix match). */
  idempotencyKey?: string;
  /** Idempotency keys that start with this text, any task type (case-sensitive; % and _ match only themselves). */
  idempotencyKeyPrefix?: string;
  /**
   * Payload field filters, ANDed: `[{ path: 'order.id', equals: 42 }, { path: 'customer.name', prefix: 'Ada' }]`.
   * Equality is typed (42 never matches "42"); a prefix matches strings only. Encrypted payloads never match.
   * Bad paths: SEARCH_PATH_INVALID; bad values: SEARCH_VALUE_INVALID (core/search.ts).
   */
  payload?: readonly PayloadFilter[];
  /** Created at or after this time (the submitter's clock, see time-window.ts). */
  createdAfter?: Date;
  /** Created before this time. */
  createdBefore?: Date;
  /** The last failure's error code. */
  errorCode?: string;
  /** Only these tasks (at most 1000). */
  ids?: readonly string[];
}

export const TASK_FILTER_KEYS = [
  'taskType',
  'status',
  'owner',
  'idempotencyKey',
  'idempotencyKeyPrefix',
  'payload',
  'createdAfter',
  'createdBefore',
  'errorCode',
  'ids',
] as const satisfies readonly (keyof TaskFilter)[];

export interface CheckedFilter {
  params: TaskFilterParams;
  window: TimeWindow;
}

/** The filter as the store takes it, every term checked (typed errors at the edge). */
export function checkTaskFilter(filter: TaskFilter, scope: Scope): CheckedFilter {
  const status = filter.status === undefined ? null : typeof filter.status === 'string' ? [filter.status] : filter.status;
  if (status !== null && !Array.isArray(status)) throw new ValidationError('status must be a status or a list of them', 'status');
  for (const s of status ?? []) if (!isTaskStatus(s)) throw new ValidationError(`unknown status ${String(s)}`, 'status');
  checkOptionalString('list', 'taskType', filter.taskType, 255);
  checkOptionalString('list', 'idempotencyKey', filter.idempotencyKey, STRING_LIMITS.idempotencyKey);
  checkOptionalString('list', 'errorCode', filter.errorCode, 255);
  checkNoNul('owner', filter.owner, 'list');
  if (filter.ids !== undefined) checkIds(filter.ids);
  const window = { createdAfter: filter.createdAfter, createdBefore: filter.createdBefore };
  windowCursor(null, window); // checks the dates
  return {
    params: {
      scope,
      taskType: filter.taskType ?? null,
      status,
      owner: filter.owner ?? null,
      idempotencyKey: filter.idempotencyKey ?? null,
      idempotencyKeyPrefix: checkKeyPrefix(filter.idempotencyKeyPrefix),
      payload: payloadConditions(filter.payload),
      errorCode: filter.errorCode ?? null,
      ids: filter.ids ?? null,
    },
    window,
  };
}

/** The window's lower edge as an id (ids at or above it were created at or after createdAfter), or null. */
export function windowFloor(window: TimeWindow): string | null {
  return window.createdAfter ? smallestIdAt(window.createdAfter.getTime()) : null;
}
