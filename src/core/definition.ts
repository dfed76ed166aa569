/**
 * A task definition: its type, payload schema, run-time preconditions and
 * handler. Producers need only `type` and `schema`; workers need `execute`.
 */
import { ValidationError } from './errors.js';
import { DEFAULT_RETRY, type RetryOptions } from './retry.js';
import { checkKnownKeys, keysOf } from './validate.js';
import { isStandardSchema, type StandardSchemaV1 } from './standard-schema.js';
import type { TaskContext } from './context.js';
import { checkBatchDefinition, type BatchHandler, type BatchOptions } from './batch.js';
import type { TaskResult as ResultShape } from './result.js';
import { checkSandboxDefinition, type SandboxOptions } from './sandbox.js';

export type { TaskResultStatus } from './result.js';
/** What a handler returns for a success (result.ts: ctx.complete takes it too, and core/context.ts cannot import this module). */
export type TaskResult = ResultShape;

/**
 * "Run me again in `delayMs`": the attempt ends without spending one of
 * maxAttempts and without counting as a failure; the task waits (QUEUED)
 * until then, by the database clock. Made by TaskResult.snooze.
 */
export interface TaskSnooze {
  status: 'SNOOZED';
  delayMs: number;
}

/** The longest snooze: a year (a longer wait is a scheduling job, not a snooze). */
export const MAX_SNOOZE_MS = 365 * 24 * 3_600_000;

/** A child a fan-out makes (TaskResult.awaitChildren): its type (a definition the worker knows), payload and submit options. */
export interface ChildTaskRequest {
  type: string;
  payload: unknown;
  priority?: number;
  delayMs?: number;
  maxAttempts?: number;
  idempotencyKey?: string;
  traceId?: string;
}

/**
 * "Make these children and run me again when they have ended": the attempt
 * ends without spending one of maxAttempts; the task waits (BLOCKED, no lease,
 * no slot) until every child has ended, then runs again and reads them with
 * ctx.children(). Made by TaskResult.awaitChildren.
 */
export interface TaskAwaitChildren {
  status: 'AWAITING_CHILDREN';
  children: readonly ChildTaskRequest[];
  /** What a child's failure does to the waiting task: CANCEL (the default) or CONTINUE (it runs, and reads the failure). */
  onChildFailure: 'CANCEL' | 'CONTINUE';
}

/** The most children one fan-out makes (a larger fan-out is a flow: client.submitFlow). */
export const MAX_CHILDREN = 10_000;

export const TaskResult = {
  success(options: { artifactId?: string | null; result?: unknown } = {}): TaskResult {
    return { status: 'SUCCESS', ...options };
  },
  partial(options: { artifactId?: string | null; result?: unknown } = {}): TaskResult {
    return { status: 'PARTIAL_SUCCESS', ...options };
  },
  /** `return TaskResult.awaitChildren([{ type, payload }, …])`: make these tasks, run again once they have all ended. */
  awaitChildren(children: readonly ChildTaskRequest[], options: { onChildFailure?: 'CANCEL' | 'CONTINUE' } = {}): TaskAwaitChildren {
    checkChildren(children);
    const onChildFailure = options.onChildFailure ?? 'CANCEL';
    if (onChildFailure !== 'CANCEL' && onChildFailure !== 'CONTINUE') {
      throw new ValidationError(`onChildFailure must be CANCEL or CONTINUE, got ${String(onChildFailure)}`, 'onChildFailure');
    }
    return { status: 'AWAITING_CHILDREN', children, onChildFailure };
  },
  /** `return TaskResult.snooze(30_000)`: run this task again in 30 s, spending no attempt. */
  snooze(delayMs: number): TaskSnooze {
    checkSnooze(delayMs);
    return { status: 'SNOOZED', delayMs };
  },
};

/** A snooze's delay: a whole number of milliseconds, 0 … MAX_SNOOZE_MS. */
export function checkSnooze(delayMs: unknown): asserts delayMs is number {
  if (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0 || delayMs > MAX_SNOOZE_MS) {
    throw new ValidationError(`snooze delay must be a whole number of milliseconds from 0 to ${MAX_SNOOZE_MS}, got ${String(delayMs)}`, 'delayMs');
  }
}

export function isSnooze(result: TaskResult | TaskSnooze | TaskAwaitChildren): result is TaskSnooze {
  return result.status === 'SNOOZED';
}

export function isAwaitChildren(result: TaskResult | TaskSnooze | TaskAwaitChildren): result is TaskAwaitChildren {
  return result.status === 'AWAITING_CHILDREN';
}

export function checkChildren(children: unknown): asserts children is readonly ChildTaskRequest[] {
  if (!Array.isArray(children) || children.length === 0 || children.length > MAX_CHILDREN) {
    throw new ValidationError(`awaitChildren takes 1 to ${MAX_CHILDREN} children`, 'children');
  }
}

