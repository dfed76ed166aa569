/**
 * Sequences over HTTP (client/sequences.ts): the keys with tasks waiting and
 * which of them wait for an operator (user: the part of each key that is its
 * own), one key, and an operator's skip of a dead-lettered head or change of
 * a key's policy. A user token's keys start with its owner and a colon
 * (user-routes.ts checks it at submit): one tenant cannot hold another's key.
 */
import type { FastifyRequest } from 'fastify';
import { SEQUENCE_ON_DEAD_LETTER, type SequenceOnDeadLetter } from '../store/rules/sequences.js';
import { principalOf, type RouteSpec } from './routes.js';
import { scopeOf } from './auth.js';

const tags = ['sequences'];
const keyParams = {
  type: 'object',
  required: ['key'],
  properties: { key: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;
const key = (request: FastifyRequest): string => (request.params as { key: string }).key;
const scope = (request: FastifyRequest) => ({ scope: scopeOf(principalOf(request)) });

export function sequenceRoutes(): RouteSpec[] {
  return [
    {
      method: 'GET',
      url: '/api/v1/sequences',
      access: 'user',
      summary:
        'Sequence keys with tasks waiting, each with its head (the task holding the key) and how many wait; blocked=true: only those whose head waits for an operator',
      tags,
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { blocked: { type: 'boolean', default: false }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        },
      },
      async handler(request, _reply, { client }) {
        const { blocked, limit } = request.query as { blocked: boolean; limit: number };
        return { sequences: await client.sequences.list({ ...scope(request), blockedOnly: blocked, limit }) };
      },
    },
    {
      method: 'GET',
      url: '/api/v1/sequences/:key',
      access: 'user',
      summary: 'One sequence key: its policy, its head and how many tasks wait behind it',
      tags,
      schema: { params: keyParams },
      handler: async (request, _reply, { client }) => client.sequences.get(key(request), scope(request)),
    },
    {
      method: 'POST',
      url: '/api/v1/sequences/:key/skip',
      access: 'operator',
      summary: 'The key’s dead-lettered head stops holding it (it stays a dead letter): the next task runs. skipped: null when the head is not dead-lettered',
      tags,
      schema: { params: keyParams },
      handler: async (request, _reply, { client }) => ({ sequenceKey: key(request), ...(await client.sequences.skip(key(request))) }),
    },
    {
      method: 'PUT',
      url: '/api/v1/sequences/:key/policy',
      access: 'operator',
      summary: 'What the key’s dead-lettered head does to the tasks behind it: BLOCK (wait for a replay or a skip) or SKIP (the next runs)',
      tags,
      schema: {
        params: keyParams,
        body: {
          type: 'object',
          required: ['onDeadLetter'],
          additionalProperties: false,
          properties: { onDeadLetter: { type: 'string', enum: SEQUENCE_ON_DEAD_LETTER } },
        },
      },
      async handler(request, _reply, { client }) {
        const { onDeadLetter } = request.body as { onDeadLetter: SequenceOnDeadLetter };
        await client.sequences.setPolicy(key(request), onDeadLetter);
        return client.sequences.get(key(request));
      },
    },
  ];
}
