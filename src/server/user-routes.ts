/**
 * The user API under /api/v1: submit, read, list and control tasks, and live
 * streams. A `user` acts on its own tasks only (owner scope: another owner's
 * task answers 404 exactly like a missing one); admin and operator see all.
 */
import { parseFilterText } from '../core/search.js';
import { DEFAULT_LOG_READ_LIMIT, MAX_LOG_READ_LIMIT } from '../client/logs.js';
import type { FastifyRequest } from 'fastify';
import { AccessError, ErrorCode, NotFoundError, ValidationError, WaitError } from '../core/errors.js';
import type { TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import type { SubmitRequest } from '../client/submit.js';
import { principalOf, type RouteSpec } from './routes.js';
import { actingAs, scopeOf } from './auth.js';
import { editRequest, idParams, listQuery, MAX_SUBMIT_BATCH, submitRequest, waitQuery } from './schemas.js';
import type { TaskChanges } from '../client/edit.js';
import { streamMyTasks, streamTask, type SseStreams } from './sse.js';
import { actionView, stepView, taskView } from './task-view.js';

export type SubmitBody = Omit<SubmitRequest, 'availableAt' | 'deadlineAt'> & { availableAt?: string; deadlineAt?: string };

/** JSON in, client request out: dates parsed, and a user's tasks always its own. */
export function toSubmitRequest(request: FastifyRequest, body: SubmitBody): SubmitRequest {
  const principal = principalOf(request);
  if (principal.role === 'user' && body.owner !== undefined && body.owner !== principal.owner) {
    throw new AccessError('FORBIDDEN', 'a user token submits tasks for its own owner only: leave owner out');
  }
  if (principal.role === 'user' && body.sequenceKey !== undefined && !body.sequenceKey.startsWith(`${principal.owner}:`)) {
    // Keys are shared by every owner: a tenant's dead-lettered head must not hold another tenant's key.
    throw new AccessError('FORBIDDEN', `a user token's sequence keys start with its owner and a colon: ${principal.owner}:…`);
  }
  const { availableAt, deadlineAt, ...rest } = body;
  return {
    ...rest,
    ...(availableAt ? { availableAt: new Date(availableAt) } : {}),
    ...(deadlineAt ? { deadlineAt: new Date(deadlineAt) } : {}),
    ...(principal.role === 'user' ? { owner: principal.owner! } : {}),
  };
}

export type EditBody = Omit<TaskChanges, 'availableAt' | 'deadlineAt'> & { availableAt?: string; deadlineAt?: string | null; expectUpdatedAt?: string };

/** JSON in, client changes and expectation out: dates parsed (a null deadline removes it). */
function toEdit(body: EditBody): { changes: TaskChanges; expect?: { updatedAt: Date } } {
  const { availableAt, deadlineAt, expectUpdatedAt, ...rest } = body;
  return {
    changes: {
      ...rest,
      ...(availableAt !== undefined ? { availableAt: new Date(availableAt) } : {}),
      ...(deadlineAt !== undefined ? { deadlineAt: deadlineAt === null ? null : new Date(deadlineAt) } : {}),
    },
    ...(expectUpdatedAt !== undefined ? { expect: { updatedAt: new Date(expectUpdatedAt) } } : {}),
  };
}

const id = (request: FastifyRequest): string => (request.params as { id: string }).id;
const view = (request: FastifyRequest, task: Task) => taskView(principalOf(request), task);
const scope = (request: FastifyRequest) => ({ scope: scopeOf(principalOf(request)) });
/** An action's options: the caller's scope, and the caller as its actor in the task's history. */
const acting = (request: FastifyRequest) => actingAs(principalOf(request));
const tags = ['tasks'];

export function userRoutes(streams: SseStreams): RouteSpec[] {
  return [
    {
      method: 'POST',
      url: '/api/v1/tasks',
      access: 'user',
      summary: 'Submit one task',
      tags,
      schema: { body: submitRequest },
      async handler(request, reply, { client }) {
        const [result] = await client.submitMany([toSubmitRequest(request, request.body as SubmitBody)]);
        return reply.code(202).send({ ...result!, task: view(request, result!.task) });
      },
    },
    {
      method: 'POST',
      url: '/api/v1/tasks/batch',
      access: 'user',
      summary: `Submit up to ${MAX_SUBMIT_BATCH} tasks: all or none`,
      tags,
      schema: {
        body: {
          type: 'object',
          required: ['tasks'],
          additionalProperties: false,
          properties: { tasks: { type: 'array', minItems: 1, maxItems: MAX_SUBMIT_BATCH, items: submitRequest } },
        },
      },
      async handler(request, reply, { client }) {
        const results = await client.submitMany((request.body as { tasks: SubmitBody[] }).tasks.map((task) => toSubmitRequest(request, task)));
        return reply.code(202).send({ results: results.map((result) => ({ ...result, task: view(request, result.task) })) });
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks',
      access: 'user',
      summary: 'List tasks, newest first (cursor paging)',
      tags,
      schema: { querystring: listQuery },
      async handler(request, _reply, { client }) {
        const q = request.query as {
          type?: string;
          status?: string;
          owner?: string;
          idempotencyKey?: string;
          idempotencyKeyPrefix?: string;
          payload?: string[];
          payloadPrefix?: string[];
          createdAfter?: string;
          createdBefore?: string;
          errorCode?: string;
          limit: number;
          cursor?: string;
        };
        const payload = [
          ...(q.payload ?? []).map((text) => parseFilterText(text, 'equals')),
          ...(q.payloadPrefix ?? []).map((text) => parseFilterText(text, 'prefix')),
        ];
        if (q.owner !== undefined && principalOf(request).role === 'user') throw new ValidationError('a user lists its own tasks: leave owner out', 'owner');
        const page = await client.list({
          ...scope(request),
          limit: q.limit,
          ...(q.type ? { taskType: q.type } : {}),
          ...(q.status ? { status: q.status.split(',') as TaskStatus[] } : {}),
          ...(q.owner ? { owner: q.owner } : {}),
          ...(q.idempotencyKey ? { idempotencyKey: q.idempotencyKey } : {}),
          ...(q.idempotencyKeyPrefix ? { idempotencyKeyPrefix: q.idempotencyKeyPrefix } : {}),
          ...(payload.length > 0 ? { payload } : {}),
          ...(q.cursor ? { cursor: q.cursor } : {}),
          ...(q.createdAfter ? { createdAfter: new Date(q.createdAfter) } : {}),
          ...(q.createdBefore ? { createdBefore: new Date(q.createdBefore) } : {}),
          ...(q.errorCode ? { errorCode: q.errorCode } : {}),
        });
        return { ...page, tasks: page.tasks.map((task) => view(request, task)) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/counts',
      access: 'user',
      summary: 'How many tasks are in each status, of one type or all (a user: its own tasks)',
      tags,
      schema: { querystring: { type: 'object', additionalProperties: false, properties: { type: { type: 'string', minLength: 1, maxLength: 255 } } } },
      async handler(request, _reply, { client }) {
        const { type } = request.query as { type?: string };
        return { counts: await client.counts({ ...scope(request), ...(type ? { taskType: type } : {}) }) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id',
      access: 'user',
      ownTask: true,
      summary: 'One task',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return view(request, (await client.get(id(request), scope(request))) ?? notFound(id(request)));
      },
    },
    {
      method: 'POST',
      url: '/api/v1/tasks/:id/cancel',
      access: 'user',
      ownTask: true,
      summary: 'Cancel a task (CANCELLED at once, or CANCEL_REQUESTED while it runs)',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return { id: id(request), outcome: await client.requestCancellation(id(request), acting(request)) };
      },
    },
    {
      method: 'PATCH',
      url: '/api/v1/tasks/:id',
      access: 'user',
      ownTask: true,
      summary:
        'Edit a waiting task (QUEUED, RETRY_WAIT, PAUSED or BLOCKED; its status stays): payload, priority, availableAt, deadlineAt, maxAttempts. A task claimed meanwhile answers 409 INVALID_TRANSITION; with expectUpdatedAt, one changed since answers 409 TASK_CHANGED. Answers the task as edited',
      tags,
      schema: { params: idParams, body: editRequest },
      async handler(request, _reply, { client }) {
        const { changes, expect } = toEdit(request.body as EditBody);
        return view(request, await client.edit(id(request), changes, { ...acting(request), ...(expect ? { expect } : {}) }));
      },
    },
    {
      method: 'POST',
      url: '/api/v1/tasks/:id/pause',
      access: 'user',
      ownTask: true,
      summary: 'Hold a waiting task',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        await client.pause(id(request), acting(request));
        return { id: id(request), status: 'PAUSED' };
      },
    },
    {
      method: 'POST',
      url: '/api/v1/tasks/:id/resume',
      access: 'user',
      ownTask: true,
      summary: 'Queue a paused task again',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        await client.resume(id(request), acting(request));
        return { id: id(request), status: 'QUEUED' };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/actions',
      access: 'user',
      ownTask: true,
      summary: 'What operators did to the task (pause, resume, cancel, retry, reschedule, edit, dead-letter replay and archive), by whom, newest first',
      tags,
      schema: {
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        },
      },
      async handler(request, _reply, { client }) {
        const { limit } = request.query as { limit: number };
        const actions = await client.actions(id(request), { ...scope(request), limit });
        return { actions: actions.map((action) => actionView(principalOf(request), action)) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/steps',
      access: 'user',
      ownTask: true,
      summary:
        "The durable steps (ctx.step) the task's handler completed, oldest first, with their results: the current attempt cycle's (a retry resumes after the last), and with allCycles=true those of cycles an operator's retry or a replay ended",
      tags,
      schema: {
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { allCycles: { type: 'boolean', default: false } },
        },
      },
      async handler(request, _reply, { client }) {
        const { allCycles } = request.query as { allCycles: boolean };
        const steps = await client.steps(id(request), { ...scope(request), allCycles });
        return { steps: steps.map((step) => stepView(principalOf(request), step)) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/logs',
      access: 'user',
      ownTask: true,
      summary:
        "The lines the task's handler logged (ctx.log), oldest first: every attempt's, or one attempt's; afterSeq pages (the last line's seq). A line with dropped > 0 is a marker for that many older lines the bounds dropped; fields are as stored (redacted)",
      tags,
      schema: {
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            attempt: { type: 'integer', minimum: 1 },
            afterSeq: { type: 'integer', minimum: 0 },
            limit: { type: 'integer', minimum: 1, maximum: MAX_LOG_READ_LIMIT, default: DEFAULT_LOG_READ_LIMIT },
          },
        },
      },
      async handler(request, _reply, { client }) {
        const { attempt, afterSeq, limit } = request.query as { attempt?: number; afterSeq?: number; limit: number };
        return { logs: await client.logs(id(request), { ...scope(request), attempt, afterSeq, limit }) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/wait',
      access: 'user',
      ownTask: true,
      tags,
      summary: 'Long poll: { finished: true, task } once the task ends, or { finished: false, task } after timeoutMs',
      schema: { params: idParams, querystring: waitQuery },
      async handler(request, reply, { client }) {
        const { timeoutMs } = request.query as { timeoutMs: number };
        // A caller that hangs up stops the wait (and its polls) at once.
        const hangUp = new AbortController();
        const onClose = (): void => hangUp.abort();
        reply.raw.on('close', onClose);
        try {
          return { finished: true, task: view(request, await client.waitFor(id(request), { ...scope(request), timeoutMs, signal: hangUp.signal })) };
        } catch (error) {
          if (!(error instanceof WaitError) || error.code !== ErrorCode.WAIT_TIMEOUT) throw error;
          return { finished: false, task: view(request, (await client.get(id(request), scope(request))) ?? notFound(id(request))) };
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/events',
      access: 'user',
      ownTask: true,
      tags,
      summary: 'Server-Sent Events: the task (event task), progress (event progress) until it ends (event end)',
      schema: { params: idParams },
      async handler(request, reply, context) {
        const task = await context.client.get(id(request), scope(request));
        if (!task) notFound(id(request));
        void streamTask(streams.start(request, reply), context, id(request), scope(request).scope);
        return reply;
      },
    },
    {
      method: 'GET',
      url: '/api/v1/events',
      access: 'user',
      tags,
      summary: 'Server-Sent Events: changes of my active tasks (all tasks for admin and operator)',
      async handler(request, reply, context) {
        void streamMyTasks(streams.start(request, reply), context, scope(request).scope);
        return reply;
      },
    },
  ];
}

export function notFound(taskId: string): never {
  throw new NotFoundError('task', taskId);
}
