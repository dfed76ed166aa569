/**
 * The route table: every route the server has, each with its access rule.
 * app.ts registers them, the OpenAPI document describes them, and the tests
 * generate their authorization matrix from them. A route registered any other
 * way has no rule, and app.ts refuses it (see `guardRoutes`).
 */
import type { FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import type { TaskLeaseClient } from '../client/client.js';
import type { TaskleaseMetrics } from '../observe/metrics.js';
import type { Worker } from '../worker/worker.js';
import type { Principal } from './auth.js';
import type { HealthDetails, ResolvedSse } from './options.js';
import type { TaskEventHub } from './task-events.js';

/**
 * public: no token (probes; metrics and docs when configured so);
 * user: any role (a user sees its own tasks only); operator: operator and admin; admin: admin only.
 */
export type Access = 'public' | 'user' | 'operator' | 'admin';

export const ROLES_BY_ACCESS: Record<Exclude<Access, 'public'>, readonly Principal['role'][]> = {
  user: ['admin', 'operator', 'user'],
  operator: ['admin', 'operator'],
  admin: ['admin'],
};

export interface RouteContext {
  client: TaskLeaseClient;
  worker: Worker | null;
  metrics: TaskleaseMetrics;
  events: TaskEventHub;
  sse: ResolvedSse;
  backlogThreshold: number;
  healthDetails: HealthDetails;
  /** Set once migrations (when asked for) and the worker have started. */
  started: () => boolean;
}

export interface RouteSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  access: Access;
  /** Takes a task id in `:id`: for a user, another owner's task answers 404 like a missing one. */
  ownTask?: boolean;
  /** A public route that still identifies a caller who sends a credential (a wrong one leaves it anonymous). */
  identify?: boolean;
  summary: string;
  tags: string[];
  schema?: Omit<FastifySchema, 'summary' | 'tags' | 'security'>;
  handler: (request: FastifyRequest, reply: FastifyReply, context: RouteContext) => Promise<unknown>;
}

/** The seed's BaseResult envelope, successful. */
export function ok<T>(data: T): { success: true; code: 'OK'; message: 'OK'; data: T } {
  return { success: true, code: 'OK', message: 'OK', data };
}

export function principalOf(request: FastifyRequest): Principal {
  return request.principal!;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}
