/**
 * The admin API at the seed's routes (article 2, AsyncTaskAdminController):
 * /api/admin/async-task/{taskId}/pause|resume, /policy/global/concurrency,
 * /batch-cancel, /cleanup — and beyond the seed: cancel, retry, reschedule,
 * diagnose, per-type and per-owner policies, analyze. Answers use the seed's envelope
 * { success, code, message, data }. Dead letters, workers and tokens: admin-ops-routes.ts.
 */
import type { FastifyRequest } from 'fastify';
import { ValidationError } from '../core/errors.js';
import type { CancelManyResult } from '../client/client.js';
import { MAX_IDS_PER_CALL } from '../client/dead-letters.js';
import type { PolicyChange, PolicyTarget } from '../client/policies.js';
import { actingAs } from './auth.js';
import { ok, principalOf, type RouteSpec } from './routes.js';
import { idList, idParams, retentionQuery, type RetentionQuery } from './schemas.js';

export const ADMIN_PREFIX = '/api/admin/async-task';
const tags = ['admin'];
const id = (request: FastifyRequest): string => (request.params as { id: string }).id;
/** The caller as the actor recorded in the task's action history (operators act in the global scope). */
export const acting = (request: FastifyRequest) => actingAs(principalOf(request));

const typeParams = { type: 'object', required: ['taskType'], properties: { taskType: { type: 'string', minLength: 1, maxLength: 200 } } } as const;
const ownerParams = { type: 'object', required: ['owner'], properties: { owner: { type: 'string', minLength: 1, maxLength: 255 } } } as const;
const rateKeyParams = { type: 'object', required: ['rateKey'], properties: { rateKey: { type: 'string', minLength: 1, maxLength: 255 } } } as const;
// One type list, not anyOf: with the server's coerceTypes, anyOf's integer branch turned null into 0
// (a null retryBaseDelayMs was stored as 0, switching backoff off); a list that allows null keeps it null.
const nullableInt = (minimum: number, maximum: number) => ({ type: ['integer', 'null'], minimum, maximum });
const policyChange = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    maxConcurrency: nullableInt(1, 100_000),
    maxAttempts: nullableInt(1, 100),
    retryBaseDelayMs: nullableInt(0, 7 * 24 * 3600 * 1000),
    enabled: { type: 'boolean' },
    // N starts per period (rules/rates.ts): both or neither; both null clears the rate.
    rateLimit: nullableInt(1, 1_000_000),
    ratePeriodMs: nullableInt(1, 24 * 3600 * 1000),
  },
} as const;

/** Splits a long id list into the client's batches (1000 ids per call). */
export async function inBatches<T>(ids: readonly string[], work: (batch: string[]) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let at = 0; at < ids.length; at += MAX_IDS_PER_CALL) results.push(await work(ids.slice(at, at + MAX_IDS_PER_CALL)));
  return results;
}

function policyRoutes(url: string, target: (request: FastifyRequest) => PolicyTarget, what: string): RouteSpec[] {
  const schema = url.includes(':taskType')
    ? { params: typeParams }
    : url.includes(':owner')
      ? { params: ownerParams }
      : url.includes(':rateKey')
        ? { params: rateKeyParams }
        : {};
  return [
    {
      method: 'GET',
      url,
      access: 'operator',
      tags,
      summary: `The ${what} policy (null: the workers' defaults apply)`,
      schema,
      handler: async (request, _reply, { client }) => ok(await client.policies.get(target(request))),
    },
    {
      method: 'PUT',
      url,
      access: 'operator',
      tags,
      summary: `Change the ${what} policy (fields left out keep their value; maxConcurrency on an adaptive type overrides adaptation)`,
      schema: { ...schema, body: policyChange },
      // The caller is the override's actor in an adaptive type's trail.
      handler: async (request, _reply, { client }) =>
        ok(await client.policies.update(target(request), request.body as PolicyChange, { actor: acting(request).actor })),
    },
    {
      method: 'DELETE',
      url,
      access: 'operator',
      tags,
      summary: `Reset the ${what} policy to the workers' defaults`,
      schema,
      // On an adaptive type a reset turns adaptation off: the caller is its actor in the trail.
      handler: async (request, _reply, { client }) => ok({ reset: await client.policies.reset(target(request), { actor: acting(request).actor }) }),
    },
  ];
}

