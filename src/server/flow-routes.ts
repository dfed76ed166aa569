/**
 * Flows over HTTP (client/flows.ts): submit a flow, read one as a graph,
 * cancel, pause, resume it (user, own tasks: a user's flow is the part of it
 * that is its own, and a flow with nothing of its own answers 404), retry it
 * (operator), and a task's edges both ways.
 */
import type { FastifyRequest } from 'fastify';
import type { FlowNode, FlowRequest } from '../client/flows.js';
import { ON_PARENT_FAILURE } from '../store/rules/flows.js';
import type { DependencyLink } from '../store/types.js';
import { principalOf, type RouteSpec } from './routes.js';
import { actingAs, scopeOf } from './auth.js';
import { idParams, submitRequest } from './schemas.js';
import { taskView } from './task-view.js';
import { toSubmitRequest, type SubmitBody } from './user-routes.js';

/** Most nodes one HTTP flow submit takes (the client takes more). */
export const MAX_HTTP_FLOW_NODES = 10_000;

const onParentFailure = { type: 'string', enum: ON_PARENT_FAILURE } as const;
const parentRef = {
  anyOf: [
    { type: 'string', minLength: 1, maxLength: 200 },
    {
      type: 'object',
      additionalProperties: false,
      properties: { key: { type: 'string', minLength: 1, maxLength: 200 }, taskId: idParams.properties.id, onParentFailure },
    },
  ],
} as const;

export const flowNodeSchema = {
  ...submitRequest,
  required: ['key', 'type'],
  properties: {
    ...submitRequest.properties,
    key: { type: 'string', minLength: 1, maxLength: 200 },
    dependsOn: { type: 'array', maxItems: 1000, items: parentRef },
    onParentFailure,
  },
} as const;

const flowRequest = {
  type: 'object',
  required: ['nodes'],
  additionalProperties: false,
  properties: {
    nodes: { type: 'array', minItems: 1, maxItems: MAX_HTTP_FLOW_NODES, items: flowNodeSchema },
    flowId: idParams.properties.id,
    onParentFailure,
  },
} as const;

const flowQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_HTTP_FLOW_NODES, default: 1000 } },
} as const;

const tags = ['flows'];
const id = (request: FastifyRequest): string => (request.params as { id: string }).id;
const scope = (request: FastifyRequest) => ({ scope: scopeOf(principalOf(request)) });
const acting = (request: FastifyRequest) => actingAs(principalOf(request));

export function flowRoutes(): RouteSpec[] {
  const flowAction = (action: 'pause' | 'resume', summary: string): RouteSpec => ({
    method: 'POST',
    url: `/api/v1/flows/:id/${action}`,
    access: 'user',
    tags,
    summary,
    schema: { params: idParams },
    async handler(request, _reply, { client }) {
      const changed = await (action === 'pause' ? client.pauseFlow(id(request), acting(request)) : client.resumeFlow(id(request), acting(request)));
      return { flowId: id(request), changed };
    },
  });
  return [
    {
      method: 'POST',
      url: '/api/v1/flows',
      access: 'user',
      summary: `Submit a flow of up to ${MAX_HTTP_FLOW_NODES} tasks with their dependencies: all or none; a cycle is refused (FLOW_CYCLE)`,
      tags,
      schema: { body: flowRequest },
      async handler(request, reply, { client }) {
        const body = request.body as Omit<FlowRequest, 'nodes'> & { nodes: (SubmitBody & Pick<FlowNode, 'key' | 'dependsOn' | 'onParentFailure'>)[] };
        const nodes = body.nodes.map(({ key, dependsOn, onParentFailure: rule, ...rest }) => ({
          ...toSubmitRequest(request, rest),
          key,
          ...(dependsOn === undefined ? {} : { dependsOn }),
          ...(rule === undefined ? {} : { onParentFailure: rule }),
        }));
        const flow = await client.submitFlow({ ...body, nodes }, scope(request));
        const principal = principalOf(request);
        const tasks = Object.fromEntries(Object.entries(flow.tasks).map(([key, task]) => [key, taskView(principal, task)]));
        return reply.code(202).send({ ...flow, tasks });
      },
    },
    {
      method: 'GET',
      url: '/api/v1/flows/:id',
      access: 'user',
      summary: 'A flow: its tasks (oldest first, at most limit), the edges between them and a count per status',
      tags,
      schema: { params: idParams, querystring: flowQuery },
      async handler(request, _reply, { client }) {
        const { limit } = request.query as { limit: number };
        const flow = await client.flow(id(request), { ...scope(request), limit });
        return { ...flow, tasks: flow.tasks.map((task) => taskView(principalOf(request), task)) };
      },
    },
    {
      method: 'POST',
      url: '/api/v1/flows/:id/cancel',
      access: 'user',
      summary: 'Cancel every task of the flow that has not ended (waiting ones at once, running ones by request)',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return { flowId: id(request), ...(await client.cancelFlow(id(request), acting(request))) };
      },
    },
    flowAction('pause', 'Hold every waiting task of the flow (QUEUED, RETRY_WAIT, BLOCKED)'),
    flowAction('resume', 'Resume the flow’s paused tasks (a task whose parents have not ended waits for them again)'),
    {
      method: 'POST',
      url: '/api/v1/flows/:id/retry',
      access: 'operator',
      summary: 'Run the flow’s FAILED tasks again; the tasks their failure cancelled wait for them again',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        return { flowId: id(request), retried: await client.retryFlow(id(request), acting(request)) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/tasks/:id/dependencies',
      access: 'user',
      ownTask: true,
      summary: 'What the task waits for (parents) and what waits for it (children), each with its task',
      tags,
      schema: { params: idParams },
      async handler(request, _reply, { client }) {
        const deps = await client.dependencies(id(request), scope(request));
        const principal = principalOf(request);
        const link = (l: DependencyLink) => ({ ...l, task: l.task && taskView(principal, l.task) });
        return { parents: deps.parents.map(link), children: deps.children.map(link) };
      },
    },
  ];
}
