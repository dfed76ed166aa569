/**
 * Search by payload (issue 29): the filters client.list takes on payload
 * fields, validated once here for every caller (client, HTTP, CLI).
 *
 * A path is 1–8 dot-separated segments of A–Z a–z 0–9 _ - (`order.id`,
 * `customer.name`); a segment of digits only also reads an array element on
 * PostgreSQL and is an object key elsewhere, so array positions are not
 * promised. Because a segment can hold nothing else, the stores build their
 * JSON path text from the segments (an operator's expression index on the
 * same path then matches); the values are always bound parameters.
 *
 * Equality is typed: the number 42 matches the JSON number 42 (and 42.0),
 * never the string "42"; true matches JSON true, never 1. A prefix matches
 * JSON strings only, case-sensitively. Several filters AND together.
 */
import { ErrorCode, ValidationError } from './errors.js';

/** One filter on a payload field: `{ path: 'order.id', equals: 42 }` or `{ path: 'customer.name', prefix: 'Ada' }`. */
export type PayloadFilter = { path: string; equals: string | number | boolean; prefix?: never } | { path: string; prefix: string; equals?: never };

/** A validated filter, as the stores get it. */
export interface PayloadCondition {
  segments: readonly string[];
  op: 'equals' | 'prefix';
  value: string | number | boolean;
}

export const SEARCH_LIMITS = { segments: 8, segmentLength: 64, filters: 8, valueLength: 1000, keyPrefixLength: 255 } as const;

const SEGMENT = /^[A-Za-z0-9_-]+$/;

export class SearchPathError extends ValidationError {
  constructor(message: string, field = 'payload') {
    super(message, field, ErrorCode.SEARCH_PATH_INVALID);
    this.name = 'SearchPathError';
  }
}

export class SearchValueError extends ValidationError {
  constructor(message: string, field = 'payload') {
    super(message, field, ErrorCode.SEARCH_VALUE_INVALID);
    this.name = 'SearchValueError';
  }
}

/** `order.id` → ['order', 'id'], or SEARCH_PATH_INVALID. */
export function parseSearchPath(path: unknown): string[] {
  if (typeof path !== 'string' || path.length === 0) throw new SearchPathError('a payload path must be a non-empty string such as order.id');
  const segments = path.split('.');
  if (segments.length > SEARCH_LIMITS.segments)
    throw new SearchPathError(`payload path ${JSON.stringify(path)} has more than ${SEARCH_LIMITS.segments} segments`);
  for (const segment of segments) {
    if (!SEGMENT.test(segment) || segment.length > SEARCH_LIMITS.segmentLength) {
      throw new SearchPathError(
        `payload path ${JSON.stringify(path.slice(0, 200))}: each dot-separated segment must be 1–${SEARCH_LIMITS.segmentLength} characters of A–Z a–z 0–9 _ -`,
      );
    }
  }
  return segments;
}

function checkText(value: string, what: string): void {
  if (value.length > SEARCH_LIMITS.valueLength) throw new SearchValueError(`${what} is longer than ${SEARCH_LIMITS.valueLength} characters`);
  if (value.includes('\u0000')) throw new SearchValueError(`${what} holds a NUL character`);
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value)) throw new SearchValueError(`${what} holds a lone surrogate`);
}

/** Validates client.list's `payload` option into the stores' conditions. */
export function payloadConditions(filters: unknown): PayloadCondition[] {
  if (filters === undefined || filters === null) return [];
  if (!Array.isArray(filters)) throw new SearchValueError('payload must be a list of { path, equals } or { path, prefix } filters');
  if (filters.length > SEARCH_LIMITS.filters) throw new SearchValueError(`at most ${SEARCH_LIMITS.filters} payload filters`);
  return filters.map((filter: unknown) => {
    if (typeof filter !== 'object' || filter === null) throw new SearchValueError('a payload filter must be { path, equals } or { path, prefix }');
    const { path, equals, prefix } = filter as { path?: unknown; equals?: unknown; prefix?: unknown };
    const segments = parseSearchPath(path);
    if ((equals === undefined) === (prefix === undefined))
      throw new SearchValueError(`payload filter on ${String(path)}: give exactly one of equals and prefix`);
    if (prefix !== undefined) {
      if (typeof prefix !== 'string' || prefix.length === 0) throw new SearchValueError(`payload filter on ${String(path)}: prefix must be a non-empty string`);
      checkText(prefix, `the prefix for ${String(path)}`);
      return { segments, op: 'prefix', value: prefix };
    }
    if (typeof equals === 'string') checkText(equals, `the value for ${String(path)}`);
    else if (typeof equals === 'number') {
      if (!Number.isFinite(equals)) throw new SearchValueError(`payload filter on ${String(path)}: a number must be finite`);
    } else if (typeof equals !== 'boolean') {
      throw new SearchValueError(`payload filter on ${String(path)}: equals must be a string, a finite number or a boolean`);
    }
    return { segments, op: 'equals', value: equals as string | number | boolean };
  });
}

/** Validates client.list's `idempotencyKeyPrefix`. */
export function checkKeyPrefix(prefix: unknown): string | null {
  if (prefix === undefined || prefix === null) return null;
  if (typeof prefix !== 'string' || prefix.length === 0) throw new SearchValueError('idempotencyKeyPrefix must be a non-empty string', 'idempotencyKeyPrefix');
  if (prefix.length > SEARCH_LIMITS.keyPrefixLength)
    throw new SearchValueError(`idempotencyKeyPrefix is longer than ${SEARCH_LIMITS.keyPrefixLength} characters`, 'idempotencyKeyPrefix');
  checkText(prefix, 'idempotencyKeyPrefix');
  return prefix;
}

/**
 * One text filter as the CLI, the HTTP query and the dashboard write it:
 * `order.id=42`. The value is read as JSON when it is a JSON number, true,
 * false or a "quoted string" (`order.id="42"` is the string), else as the
 * text itself (`customer.name=Ada`). A prefix value is always text.
 */
export function parseFilterText(text: string, op: 'equals' | 'prefix'): PayloadFilter {
  const at = text.indexOf('=');
  if (at <= 0) throw new SearchPathError(`payload filter ${JSON.stringify(text.slice(0, 200))} must read <path>=<value>, e.g. order.id=42`);
  return filterFrom(text.slice(0, at), text.slice(at + 1), op);
}

/** A filter from a path and its value text (see parseFilterText). */
export function filterFrom(path: string, raw: string, op: 'equals' | 'prefix'): PayloadFilter {
  parseSearchPath(path);
  if (op === 'prefix') return { path, prefix: raw };
  return { path, equals: scalarFromText(raw) };
}

function scalarFromText(raw: string): string | number | boolean {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(raw)) return Number(raw);
  if (raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"')) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === 'string') return parsed;
    } catch {
      // not a JSON string: the text itself
    }
  }
  return raw;
}
