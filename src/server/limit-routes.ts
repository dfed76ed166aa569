/**
 * Adaptive limits and start estimates over HTTP (thin over client.adaptive
 * and client.estimate). Operators read a type's adaptive state and its trail
 * of limit changes; admins turn adaptation on, off, override and resume it —
 * the same roles as schedules: a change here moves a limit by itself, on
 * every worker. (An operator's PUT of the type policy's maxConcurrency is an
 * override too: client.policies.update.) Any caller asks when one of its own
 * tasks will start (owner scope, as the task read routes).
 */
import type { FastifyRequest } from 'fastify';
import type { AdaptiveConfigInput } from '../client/adaptive.js';
import { NotFoundError } from '../core/errors.js';
import { acting, ADMIN_PREFIX } from './admin-routes.js';
import { scopeOf } from './auth.js';
import { ok, principalOf, type RouteSpec } from './routes.js';
import { idParams } from './schemas.js';

const tags = ['adaptive'];
const url = `${ADMIN_PREFIX}/adaptive`;
const taskType = (request: FastifyRequest): string => (request.params as { taskType: string }).taskType;
const typeParams = { type: 'object', required: ['taskType'], properties: { taskType: { type: 'string', minLength: 1, maxLength: 200 } } } as const;
const actor = (request: FastifyRequest) => ({ actor: acting(request).actor });

/** client.adaptive.set validates the rest (bounds against each other: typed 400s). */
const configBody = {
  type: 'object',
  additionalProperties: false,
  required: ['maxLimit'],
  properties: {
    minLimit: { type: 'integer', minimum: 1, maximum: 100_000 },
    maxLimit: { type: 'integer', minimum: 1, maximum: 100_000 },
    windowMs: { type: 'integer', minimum: 10, maximum: 86_400_000 },
    minSamples: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    failureThreshold: { type: 'number', exclusiveMinimum: 0, maximum: 1 },
    codes: { type: ['array', 'null'], items: { type: 'string', minLength: 1, maxLength: 100 }, minItems: 1, maxItems: 50 },
    decreaseFactor: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
    increaseStep: { type: 'integer', minimum: 1, maximum: 100_000 },
    cooldownMs: { type: 'integer', minimum: 0, maximum: 86_400_000 },
  },
} as const;

const overrideBody = {
  type: 'object',
  additionalProperties: false,
  required: ['limit'],
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100_000 },
    overrideForMs: { type: ['integer', 'null'], minimum: 1, maximum: 30 * 86_400_000, description: 'Adaptation resumes after this long; null: until resumed' },
  },
} as const;

export function limitRoutes(): RouteSpec[] {
  return [
    {
      method: 'GET',
      url,
      access: 'operator',
      tags,
      summary: 'Every adaptive type with its bounds and the limit in force',
      handler: async (_request, _reply, { client }) => ok(await client.adaptive.list()),
    },
    {
      method: 'GET',
      url: `${url}/:taskType`,
      access: 'operator',
      tags,
      summary: "A type's adaptive configuration and state",
      schema: { params: typeParams },
      async handler(request, _reply, { client }) {
        const state = await client.adaptive.get(taskType(request));
        if (!state) throw new NotFoundError('adaptive limit of task type', taskType(request));
        return ok(state);
      },
    },
    {
      method: 'GET',
      url: `${url}/:taskType/history`,
      access: 'operator',
      tags,
      summary: "The type's trail of limit changes, newest first, each with its cause and actor",
      schema: {
        params: typeParams,
        querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 100 } } },
      },
      handler: async (request, _reply, { client }) => ok(await client.adaptive.history(taskType(request), request.query as { limit: number })),
    },
    {
      method: 'PUT',
      url: `${url}/:taskType`,
      access: 'admin',
      tags,
      summary: "Turn adaptation on (or re-configure it): it starts from the type's policy limit, clamped to the bounds",
      schema: { params: typeParams, body: configBody },
      handler: async (request, _reply, { client }) => ok(await client.adaptive.set(taskType(request), request.body as AdaptiveConfigInput, actor(request))),
    },
    {
      method: 'POST',
      url: `${url}/:taskType/off`,
      access: 'admin',
      tags,
      summary: 'Turn adaptation off: the limit stays where it is',
      schema: { params: typeParams },
      handler: async (request, _reply, { client }) => ok(await client.adaptive.disable(taskType(request), actor(request))),
    },
    {
      method: 'POST',
      url: `${url}/:taskType/override`,
      access: 'admin',
      tags,
      summary: 'Set the limit by hand and suspend adaptation (until resumed, or for overrideForMs)',
      schema: { params: typeParams, body: overrideBody },
      async handler(request, _reply, { client }) {
        const body = request.body as { limit: number; overrideForMs?: number | null };
        return ok(await client.adaptive.override(taskType(request), body.limit, { ...actor(request), overrideForMs: body.overrideForMs ?? null }));
      },
    },
    {
      method: 'POST',
      url: `${url}/:taskType/resume`,
      access: 'admin',
      tags,
      summary: 'Adaptation again after an override, from the limit in force',
      schema: { params: typeParams },
      handler: async (request, _reply, { client }) => ok(await client.adaptive.resume(taskType(request), actor(request))),
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/estimate',
      access: 'user',
      ownTask: true,
      summary:
        'When the task will start: its position under every limit that binds it (type, owner, global) and an estimate from the recent pace, with the reason; a task that is not waiting says so (started, ended, blocked, paused)',
      tags: ['tasks'],
      schema: {
        params: idParams,
        querystring: { type: 'object', additionalProperties: false, properties: { windowMs: { type: 'integer', minimum: 1000, maximum: 86_400_000 } } },
      },
      async handler(request, _reply, { client }) {
        const { windowMs } = request.query as { windowMs?: number };
        const id = (request.params as { id: string }).id;
        return client.estimate(id, { scope: scopeOf(principalOf(request)), ...(windowMs === undefined ? {} : { windowMs }) });
      },
    },
  ];
}
