/** JSON Schemas shared by routes: validated by Fastify (ajv) and published in the OpenAPI document. */
import { SEQUENCE_ON_DEAD_LETTER } from '../store/rules/sequences.js';
import { ALL_STATUSES } from '../core/status.js';

/** Ids are UUIDs (tasks, dead letters, tokens): anything else is a 400 before any query. */
export const ID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const idParams = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: { id: { type: 'string', pattern: ID_PATTERN, description: 'A UUID' } },
} as const;

/** Most ids one batch call takes; the server works through them 1000 at a time. */
export const MAX_BATCH_IDS = 10_000;

export const idList = { type: 'array', maxItems: MAX_BATCH_IDS, items: { type: 'string', pattern: ID_PATTERN } } as const;

/** A retention run (task cleanup, dead-letter clean): whole days kept, at least `minDays`, and rows per batch. */
export function retentionQuery(minDays: number) {
  return {
    type: 'object',
    required: ['retentionDays'],
    additionalProperties: false,
    properties: {
      retentionDays: { type: 'integer', minimum: minDays, maximum: 36500 },
      batchSize: { type: 'integer', minimum: 1, maximum: 10_000, default: 500 },
    },
  } as const;
}
export interface RetentionQuery {
  retentionDays: number;
  batchSize: number;
}

const dateTime = { type: 'string', format: 'date-time' } as const;
const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;

export const submitRequest = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: text(200),
    payload: {},
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
    delayMs: { type: 'integer', minimum: 0 },
    availableAt: dateTime,
    deadlineAt: dateTime,
    maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
    owner: text(255),
    idempotencyKey: text(255),
    traceId: text(128),
    sequenceKey: {
      ...text(255),
      description: 'Run one at a time, in submit order, with the other tasks of this key (a user token: its owner and a colon first)',
    },
    sequenceOnDeadLetter: { type: 'string', enum: SEQUENCE_ON_DEAD_LETTER },
    rateKey: text(255),
    unique: {
      type: 'object',
      additionalProperties: false,
      properties: {
        key: text(255),
        periodMs: { type: 'integer', minimum: 1 },
        states: { type: 'array', minItems: 1, items: { type: 'string', enum: ALL_STATUSES } },
        debounceMs: { type: 'integer', minimum: 0 },
      },
    },
  },
} as const;

/** PATCH /api/v1/tasks/:id: the fields to change (client.edit), and the optional optimistic check. */
export const editRequest = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    payload: { description: "The new payload (checked against the type's schema when the server knows it)" },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
    availableAt: dateTime,
    // One type list, not anyOf (coerceTypes would turn null into a string): null removes the deadline.
    deadlineAt: { type: ['string', 'null'], format: 'date-time', description: 'A time still ahead; null: no deadline' },
    maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
    expectUpdatedAt: {
      ...dateTime,
      description: "The task's updatedAt as the caller read it: an edit of a task changed since answers 409 TASK_CHANGED",
    },
  },
} as const;

/** Most tasks one HTTP submit takes (the client takes more; bodies are bounded anyway). */
export const MAX_SUBMIT_BATCH = 1000;

export const statusList = {
  type: 'string',
  pattern: `^(${ALL_STATUSES.join('|')})(,(${ALL_STATUSES.join('|')}))*$`,
  description: 'One status or several, comma-separated',
} as const;

export const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: text(200),
    status: statusList,
    owner: text(255),
    idempotencyKey: text(255),
    idempotencyKeyPrefix: { ...text(255), description: 'Idempotency keys starting with this text (case-sensitive; % and _ are plain characters)' },
    payload: {
      type: 'array',
      maxItems: 8,
      items: text(1200),
      description:
        'A payload field equal to a value, <path>=<value>, repeatable (ANDed): payload=order.id=42. The value is a JSON number, true, false or "quoted string" when it reads as one, else the text itself (customer.name=Ada); equality is typed (42 never matches "42")',
    },
    payloadPrefix: {
      type: 'array',
      maxItems: 8,
      items: text(1200),
      description: 'A string payload field starting with a text, <path>=<prefix>, repeatable: payloadPrefix=customer.name=Ada (case-sensitive)',
    },
    createdAfter: dateTime,
    createdBefore: dateTime,
    errorCode: { ...text(255), description: "The last failure's error code" },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
    cursor: { type: 'string', pattern: ID_PATTERN },
  },
} as const;

/** A long poll's wait: at most five minutes (proxies cut idle requests; the caller polls again). */
export const waitQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { timeoutMs: { type: 'integer', minimum: 1, maximum: 300_000, default: 30_000 } },
} as const;
