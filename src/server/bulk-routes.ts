/**
 * Bulk operations over HTTP (client/bulk.ts): a dry run and a start per
 * action, the operations, one operation, its progress as Server-Sent Events,
 * and a cancel. Each action's route has the single-task action's rule: a
 * user may cancel, pause and resume its own tasks in bulk (its operations are
 * confined to its owner, and it sees only its own operations); retry,
 * reschedule, replay and delete are for operators.
 */
import type { FastifyRequest } from 'fastify';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { parseFilterText, type PayloadFilter } from '../core/search.js';
import { ALL_STATUSES, type TaskStatus } from '../core/status.js';
import { BULK_ACTION_NAMES, type BulkAction, type BulkRequest } from '../client/bulk.js';
import type { TaskFilter } from '../client/task-filter.js';
import { actingAs, scopeOf } from './auth.js';
import { principalOf, type Access, type RouteSpec } from './routes.js';
import { idParams, ID_PATTERN } from './schemas.js';
import { streamBulk, type SseStreams } from './sse.js';
import { taskView } from './task-view.js';

const tags = ['bulk'];
const PREFIX = '/api/v1/bulk';

/** Who may run each action in bulk: as on one task. */
const ACCESS: Record<BulkAction, Access> = {
  cancel: 'user',
  pause: 'user',
  resume: 'user',
  retry: 'operator',
  reschedule: 'operator',
  replay: 'operator',
  delete: 'operator',
};

const text = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength }) as const;
const status = { type: 'string', enum: ALL_STATUSES } as const;

const filterSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Which tasks (every term ANDed); {} is every task in your scope — the dry run says how many',
  properties: {
    type: text(255),
    status: { anyOf: [status, { type: 'array', minItems: 1, maxItems: ALL_STATUSES.length, items: status }] },
    owner: text(255),
    idempotencyKey: text(255),
    idempotencyKeyPrefix: text(255),
    errorCode: text(255),
    createdAfter: { type: 'string', format: 'date-time' },
    createdBefore: { type: 'string', format: 'date-time' },
    ids: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', pattern: ID_PATTERN } },
    payload: {
      type: 'array',
      maxItems: 8,
      description: 'Payload field filters: { path, equals } or { path, prefix }, or "<path>=<value>" / "<path>^=<prefix>" text',
      items: {
        anyOf: [
          text(1200),
          { type: 'object', required: ['path'], properties: { path: text(500), equals: {}, prefix: { type: 'string' } }, additionalProperties: false },
        ],
      },
    },
  },
} as const;

const bulkBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    filter: filterSchema,
    dryRun: { type: 'boolean', default: false, description: 'Count and show a sample; start nothing' },
    batchSize: { type: 'integer', minimum: 1, maximum: 1000, default: 500 },
    pauseMs: { type: 'integer', minimum: 0, maximum: 60_000, default: 0, description: 'A pause between batches, to spare a busy database' },
    availableAt: { type: 'string', format: 'date-time', description: 'reschedule: the new start time' },
    delayMs: { type: 'integer', minimum: 0, description: 'reschedule: this long from when each batch runs' },
  },
} as const;

interface FilterBody {
  type?: string;
  status?: TaskStatus | TaskStatus[];
  owner?: string;
  idempotencyKey?: string;
  idempotencyKeyPrefix?: string;
  errorCode?: string;
  createdAfter?: string;
  createdBefore?: string;
  ids?: string[];
  payload?: (string | PayloadFilter)[];
}

interface BulkBody {
  filter?: FilterBody;
  dryRun: boolean;
  batchSize: number;
  pauseMs: number;
  availableAt?: string;
  delayMs?: number;
}

/** A payload filter given as text: `path=value` (equal) or `path^=prefix`. */
function payloadFilter(item: string | PayloadFilter): PayloadFilter {
  if (typeof item !== 'string') return item;
  const prefix = item.indexOf('^=');
  const equals = item.indexOf('=');
  return prefix > 0 && prefix + 1 === equals ? parseFilterText(item.slice(0, prefix) + item.slice(prefix + 1), 'prefix') : parseFilterText(item, 'equals');
}

