/**
 * Fan-out by event: `client.publish(event, payload)` creates one task in
 * every task type subscribed to the event; subscriptions live in the
 * database (system_async_task_subscription) and change at run time
 * (`client.subscribe`, `client.unsubscribe`, `client.listSubscriptions`).
 *
 * - One transaction: the publish reads the subscriptions and inserts the
 *   tasks together (store.publishEvent); a subscription added or removed
 *   concurrently is wholly in or wholly out of it.
 * - Each task is built as a submit builds it (submit.ts buildTask): the
 *   subscription's priority and maxAttempts, else the type's definition's,
 *   else the policy's and the client's defaults. The payload is checked
 *   against the schema of every subscribed type this client has a
 *   definition of, before the transaction; a type subscribed between that
 *   check and the transaction makes the publish check again and retry.
 * - Idempotency: with `idempotencyKey`, each task's key is
 *   `event:<event>:<key>` (per type and owner, as every idempotency key): a
 *   repeat returns the existing tasks (created: false). A type subscribed
 *   after the first publish gets its task from the repeat (created: true):
 *   the repeat converges on one task per type subscribed at any of the
 *   publishes; an unsubscribed type's task is not returned, and stays.
 * - Owner: the tasks belong to `owner` (a user token's own owner over HTTP);
 *   subscriptions themselves are global (operators manage them).
 */
import { PayloadInvalidError, TaskLeaseError, ValidationError } from '../core/errors.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { checkTaskType } from '../core/definition.js';
import { runSchema } from '../core/standard-schema.js';
import type { NewTask } from '../core/task.js';
import { checkNoNul } from '../core/text.js';
import { checkKnownKeys, describe } from '../core/validate.js';
import type { InsertTaskResult, Subscription, SubscriptionInput } from '../store/types.js';
import { buildTask, checkOptionalString, STRING_LIMITS, type SubmitLimits, type SubmitOptions } from './submit.js';

export type { Subscription } from '../store/types.js';

export interface SubscribeInput {
  /** 1–100 characters: letters, digits and . _ / - (no ':', which separates the event from the key in derived idempotency keys). */
  event: string;
  taskType: string;
  /** Priority of the tasks a publish creates, -1000–1000; null or left out: the type's definition's, else 0. */
  priority?: number | null;
  /** maxAttempts of those tasks, 1–100; null or left out: the policy's, the definition's, else the client's default. */
  maxAttempts?: number | null;
}

/** What a publish gives every task it creates (a subset of a submit's options). */
export interface PublishOptions extends Pick<SubmitOptions, 'owner' | 'idempotencyKey' | 'traceId' | 'delayMs' | 'availableAt' | 'deadlineAt'> {
  /** A caller's transaction (capabilities.transactionalSubmit): the publish commits or rolls back with it. */
  transaction?: unknown;
}

export interface PublishResult {
  event: string;
  /** One per subscribed type, by task type; empty when nothing subscribes to the event. */
  results: InsertTaskResult[];
}

export const PUBLISH_OPTION_KEYS = ['owner', 'idempotencyKey', 'traceId', 'delayMs', 'availableAt', 'deadlineAt', 'transaction'] as const;
const EVENT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
export const MAX_EVENT_LENGTH = 100;
/** How many times a publish checks newly subscribed types and tries again before it gives up. */
const MAX_ROUNDS = 5;

export function checkEventName(event: unknown): asserts event is string {
  if (typeof event !== 'string' || event.length === 0 || event.length > MAX_EVENT_LENGTH || !EVENT_PATTERN.test(event)) {
    throw new ValidationError(
      `event must be 1 to ${MAX_EVENT_LENGTH} characters of A-Z a-z 0-9 . _ / - (not starting with a sign), got ${describe(event)}`,
      'event',
    );
  }
}

