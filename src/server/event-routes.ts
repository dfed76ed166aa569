/**
 * Fan-out by event over HTTP (thin over client.publish and the subscription
 * calls): any role publishes — a user's tasks are its own, exactly as its
 * submits; operators list subscriptions; admins add and remove them (a
 * subscription makes every later publish create work).
 */
import type { FastifyRequest } from 'fastify';
import { MAX_EVENT_LENGTH, type SubscribeInput } from '../client/events.js';
import { AccessError, NotFoundError } from '../core/errors.js';
import { ADMIN_PREFIX } from './admin-routes.js';
import { principalOf, ok, type RouteSpec } from './routes.js';
import { taskView } from './task-view.js';

const url = `${ADMIN_PREFIX}/subscriptions`;
const tags = ['events'];
const dateTime = { type: 'string', format: 'date-time' } as const;
const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;
const event = { ...text(MAX_EVENT_LENGTH), pattern: '^[A-Za-z0-9][A-Za-z0-9._/-]*$', description: 'Letters, digits and . _ / -' } as const;
const taskType = text(200);

const publishBody = {
  type: 'object',
  required: ['event'],
  additionalProperties: false,
  properties: {
    event,
    payload: { description: 'The payload of every task the publish creates' },
    owner: text(255),
    idempotencyKey: { ...text(255), description: 'A repeat returns the tasks the first publish created (each task keyed event:<event>:<key>)' },
    traceId: text(128),
    delayMs: { type: 'integer', minimum: 0 },
    availableAt: dateTime,
    deadlineAt: dateTime,
  },
} as const;

const subscriptionBody = {
  type: 'object',
  required: ['event', 'taskType'],
  additionalProperties: false,
  properties: {
    event,
    taskType,
    priority: { type: ['integer', 'null'], minimum: -1000, maximum: 1000, description: "null: the type's definition's, else 0" },
    maxAttempts: { type: ['integer', 'null'], minimum: 1, maximum: 100, description: 'null: as a submit (policy, definition, default)' },
  },
} as const;

const subscriptionKey = { type: 'object', required: ['event', 'taskType'], additionalProperties: false, properties: { event, taskType } } as const;
const subscriptionFilter = { type: 'object', additionalProperties: false, properties: { event, taskType } } as const;

interface PublishBody {
  event: string;
  payload?: unknown;
  owner?: string;
  idempotencyKey?: string;
  traceId?: string;
  delayMs?: number;
  availableAt?: string;
  deadlineAt?: string;
}

/** A user publishes for its own owner only, as it submits. */
function ownerOf(request: FastifyRequest, owner: string | undefined): string | undefined {
  const principal = principalOf(request);
  if (principal.role !== 'user') return owner;
  if (owner !== undefined && owner !== principal.owner) throw new AccessError('FORBIDDEN', 'a user token publishes for its own owner only: leave owner out');
  return principal.owner!;
}

export function eventRoutes(): RouteSpec[] {
  return [
    {
      method: 'POST',
      url: '/api/v1/publish',
      access: 'user',
      tags,
      summary: 'Publish an event: one task in every task type subscribed to it (none: an empty list)',
      schema: { body: publishBody },
      async handler(request, reply, { client }) {
        const { event: name, payload, owner, availableAt, deadlineAt, ...rest } = request.body as PublishBody;
        const forOwner = ownerOf(request, owner);
        const published = await client.publish(name, payload ?? null, {
          ...rest,
          ...(forOwner !== undefined ? { owner: forOwner } : {}),
          ...(availableAt ? { availableAt: new Date(availableAt) } : {}),
          ...(deadlineAt ? { deadlineAt: new Date(deadlineAt) } : {}),
        });
        const principal = principalOf(request);
        return reply.code(202).send({ ...published, results: published.results.map((r) => ({ ...r, task: taskView(principal, r.task) })) });
      },
    },
    {
      method: 'GET',
      url,
      access: 'operator',
      tags,
      summary: 'Event subscriptions, by event then task type',
      schema: { querystring: subscriptionFilter },
      handler: async (request, _reply, { client }) => ok(await client.listSubscriptions(request.query as { event?: string; taskType?: string })),
    },
    {
      method: 'PUT',
      url,
      access: 'admin',
      tags,
      summary: 'Subscribe a task type to an event, or change the subscription',
      schema: { body: subscriptionBody },
      handler: async (request, _reply, { client }) => ok(await client.subscribe(request.body as SubscribeInput)),
    },
    {
      method: 'DELETE',
      url,
      access: 'admin',
      tags,
      summary: 'Unsubscribe a task type from an event (the tasks publishes created stay)',
      schema: { querystring: subscriptionKey },
      async handler(request, _reply, { client }) {
        const key = request.query as { event: string; taskType: string };
        if (!(await client.unsubscribe(key))) throw new NotFoundError('subscription', `${key.event} → ${key.taskType}`);
        return ok({ deleted: true });
      },
    },
  ];
}
