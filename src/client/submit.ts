/**
 * Turning a producer's request into a NewTask: every check happens here,
 * before anything is written, so a rejected batch writes nothing.
 */
import { PayloadInvalidError, PayloadTooLargeError, UnknownTaskTypeError, ValidationError } from '../core/errors.js';
import { uuidv7 } from '../core/ids.js';
import { runSchema } from '../core/standard-schema.js';
import type { NewTask } from '../core/task.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { checkKnownKeys, keysOf } from '../core/validate.js';
import { resolveUnique, type UniqueOptions } from './unique.js';
import { checkNoNul } from '../core/text.js';
import { SEQUENCE_ON_DEAD_LETTER } from '../store/rules/sequences.js';

export interface SubmitOptions {
  /** Higher runs first; an integer from -1000 to 1000. Default: the definition's, else 0. */
  priority?: number;
  /** Start no earlier than this many milliseconds from now (database clock). */
  delayMs?: number;
  /** Start no earlier than this time. Exclusive with delayMs. */
  availableAt?: Date;
  /** Never start after, and abort as TIMEOUT when still running at, this time. */
  deadlineAt?: Date;
  /** Attempts before the task fails for good, 1–100. Default: the definition's, else the client's (3). */
  maxAttempts?: number;
  /** Who the task belongs to: drives query scope. */
  owner?: string;
  /** The same type + owner + key returns the existing task instead of a second one. */
  idempotencyKey?: string;
  /** Correlates logs and failures with the caller's request. */
  traceId?: string;
  /** One task per key while in given states, per period (throttle) or debounced (client/unique.ts). */
  unique?: UniqueOptions;
  /**
   * Tasks with one sequence key run one at a time, in submit order, across every worker (store/rules/sequences.ts):
   * a task waits (BLOCKED) until the one before it has ended. 1–255 characters.
   */
  sequenceKey?: string;
  /**
   * What the key's dead-lettered head does to the tasks behind it: BLOCK (they wait until it is replayed or skipped —
   * a new key's default) or SKIP (the next one runs). Sets the key's policy; absent: the key keeps its own.
   */
  sequenceOnDeadLetter?: 'BLOCK' | 'SKIP';
  /** Its starts count against the rate of policy KEY:<rateKey>, else KEY:<group>:* (group: the part before the first ':'). */
  rateKey?: string;
}

export interface SubmitRequest extends SubmitOptions {
  type: string;
  payload: unknown;
}

export interface SubmitLimits {
  maxPayloadBytes: number;
  defaultMaxAttempts: number;
  /** maxAttempts from the type's (or the global) policy row, if an operator set one. */
  policyMaxAttempts?: (taskType: string) => number | null;
  /** The wall clock a deadline is checked against (ClientOptions.clock). Default Date.now. */
  now?: () => number;
  /** The payload as stored (the middleware's encode hooks: middleware.ts), after every check of the payload as given. */
  encode?: (taskType: string, payload: unknown) => unknown;
}

const REQUEST_KEYS = keysOf<SubmitRequest>({
  type: true,
  payload: true,
  priority: true,
  delayMs: true,
  availableAt: true,
  deadlineAt: true,
  maxAttempts: true,
  owner: true,
  idempotencyKey: true,
  traceId: true,
  unique: true,
  sequenceKey: true,
  sequenceOnDeadLetter: true,
  rateKey: true,
});
const MAX_DELAY_MS = 366 * 24 * 3600 * 1000;
export const STRING_LIMITS = { owner: 255, idempotencyKey: 255, traceId: 128, sequenceKey: 255, rateKey: 255 } as const;

/**
 * Synchronous unless the type has a schema (a Standard Schema may validate
 * asynchronously): a bulk submit of schema-less tasks makes no promise per task.
 */
export function prepareTask(
  request: SubmitRequest,
  registry: ReadonlyMap<string, AnyTaskDefinition>,
  limits: SubmitLimits,
  label = 'task',
  /** false: the schema accepted this payload already (before the submit middleware: client.ts). */
  checkSchema = true,
): NewTask | Promise<NewTask> {
  const definition = typeof request?.type === 'string' ? registry.get(request.type) : undefined;
  if (!definition) throw new UnknownTaskTypeError(String(request?.type));
  checkKnownKeys(label === 'task' ? 'submit' : `submitMany ${label}`, request, REQUEST_KEYS);
  const schema = definition.schema;
  if (!schema || !checkSchema) return buildTask(request, definition, limits, label);
  return runSchema(schema, request.payload).then((checked) => {
    if (!checked.ok) throw new PayloadInvalidError(definition.type, checked.issues);
    return buildTask(request, definition, limits, label);
  });
}

