/**
 * Periodic tasks over HTTP (thin over client.schedules): list and read for
 * operators, with each schedule's next runs; save, enable, disable and
 * delete for admins only — a schedule submits work on its own, forever.
 */
import type { FastifyRequest } from 'fastify';
import type { ScheduleInput } from '../client/schedules.js';
import { NotFoundError } from '../core/errors.js';
import { MAX_CATCH_UP } from '../core/schedule.js';
import { ADMIN_PREFIX } from './admin-routes.js';
import { ok, type RouteSpec } from './routes.js';

const tags = ['schedules'];
const url = `${ADMIN_PREFIX}/schedules`;
const key = (request: FastifyRequest): string => (request.params as { key: string }).key;
const keyParams = { type: 'object', required: ['key'], properties: { key: { type: 'string', minLength: 1, maxLength: 200 } } } as const;
const nextRunsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { nextRuns: { type: 'integer', minimum: 0, maximum: 20, default: 3 } },
} as const;

/** The schedule without its key (the URL names it); client.schedules.save validates the rest (cron, zone: typed 400s). */
const scheduleBody = {
  type: 'object',
  additionalProperties: false,
  required: ['taskType', 'cron'],
  properties: {
    taskType: { type: 'string', minLength: 1, maxLength: 200 },
    cron: { type: 'string', minLength: 1, maxLength: 200, description: '5 fields, or 6 with seconds first' },
    timeZone: { type: 'string', minLength: 1, maxLength: 100, default: 'UTC', description: 'IANA time zone' },
    payload: { description: 'The payload of every task it submits' },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
    maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
    owner: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
    catchUp: { type: 'integer', minimum: 0, maximum: MAX_CATCH_UP, description: 'Missed ticks run besides the newest after a downtime' },
    enabled: { type: 'boolean', description: 'Left out: a new schedule is enabled, an existing one keeps its state' },
  },
} as const;

function enableRoute(enabled: boolean): RouteSpec {
  return {
    method: 'POST',
    url: `${url}/:key/${enabled ? 'enable' : 'disable'}`,
    access: 'admin',
    tags,
    summary: enabled ? 'Enable a schedule: its next tick after now runs (ticks while disabled are not caught up)' : 'Disable a schedule',
    schema: { params: keyParams },
    handler: async (request, _reply, { client }) => ok(await client.schedules.setEnabled(key(request), enabled)),
  };
}

export function scheduleRoutes(): RouteSpec[] {
  return [
    {
      method: 'GET',
      url,
      access: 'operator',
      tags,
      summary: 'Every schedule with its next runs',
      schema: { querystring: nextRunsQuery },
      handler: async (request, _reply, { client }) => ok(await client.schedules.list(request.query as { nextRuns: number })),
    },
    {
      method: 'GET',
      url: `${url}/:key`,
      access: 'operator',
      tags,
      summary: 'One schedule with its next runs',
      schema: { params: keyParams, querystring: nextRunsQuery },
      async handler(request, _reply, { client }) {
        const schedule = await client.schedules.get(key(request), request.query as { nextRuns: number });
        if (!schedule) throw new NotFoundError('schedule', key(request));
        return ok(schedule);
      },
    },
    {
      method: 'PUT',
      url: `${url}/:key`,
      access: 'admin',
      tags,
      summary: 'Create or replace a schedule',
      schema: { params: keyParams, body: scheduleBody },
      handler: async (request, _reply, { client }) => ok(await client.schedules.save({ ...(request.body as Omit<ScheduleInput, 'key'>), key: key(request) })),
    },
    enableRoute(true),
    enableRoute(false),
    {
      method: 'DELETE',
      url: `${url}/:key`,
      access: 'admin',
      tags,
      summary: 'Delete a schedule (the tasks it submitted stay)',
      schema: { params: keyParams },
      async handler(request, _reply, { client }) {
        await client.schedules.delete(key(request));
        return ok({ deleted: true });
      },
    },
  ];
}