function toFilter(request: FastifyRequest, body: FilterBody = {}): TaskFilter {
  if (body.owner !== undefined && principalOf(request).role === 'user') throw new ValidationError('a user acts on its own tasks: leave owner out', 'owner');
  const { type, createdAfter, createdBefore, payload, ...rest } = body;
  return {
    ...rest,
    ...(type !== undefined ? { taskType: type } : {}),
    ...(createdAfter !== undefined ? { createdAfter: new Date(createdAfter) } : {}),
    ...(createdBefore !== undefined ? { createdBefore: new Date(createdBefore) } : {}),
    ...(payload !== undefined ? { payload: payload.map(payloadFilter) } : {}),
  };
}

const scope = (request: FastifyRequest) => ({ scope: scopeOf(principalOf(request)) });
const id = (request: FastifyRequest): string => (request.params as { id: string }).id;

function actionRoute(action: BulkAction): RouteSpec {
  return {
    method: 'POST',
    url: `${PREFIX}/${action}`,
    access: ACCESS[action],
    summary: `${action} every task a filter matches, in the background (dryRun: count and show a sample, start nothing). 202 with the operation; follow it at ${PREFIX}/:id or its events`,
    tags,
    schema: { body: bulkBody },
    async handler(request, reply, { client }) {
      const body = request.body as BulkBody;
      const bulkRequest: BulkRequest = {
        action,
        filter: toFilter(request, body.filter),
        ...(body.availableAt !== undefined ? { availableAt: new Date(body.availableAt) } : {}),
        ...(body.delayMs !== undefined ? { delayMs: body.delayMs } : {}),
      };
      if (body.dryRun) {
        const dry = await client.bulk.dryRun(bulkRequest, scope(request));
        return { dryRun: true, ...dry, sample: dry.sample.map((task) => taskView(principalOf(request), task)) };
      }
      const operation = await client.bulk.start(bulkRequest, { ...actingAs(principalOf(request)), batchSize: body.batchSize, pauseMs: body.pauseMs });
      return reply.code(202).send({ operation });
    },
  };
}

export function bulkRoutes(streams: SseStreams): RouteSpec[] {
  return [
    ...BULK_ACTION_NAMES.map(actionRoute),
    {
      method: 'GET',
      url: PREFIX,
      access: 'user',
      summary: 'Bulk operations, newest first: who started each, when, its filter, what it counted, its progress (a user: its own)',
      tags,
      schema: {
        querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 } } },
      },
      async handler(request, _reply, { client }) {
        return { operations: await client.bulk.list({ ...scope(request), limit: (request.query as { limit: number }).limit }) };
      },
    },
    {
      method: 'GET',
      url: `${PREFIX}/:id`,
      access: 'user',
      ownTask: true,
      summary: 'One bulk operation and its progress',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return (await client.bulk.get(id(request), scope(request))) ?? notFound(id(request));
      },
    },
    {
      method: 'GET',
      url: `${PREFIX}/:id/events`,
      access: 'user',
      ownTask: true,
      summary: 'Server-Sent Events: the operation after each batch (event progress) until it ends (event end)',
      tags,
      schema: { params: idParams },
      async handler(request, reply, context) {
        if (!(await context.client.bulk.get(id(request), scope(request)))) notFound(id(request));
        void streamBulk(streams.start(request, reply), context, id(request), scope(request).scope);
        return reply;
      },
    },
    {
      method: 'POST',
      url: `${PREFIX}/:id/cancel`,
      access: 'user',
      ownTask: true,
      summary: 'Stop a running bulk operation after its current batch (what it changed stays changed); it ends CANCELLED',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return client.bulk.cancel(id(request), scope(request));
      },
    },
  ];
}

function notFound(operationId: string): never {
  throw new NotFoundError('bulk operation', operationId);
}