export function buildTask(request: SubmitRequest, definition: AnyTaskDefinition, limits: SubmitLimits, label: string): NewTask {
  const { givenJson, payloadJson } = storedPayload(definition.type, request.payload, limits, label);
  const priority = request.priority ?? definition.priority ?? 0;
  checkPriority(label, priority);
  const maxAttempts = request.maxAttempts ?? limits.policyMaxAttempts?.(definition.type) ?? definition.maxAttempts ?? limits.defaultMaxAttempts;
  checkMaxAttempts(label, maxAttempts);
  if (request.delayMs !== undefined && request.availableAt !== undefined) {
    throw new ValidationError(`${label}: give delayMs or availableAt, not both`, 'delayMs');
  }
  const delayMs = request.delayMs ?? 0;
  checkIntegerField(label, 'delayMs', delayMs, 0, MAX_DELAY_MS);
  checkDate(label, 'availableAt', request.availableAt);
  checkDeadline(label, request.deadlineAt, limits.now);
  for (const field of ['owner', 'idempotencyKey', 'traceId', 'sequenceKey', 'rateKey'] as const)
    checkOptionalString(label, field, request[field], STRING_LIMITS[field]);
  if (request.rateKey?.endsWith(':*')) throw new ValidationError(`${label}: rateKey must not end with ':*' (that names a group's policy)`, 'rateKey');
  const unique = resolveUnique(label, request, { taskType: definition.type, owner: request.owner ?? null, payloadJson: givenJson });
  const sequence = sequenceOf(request, label, unique !== null && unique !== undefined);

  return {
    id: uuidv7(),
    taskType: definition.type,
    payloadJson,
    priority,
    // A debounced task starts debounceMs after its submit, like every later submit that replaces it.
    delayMs: unique?.debounceMs ?? delayMs,
    availableAt: request.availableAt ?? null,
    deadlineAt: request.deadlineAt ?? null,
    maxAttempts,
    owner: request.owner ?? null,
    idempotencyKey: request.idempotencyKey ?? null,
    traceId: request.traceId ?? null,
    ...(unique ? { unique } : {}),
    ...sequence,
    ...(request.rateKey !== undefined ? { rateKey: request.rateKey } : {}),
  };
}

/** The sequence fields of a request, checked: a key (1–255), its policy only with a key, and no unique option beside it. */
function sequenceOf(request: SubmitRequest, label: string, unique: boolean): Pick<NewTask, 'sequenceKey' | 'sequenceOnDeadLetter'> {
  const { sequenceKey, sequenceOnDeadLetter } = request;
  if (sequenceOnDeadLetter !== undefined && !(SEQUENCE_ON_DEAD_LETTER as readonly unknown[]).includes(sequenceOnDeadLetter)) {
    throw new ValidationError(`${label}: sequenceOnDeadLetter must be one of ${SEQUENCE_ON_DEAD_LETTER.join(', ')}`, 'sequenceOnDeadLetter');
  }
  if (sequenceKey === undefined) {
    if (sequenceOnDeadLetter !== undefined) throw new ValidationError(`${label}: sequenceOnDeadLetter needs a sequenceKey`, 'sequenceOnDeadLetter');
    return {};
  }
  if (unique) {
    throw new ValidationError(`${label}: a sequenced task cannot take a unique option (it holds no key while it waits): use an idempotency key`, 'unique');
  }
  return { sequenceKey, ...(sequenceOnDeadLetter === undefined ? {} : { sequenceOnDeadLetter }) };
}

/**
 * A payload as given (JSON, for uniqueness by payload) and as stored (through the middleware's encode hooks), its
 * stored size within maxPayloadBytes. A payload is refused as given, not as encoded (a schema ran before).
 */
export function storedPayload(taskType: string, payload: unknown, limits: SubmitLimits, label: string): { givenJson: string; payloadJson: string } {
  const givenJson = serializePayload(payload, label);
  const payloadJson = limits.encode ? serializePayload(limits.encode(taskType, payload), label) : givenJson;
  const bytes = Buffer.byteLength(payloadJson, 'utf8');
  if (bytes > limits.maxPayloadBytes) throw new PayloadTooLargeError(bytes, limits.maxPayloadBytes);
  return { givenJson, payloadJson };
}

/** Higher runs first: -1000 to 1000. */
export function checkPriority(label: string, priority: unknown): void {
  checkIntegerField(label, 'priority', priority, -1000, 1000);
}

/** Attempts before a task fails for good: 1 to 100. */
export function checkMaxAttempts(label: string, maxAttempts: unknown): void {
  checkIntegerField(label, 'maxAttempts', maxAttempts, 1, 100);
}

/** A deadline must be a valid time still ahead (the caller's clock: a task could never start otherwise). */
/** A deadline, if given, is a valid Date not yet past on `now` (the client's clock: a test kit's, else the system's). */
export function checkDeadline(label: string, deadlineAt: unknown, now: () => number = Date.now): void {
  checkDate(label, 'deadlineAt', deadlineAt);
  if (deadlineAt instanceof Date && deadlineAt.getTime() <= now()) {
    throw new ValidationError(`${label}: deadlineAt ${deadlineAt.toISOString()} is already past`, 'deadlineAt');
  }
}

function serializePayload(payload: unknown, label: string): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(payload === undefined ? null : payload);
  } catch (error) {
    throw new ValidationError(`${label}: payload cannot be serialized as JSON (${(error as Error).name})`, 'payload', 'PAYLOAD_INVALID', { cause: error });
  }
  if (json === undefined) throw new ValidationError(`${label}: payload is not a JSON value`, 'payload', 'PAYLOAD_INVALID');
  return json;
}

function checkIntegerField(label: string, field: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`${label}: ${field} must be an integer from ${min} to ${max}, got ${String(value)}`, field);
  }
}

export function checkDate(label: string, field: string, value: unknown): void {
  if (value === undefined) return;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new ValidationError(`${label}: ${field} must be a valid Date`, field);
}

export function checkOptionalString(label: string, field: string, value: unknown, max: number): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new ValidationError(`${label}: ${field} must be a string of 1 to ${max} characters`, field);
  }
  checkNoNul(field, value, label);
}