export function adminRoutes(): RouteSpec[] {
  const p = ADMIN_PREFIX;
  const taskAction = (action: 'pause' | 'resume' | 'retry', summary: string): RouteSpec => ({
    method: 'POST',
    url: `${p}/:id/${action}`,
    access: 'operator',
    tags,
    summary,
    schema: { params: idParams },
    async handler(request, _reply, { client }) {
      await client[action](id(request), acting(request));
      return ok(null);
    },
  });
  return [
    taskAction('pause', 'Pause a waiting task (seed)'),
    taskAction('resume', 'Resume a paused task (seed)'),
    taskAction('retry', 'Run a FAILED task again with a fresh attempt cycle'),
    {
      method: 'POST',
      url: `${p}/:id/cancel`,
      access: 'operator',
      tags,
      summary: 'Cancel a task',
      schema: { params: idParams },
      handler: async (request, _reply, { client }) => ok({ outcome: await client.requestCancellation(id(request), acting(request)) }),
    },
    {
      method: 'POST',
      url: `${p}/:id/reschedule`,
      access: 'operator',
      tags,
      summary: "Move a waiting task's start time",
      schema: {
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { delayMs: { type: 'integer', minimum: 0 }, availableAt: { type: 'string', format: 'date-time' } },
        },
      },
      async handler(request, _reply, { client }) {
        const body = request.body as { delayMs?: number; availableAt?: string };
        if ((body.delayMs === undefined) === (body.availableAt === undefined))
          throw new ValidationError('give exactly one of delayMs or availableAt', 'delayMs');
        const when = body.delayMs !== undefined ? { delayMs: body.delayMs } : { availableAt: new Date(body.availableAt!) };
        await client.reschedule(id(request), when, acting(request));
        return ok(null);
      },
    },
    {
      method: 'GET',
      url: `${p}/:id/diagnose`,
      access: 'operator',
      tags,
      summary: 'Why the task is where it is: attempts, failures, lease, verdict',
      schema: { params: idParams },
      handler: async (request, _reply, { client }) => ok(await client.diagnose(id(request))),
    },
    {
      method: 'POST',
      url: `${p}/batch-cancel`,
      access: 'operator',
      tags,
      summary: 'Cancel many tasks (body: a list of ids, at most 10000): how many, and why not the rest (seed)',
      schema: { body: idList },
      async handler(request, _reply, { client }) {
        const parts = await inBatches(request.body as string[], (batch) => client.cancelMany(batch, acting(request)));
        const total: CancelManyResult = { cancelled: 0, cancelRequested: 0, notCancelled: [] };
        for (const part of parts) {
          total.cancelled += part.cancelled;
          total.cancelRequested += part.cancelRequested;
          total.notCancelled.push(...part.notCancelled);
        }
        return ok({ count: total.cancelled + total.cancelRequested, ...total });
      },
    },
    {
      method: 'POST',
      url: `${p}/cleanup`,
      access: 'operator',
      tags,
      summary: 'Delete terminal tasks finished more than retentionDays ago, in batches (seed)',
      schema: { querystring: retentionQuery(1) },
      async handler(request, _reply, { client }) {
        const { retentionDays, batchSize } = request.query as RetentionQuery;
        return ok(await client.cleanup({ retentionDays, batchSize }));
      },
    },
    {
      method: 'POST',
      url: `${p}/policy/global/concurrency`,
      access: 'operator',
      tags,
      summary: 'Set the cluster-wide concurrency limit (seed)',
      schema: {
        querystring: {
          type: 'object',
          required: ['maxConcurrency'],
          additionalProperties: false,
          properties: { maxConcurrency: { type: 'integer', minimum: 1, maximum: 100_000 } },
        },
      },
      handler: async (request, _reply, { client }) =>
        ok(await client.policies.update(null, { maxConcurrency: (request.query as { maxConcurrency: number }).maxConcurrency })),
    },
    {
      method: 'GET',
      url: `${p}/policies`,
      access: 'operator',
      tags,
      summary: 'Every stored policy',
      handler: async (_request, _reply, { client }) => ok(await client.policies.list()),
    },
    ...policyRoutes(`${p}/policy/global`, () => null, 'global'),
    ...policyRoutes(`${p}/policy/type/:taskType`, (request) => (request.params as { taskType: string }).taskType, 'per-type'),
    // An owner's (tenant's) concurrency limit and enabled flag; while any owner policy exists, claims take turns across owners.
    ...policyRoutes(`${p}/policy/owner/:owner`, (request) => ({ owner: (request.params as { owner: string }).owner }), 'per-owner'),
    // A rate key's rate (one key, or `<group>:*`: every key `<group>:…` with a budget of its own); rates only.
    ...policyRoutes(`${p}/policy/key/:rateKey`, (request) => ({ rateKey: (request.params as { rateKey: string }).rateKey }), 'rate key'),
    {
      method: 'GET',
      url: `${p}/analyze/:taskType`,
      access: 'operator',
      tags,
      summary: 'Counts, durations, queue waits and failure codes of a type over the last hours',
      schema: {
        params: typeParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { hours: { type: 'number', exclusiveMinimum: 0, maximum: 24 * 366, default: 24 } },
        },
      },
      handler: async (request, _reply, { client }) =>
        ok(await client.analyze((request.params as { taskType: string }).taskType, (request.query as { hours: number }).hours)),
    },
  ];
}
