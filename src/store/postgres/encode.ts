/**
 * What PostgreSQL can store, checked before a statement runs, so that bad
 * input fails with a ValidationError naming the field instead of a driver
 * error halfway through a batch.
 *
 * - text columns cannot hold U+0000, and `pg` encodes a lone UTF-16
 *   surrogate as U+FFFD (silently changing the value): both are refused in
 *   identifiers a producer chooses (type, owner, idempotency key, trace id);
 * - a JSON payload keeps its meaning when a lone surrogate is written as a
 *   \uXXXX escape, so payloads are repaired rather than refused;
 * - btree index entries must stay under ~2700 bytes, so the indexed columns
 *   have byte limits well below that, together.
 * Messages a worker writes at run time (errors, progress) are made storable
 * instead: a failing handler must not fail the outcome write.
 */
import { ValidationError } from '../../core/errors.js';
import type { NewTask } from '../../core/task.js';
import type { Decode } from '../rows.js';

export const MAX_TASK_TYPE_BYTES = 500;
export const MAX_OWNER_BYTES = 500;
export const MAX_IDEMPOTENCY_KEY_BYTES = 1000;
export const MAX_TRACE_ID_BYTES = 1000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const HAS_LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The canonical text of a UUID, the only spelling the uuid id columns give back (migration 16). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An id as a parameter for a uuid column: the id itself, or null where it is
 * not a UUID in canonical form — no task has such an id, so the lookup finds
 * nothing, as it would on the stores that keep ids as text (and as it would
 * not, with a driver error, if the text reached the cast).
 */
export function uuidKey(id: string): string | null {
  return typeof id === 'string' && UUID.test(id) ? id : null;
}

export function uuidKeys(ids: readonly string[]): (string | null)[] {
  return ids.map(uuidKey);
}

export const decodePostgres: Decode = {
  time: (value) => (value instanceof Date ? value : new Date(String(value))),
  json: (value) => (typeof value === 'string' ? JSON.parse(value) : value),
};

/**
 * `label` locates the value in messages (tasks[3].owner); `field` is the
 * ValidationError's field (owner). A bulk submit checks several fields of
 * every task, so a label can come as [index, field] and is spelled out only
 * for a message.
 */
export function checkStorableText(label: string | readonly [number, string], value: string, maxBytes: number, field?: string): void {
  if (typeof value === 'string' && value.length * 3 <= maxBytes && !value.includes('\u0000') && !HAS_LONE_SURROGATE.test(value)) return;
  const name = typeof label === 'string' ? label : taskField(label[0], label[1]);
  const as = field ?? name;
  if (typeof value !== 'string') throw new ValidationError(`${name} must be a string`, as);
  if (value.includes('\u0000')) throw new ValidationError(`${name} contains a NUL character (\\u0000), which PostgreSQL text cannot store`, as);
  if (HAS_LONE_SURROGATE.test(value)) {
    throw new ValidationError(`${name} contains a lone UTF-16 surrogate, which has no UTF-8 encoding and cannot be stored verbatim`, as);
  }
  // A UTF-16 unit is at most 3 UTF-8 bytes: only a string that could be too long is measured.
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > maxBytes) throw new ValidationError(`${name} is ${bytes} bytes as UTF-8, over the limit of ${maxBytes}`, as);
}

function fail(index: number, field: string, problem: string, as: string = field): never {
  throw new ValidationError(`${taskField(index, field)} ${problem}`, as);
}

function taskField(index: number, field: string): string {
  return `tasks[${index}].${field}`;
}

export function checkNewTask(task: NewTask, index: number): void {
  if (uuidKey(task.id) === null) fail(index, 'id', 'must be a UUID in lowercase 8-4-4-4-12 form (the client makes UUIDv7 ids)');
  if (typeof task.taskType !== 'string' || task.taskType.length === 0) fail(index, 'taskType', 'must be a non-empty string');
  checkStorableText([index, 'taskType'], task.taskType, MAX_TASK_TYPE_BYTES, 'taskType');
  if (typeof task.payloadJson !== 'string') fail(index, 'payloadJson', 'must be a JSON string', 'payload');
  if (task.payloadJson.includes('\u0000')) fail(index, 'payloadJson', 'is not JSON: it holds a raw NUL character', 'payload');
  if (task.owner !== null) checkStorableText([index, 'owner'], task.owner, MAX_OWNER_BYTES, 'owner');
  if (task.idempotencyKey !== null) checkStorableText([index, 'idempotencyKey'], task.idempotencyKey, MAX_IDEMPOTENCY_KEY_BYTES, 'idempotencyKey');
  if (task.traceId !== null) checkStorableText([index, 'traceId'], task.traceId, MAX_TRACE_ID_BYTES, 'traceId');
  if (!isInt32(task.priority)) fail(index, 'priority', `must be a 32-bit integer, got ${String(task.priority)}`);
  if (!isInt32(task.maxAttempts)) fail(index, 'maxAttempts', `must be a 32-bit integer, got ${String(task.maxAttempts)}`);
  if (typeof task.delayMs !== 'number' || !Number.isFinite(task.delayMs) || task.delayMs < 0) fail(index, 'delayMs', 'must be a finite number ≥ 0');
  if (!isDateOrNull(task.availableAt)) fail(index, 'availableAt', 'must be a valid Date');
  if (!isDateOrNull(task.deadlineAt)) fail(index, 'deadlineAt', 'must be a valid Date');
}

/** A lone surrogate inside a JSON string becomes its \uXXXX escape: the same JSON value, now valid UTF-8. */
export function storableJson(json: string): string {
  return HAS_LONE_SURROGATE.test(json) ? json.replace(LONE_SURROGATE, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`) : json;
}

/** Run-time text (error messages, progress messages): NUL and lone surrogates become U+FFFD. */
export function storableMessage(text: string | null): string | null {
  if (text === null) return null;
  return text.replace(/\u0000/g, '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
}

function isInt32(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647;
}

function isDateOrNull(value: unknown): boolean {
  return value === null || (value instanceof Date && !Number.isNaN(value.getTime()));
}