export interface TaskDefinition<Payload = unknown> {
  /** 1–200 characters, no control characters. */
  readonly type: string;
  /** Any Standard Schema validator (zod, valibot, arktype…): checked at submit and again before execute. */
  readonly schema?: StandardSchemaV1<unknown, Payload>;
  /** Run-time preconditions, checked just before execute (permissions, business state). Throw to fail. */
  readonly validate?: (payload: Payload, ctx: TaskContext) => void | Promise<void>;
  /** The seed's validateCompletion: checked after execute returned a result (not a snooze); throw to veto the success (the attempt fails with that error). */
  readonly validateCompletion?: (result: TaskResult, payload: Payload, ctx: TaskContext) => void | Promise<void>;
  /** The work. Return nothing for SUCCESS, a TaskResult, or TaskResult.snooze(ms) to run again later. Honour ctx.signal. */
  readonly execute?: (
    ctx: TaskContext,
    payload: Payload,
  ) => Promise<TaskResult | TaskSnooze | TaskAwaitChildren | void> | TaskResult | TaskSnooze | TaskAwaitChildren | void;
  /**
   * The work of many tasks in one call (instead of execute): up to batch.maxSize claimed tasks of this type,
   * each with its own context and payload; return one result (or Error) per task, in order (core/batch.ts).
   */
  readonly executeBatch?: BatchHandler<Payload>;
  /** How batches form for executeBatch: at most maxSize tasks, waiting at most maxWaitMs for more after the first. */
  readonly batch?: BatchOptions;
  /** Attempts per cycle for tasks submitted without maxAttempts. */
  readonly maxAttempts?: number;
  /** Abort an attempt after this long (TIMEOUT, not retried). Overrides the worker's maxExecutionMs. */
  readonly timeoutMs?: number;
  /** Backoff for this type; merged over the worker's. */
  readonly retry?: Partial<RetryOptions>;
  /** Priority for tasks submitted without one. */
  readonly priority?: number;
  /**
   * Run the handler in a worker thread of its own (instead of execute), named by its module, with a memory
   * limit; a timeout, a lost lease or a cancel terminates it for real, and a busy handler blocks only its own
   * thread (core/sandbox.ts; README "Sandboxed handlers" says what such a handler cannot do).
   */
  readonly sandbox?: SandboxOptions;
}

export type AnyTaskDefinition = TaskDefinition<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const DEFINITION_KEYS = keysOf<TaskDefinition>({
  type: true,
  schema: true,
  validate: true,
  validateCompletion: true,
  execute: true,
  executeBatch: true,
  batch: true,
  maxAttempts: true,
  timeoutMs: true,
  retry: true,
  priority: true,
  sandbox: true,
});

/** Declares a task; checks the definition's shape at once. */
export function defineTask<Payload>(definition: TaskDefinition<Payload>): TaskDefinition<Payload> {
  checkTaskType(definition?.type);
  checkKnownKeys(`defineTask(${definition.type})`, definition, DEFINITION_KEYS);
  if (typeof definition.retry === 'object' && definition.retry !== null) {
    checkKnownKeys(`defineTask(${definition.type})`, definition.retry, Object.keys(DEFAULT_RETRY), 'retry.');
  }
  if (definition.schema !== undefined && !isStandardSchema(definition.schema)) {
    throw new ValidationError(`task ${definition.type}: schema must implement Standard Schema v1 (zod, valibot, arktype…)`, 'schema');
  }
  for (const key of ['validate', 'validateCompletion', 'execute'] as const) {
    if (definition[key] !== undefined && typeof definition[key] !== 'function') {
      throw new ValidationError(`task ${definition.type}: ${key} must be a function`, key);
    }
  }
  checkBatchDefinition(definition.type, definition);
  checkSandboxDefinition(definition.type, definition);
  return Object.freeze({ ...definition });
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Task types are identifiers in logs, metric labels and SQL: keep them printable and bounded. */
export function checkTaskType(type: unknown): asserts type is string {
  if (typeof type !== 'string' || type.length === 0) throw new ValidationError('task type must be a non-empty string', 'type');
  if (type.length > 200) throw new ValidationError(`task type is ${type.length} characters; the limit is 200`, 'type');
  if (CONTROL.test(type) || LONE_SURROGATE.test(type)) {
    throw new ValidationError('task type must not contain control characters or lone surrogates', 'type');
  }
}

/** Type → definition, rejecting duplicates. */
export function registryOf(tasks: readonly AnyTaskDefinition[]): Map<string, AnyTaskDefinition> {
  const registry = new Map<string, AnyTaskDefinition>();
  for (const task of tasks) {
    checkTaskType(task?.type);
    if (registry.has(task.type)) throw new ValidationError(`task type ${task.type} is defined twice`, 'tasks');
    registry.set(task.type, task);
  }
  return registry;
}
