/**
 * The Fastify application: security headers, optional CORS, OpenAPI, one
 * error shape, request ids, and every route of the table behind its access
 * rule. A route that reaches Fastify without a rule fails at start.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type FastifyRequest } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import { AccessError } from '../core/errors.js';
import type { Authenticator, FailureLimiter } from './auth.js';
import { readCookie, SESSION_COOKIE } from './ui-session.js';
import { handleError, handleNotFound } from './errors.js';
import type { ServerOptions } from './options.js';
import { ROLES_BY_ACCESS, type Access, type RouteContext, type RouteSpec } from './routes.js';

export interface RouteRule {
  method: string;
  url: string;
  access: Access;
  ownTask: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    ownTask?: boolean;
    identify?: boolean;
  }
  interface FastifyInstance {
    /** Every registered route with its access rule (the tests' authorization matrix reads it). */
    routeRules: RouteRule[];
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export interface AppParts {
  options: ServerOptions;
  context: RouteContext;
  routes: RouteSpec[];
  authenticator: Authenticator;
  /** Failed authentications per client address, shared with the dashboard's login. */
  limiter: FailureLimiter;
}

export async function buildApp({ options, context, routes, authenticator, limiter }: AppParts): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? { level: 'info' },
    bodyLimit: options.bodyLimitBytes ?? 1024 * 1024,
    trustProxy: options.trustProxy ?? false,
    exposeHeadRoutes: false,
    return503OnClosing: true,
    // Fastify logs every request twice at info; a quiet server at the default level logs them once, at debug (below).
    logController: new LogController({ disableRequestLogging: true }),
    // A caller's request id is kept when it is safe to log; else a fresh one.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false } },
  });
  app.decorate('routeRules', [] as RouteRule[]);
  app.decorateRequest('principal', null);
  const docsAccess: Access = options.publicDocs ? 'public' : 'user';
  const corsOn = options.corsOrigins !== undefined && options.corsOrigins.length > 0;
  app.addHook('onRoute', (route) => {
    route.config ??= {};
    // swagger-ui registers its own routes under /docs: they get the docs rule.
    if (route.config.access === undefined && route.url.startsWith('/docs')) route.config.access = docsAccess;
    // @fastify/cors answers preflights on its own OPTIONS * route: a browser sends them without credentials.
    if (route.config.access === undefined && route.method === 'OPTIONS' && route.url === '*' && corsOn) route.config.access = 'public';
    if (route.config.access === undefined) throw new Error(`route ${String(route.method)} ${route.url} has no access rule: add it to the route table`);
    app.routeRules.push({ method: String(route.method), url: route.url, access: route.config.access, ownTask: route.config.ownTask ?? false });
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  // The request id and helmet's headers, before CORS's and the authorizer's hooks: a 401, 403 or 429 carries them too.
  // Helmet's on the raw response, as helmet sets them: a hijacked reply (the SSE streams) writes its head itself and
  // keeps them. Callback hooks, not async ones: no promise per request for work that never waits.
  const security = securityHeaders({
    contentSecurityPolicy: {
      directives: { defaultSrc: ["'self'"], scriptSrc: ["'self'"], styleSrc: ["'self'", "'unsafe-inline'"], imgSrc: ["'self'", 'data:'] },
    },
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    for (const [name, value] of security) reply.raw.setHeader(name, value);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.debug({ method: request.method, url: request.url, statusCode: reply.statusCode, responseTimeMs: Math.round(reply.elapsedTime) }, 'request');
    done();
  });
  if (corsOn) {
    const { default: cors } = await import('@fastify/cors');
    await app.register(cors, { origin: [...(options.corsOrigins ?? [])], allowedHeaders: ['authorization', 'content-type', 'x-request-id'] });
  }
  app.addHook('onRequest', authorizer(authenticator, limiter));
  const { registerDocs } = await import('./docs.js');
  await registerDocs(app, docsAccess);
  for (const spec of routes) {
    app.route({
      method: spec.method,
      url: spec.url,
      schema: {
        ...spec.schema,
        summary: spec.summary,
        tags: spec.tags,
        description:
          spec.access === 'public'
            ? 'Open: no token.'
            : `Roles: ${ROLES_BY_ACCESS[spec.access].join(', ')}.${spec.ownTask ? " A user sees its own tasks only (another owner's answers 404)." : ''}`,
        security: spec.access === 'public' ? [] : [{ bearerAuth: [] }],
      },
      config: { access: spec.access, ownTask: spec.ownTask ?? false, identify: spec.identify ?? false },
      handler: (request, reply) => spec.handler(request, reply, context),
    });
  }
  return app;
}

/**
 * Helmet's response headers for these options. They are the same on every
 * response, so they are worked out once here; @fastify/helmet built helmet's
 * middleware (parsing the CSP directives again) on every request, about 5% of a
 * request's CPU.
 */
export function securityHeaders(options: HelmetOptions): [string, string][] {
  const headers: [string, string][] = [];
  const capture = { setHeader: (name: string, value: string) => void headers.push([name, value]), removeHeader: () => undefined };
  helmet(options)({} as IncomingMessage, capture as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error;
  });
  return headers;
}

/** onRequest: before the body is read, so an unauthenticated caller cannot make the server parse anything. */
function authorizer(authenticator: Authenticator, limiter: FailureLimiter) {
  return async (request: FastifyRequest, reply: import('fastify').FastifyReply): Promise<void> => {
    const { access, identify } = request.routeOptions.config;
    if (access === undefined) return; // no route: the not-found handler answers
    // Only a credential that was presented and wrong counts: a request without one cannot guess a token.
    const presented = () => request.headers.authorization !== undefined || readCookie(request, SESSION_COOKIE) !== null;
    if (access === 'public') {
      if (identify && presented()) {
        // Identified when the credential is good; anonymous (not refused) otherwise: a probe must still answer.
        request.principal = await limiter.attempt(request.ip, reply, () => authenticator.authenticate(request), presented).catch(() => null);
      }
      return;
    }
    request.principal = await limiter.attempt(request.ip, reply, () => authenticator.authenticate(request), presented);
    if (!ROLES_BY_ACCESS[access].includes(request.principal.role)) {
      throw new AccessError(
        'FORBIDDEN',
        `role ${request.principal.role} may not ${request.method} ${request.routeOptions.url}; it needs ${ROLES_BY_ACCESS[access].join(' or ')}`,
      );
    }
  };
}