export function normalizeSubscription(input: SubscribeInput): SubscriptionInput {
  if (input === null || typeof input !== 'object') throw new ValidationError('subscribe takes { event, taskType, priority?, maxAttempts? }', 'subscription');
  checkKnownKeys('subscribe', input, ['event', 'taskType', 'priority', 'maxAttempts']);
  checkEventName(input.event);
  checkTaskType(input.taskType);
  checkNoNul('taskType', input.taskType, 'subscribe');
  const priority = input.priority ?? null;
  const maxAttempts = input.maxAttempts ?? null;
  checkOptionalInteger('priority', priority, -1000, 1000);
  checkOptionalInteger('maxAttempts', maxAttempts, 1, 100);
  return { event: input.event, taskType: input.taskType, priority, maxAttempts };
}

function checkOptionalInteger(field: string, value: unknown, min: number, max: number): void {
  if (value === null) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ValidationError(`subscribe: ${field} must be an integer from ${min} to ${max} (or null), got ${describe(value)}`, field);
  }
}

/** The idempotency key of the task a publish with `key` creates in each type. */
export function eventIdempotencyKey(event: string, key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  checkOptionalString('publish', 'idempotencyKey', key, STRING_LIMITS.idempotencyKey);
  const derived = `event:${event}:${key}`;
  if (derived.length > STRING_LIMITS.idempotencyKey) {
    const room = STRING_LIMITS.idempotencyKey - derived.length + key.length;
    throw new ValidationError(
      `publish: idempotencyKey of event ${event} must be at most ${room} characters (it becomes event:<event>:<key>)`,
      'idempotencyKey',
    );
  }
  return derived;
}

/** A subscription whose type's schema this publish has not checked the payload against (it appeared after the check). */
class UncheckedSubscriptions extends TaskLeaseError {
  constructor(readonly taskTypes: readonly string[]) {
    super('SUBSCRIPTIONS_CHANGED', `types subscribed during the publish: ${taskTypes.join(', ')}`);
  }
}

export interface PublishContext {
  registry: ReadonlyMap<string, AnyTaskDefinition>;
  limits: SubmitLimits;
  /** The event's subscribed types now (before the transaction). */
  subscribedTypes(): Promise<string[]>;
  /** store.publishEvent with `build`. */
  publish(build: (subscriptions: readonly Subscription[]) => NewTask[]): Promise<{ subscriptions: Subscription[]; results: InsertTaskResult[] }>;
}

/** Checks the payload against each subscribed type's schema, then publishes; again when the subscriptions moved in between. */
export async function publishEvent(
  event: string,
  payload: unknown,
  options: Omit<PublishOptions, 'transaction'>,
  ctx: PublishContext,
): Promise<{ subscriptions: Subscription[]; results: InsertTaskResult[] }> {
  const idempotencyKey = eventIdempotencyKey(event, options.idempotencyKey);
  const checked = new Set<string>();
  const check = async (taskTypes: readonly string[]): Promise<void> => {
    for (const taskType of taskTypes) {
      if (checked.has(taskType)) continue;
      const schema = ctx.registry.get(taskType)?.schema;
      if (schema) {
        const result = await runSchema(schema, payload);
        if (!result.ok) throw new PayloadInvalidError(taskType, result.issues);
      }
      checked.add(taskType);
    }
  };
  await check(await ctx.subscribedTypes());
  const build = (subscriptions: readonly Subscription[]): NewTask[] => {
    const unchecked = subscriptions.filter((s) => !checked.has(s.taskType)).map((s) => s.taskType);
    if (unchecked.length > 0) throw new UncheckedSubscriptions(unchecked);
    return subscriptions.map((s) => {
      const definition = ctx.registry.get(s.taskType) ?? ({ type: s.taskType } as AnyTaskDefinition);
      const request = {
        ...options,
        type: s.taskType,
        payload,
        ...(s.priority !== null ? { priority: s.priority } : {}),
        ...(s.maxAttempts !== null ? { maxAttempts: s.maxAttempts } : {}),
        ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
      };
      return buildTask(request, definition, ctx.limits, `publish ${event} → ${s.taskType}`);
    });
  };
  for (let round = 1; ; round += 1) {
    try {
      return await ctx.publish(build);
    } catch (error) {
      if (!(error instanceof UncheckedSubscriptions) || round === MAX_ROUNDS) throw error;
      await check(error.taskTypes);
    }
  }
}
