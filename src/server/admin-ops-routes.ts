/**
 * Admin API, continued: the dead-letter queue (list with type and time window,
 * replay one or a batch, archive, clean the archived), the worker registry, and API tokens (admin
 * only: operators cannot mint themselves more power).
 */
import type { FastifyRequest } from 'fastify';
import { MAX_BATCH_IDS, ID_PATTERN, idList, idParams, retentionQuery, type RetentionQuery } from './schemas.js';
import { acting, ADMIN_PREFIX, inBatches } from './admin-routes.js';
import { ok, type RouteSpec } from './routes.js';
import type { ReplayResult } from '../store/types.js';
import type { TokenRole } from '../store/tokens.js';

const id = (request: FastifyRequest): string => (request.params as { id: string }).id;
const dateTime = { type: 'string', format: 'date-time' } as const;

export function adminOpsRoutes(): RouteSpec[] {
  const p = `${ADMIN_PREFIX}`;
  const tags = ['dead letters'];
  return [
    {
      method: 'GET',
      url: `${p}/dead-letters`,
      access: 'operator',
      tags,
      summary: 'Dead letters, newest first, by type and time window (moved_at)',
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            taskType: { type: 'string', minLength: 1, maxLength: 200 },
            from: dateTime,
            to: dateTime,
            limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
            cursor: { type: 'string', pattern: ID_PATTERN },
          },
        },
      },
      async handler(request, _reply, { client }) {
        const q = request.query as { taskType?: string; from?: string; to?: string; limit: number; cursor?: string };
        const deadLetters = await client.deadLetters.list({
          limit: q.limit,
          ...(q.taskType ? { taskType: q.taskType } : {}),
          ...(q.cursor ? { cursor: q.cursor } : {}),
          ...(q.from ? { from: new Date(q.from) } : {}),
          ...(q.to ? { to: new Date(q.to) } : {}),
        });
        return ok({ deadLetters, nextCursor: deadLetters.length === q.limit ? deadLetters[deadLetters.length - 1]!.id : null });
      },
    },
    {
      method: 'GET',
      url: `${p}/dead-letters/size`,
      access: 'operator',
      tags,
      summary: 'Dead letters neither replayed nor archived',
      schema: { querystring: { type: 'object', additionalProperties: false, properties: { taskType: { type: 'string', minLength: 1, maxLength: 200 } } } },
      handler: async (request, _reply, { client }) =>
        ok({
          size: await client.deadLetters.size(
            (request.query as { taskType?: string }).taskType ? { taskType: (request.query as { taskType: string }).taskType } : {},
          ),
        }),
    },
    {
      method: 'POST',
      url: `${p}/dead-letters/:id/replay`,
      access: 'operator',
      tags,
      summary: 'Replay one dead letter (its task runs again)',
      schema: { params: idParams },
      handler: async (request, _reply, { client }) => ok(await client.deadLetters.replay(id(request), acting(request))),
    },
    {
      method: 'POST',
      url: `${p}/dead-letters/replay-batch`,
      access: 'operator',
      tags,
      summary: `Replay many dead letters (body: a list of ids, at most ${MAX_BATCH_IDS})`,
      schema: { body: idList },
      async handler(request, _reply, { client }) {
        const parts = await inBatches(request.body as string[], (batch) => client.deadLetters.replayBatch(batch, acting(request)));
        const results: ReplayResult[] = parts.flatMap((part) => part.results);
        return ok({ replayed: results.filter((r) => r.outcome === 'REPLAYED').length, results });
      },
    },
    {
      method: 'POST',
      url: `${p}/dead-letters/archive`,
      access: 'operator',
      tags,
      summary: `Archive dead letters that cannot be fixed (body: a list of ids, at most ${MAX_BATCH_IDS})`,
      schema: { body: idList },
      async handler(request, _reply, { client }) {
        const parts = await inBatches(request.body as string[], (batch) => client.deadLetters.archive(batch, acting(request)));
        return ok({ archived: parts.reduce((sum, n) => sum + n, 0) });
      },
    },
    {
      method: 'POST',
      url: `${p}/dead-letters/clean`,
      access: 'operator',
      tags,
      summary:
        'Delete dead letters archived more than retentionDays ago (0: every archived one), in batches; waiting ones are never deleted (seed: archiveAndClean)',
      schema: { querystring: retentionQuery(0) },
      async handler(request, _reply, { client }) {
        const { retentionDays, batchSize } = request.query as RetentionQuery;
        return ok(await client.deadLetters.clean({ retentionDays, batchSize }));
      },
    },
    {
      method: 'GET',
      url: `${p}/workers`,
      access: 'operator',
      tags: ['admin'],
      summary: 'Workers seen recently: host, pid, types, concurrency',
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { seenWithinSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 60 } },
        },
      },
      handler: async (request, _reply, { client }) =>
        ok(await client.workers({ seenWithinMs: (request.query as { seenWithinSeconds: number }).seenWithinSeconds * 1000 })),
    },
    ...tokenRoutes(p),
  ];
}

function tokenRoutes(p: string): RouteSpec[] {
  const tags = ['tokens'];
  return [
    {
      method: 'GET',
      url: `${p}/tokens`,
      access: 'admin',
      tags,
      summary: 'API tokens (never their secrets)',
      handler: async (_request, _reply, { client }) => ok(await client.tokens.list()),
    },
    {
      method: 'POST',
      url: `${p}/tokens`,
      access: 'admin',
      tags,
      summary: 'Create an API token: the secret is in this answer only',
      schema: {
        body: {
          type: 'object',
          required: ['name', 'role'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 255 },
            role: { type: 'string', enum: ['admin', 'operator', 'user'] },
            owner: { type: 'string', minLength: 1, maxLength: 255 },
            expiresInDays: { type: 'number', exclusiveMinimum: 0, maximum: 3650 },
            expiresAt: dateTime,
          },
        },
      },
      async handler(request, reply, { client }) {
        const body = request.body as { name: string; role: TokenRole; owner?: string; expiresInDays?: number; expiresAt?: string };
        const created = await client.tokens.create({
          name: body.name,
          role: body.role,
          owner: body.owner ?? null,
          ...(body.expiresInDays !== undefined ? { expiresInMs: Math.round(body.expiresInDays * 86_400_000) } : {}),
          ...(body.expiresAt !== undefined ? { expiresAt: new Date(body.expiresAt) } : {}),
        });
        return reply.code(201).send(ok(created));
      },
    },
    {
      method: 'DELETE',
      url: `${p}/tokens/:id`,
      access: 'admin',
      tags,
      summary: 'Revoke an API token (at once on this server; within 5 s on others)',
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        await client.tokens.revoke(id(request));
        return ok(null);
      },
    },
  ];
}
