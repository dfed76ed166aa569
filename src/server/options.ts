/**
 * createServer's one options object, validated at the edge with messages that
 * name the field (src/core/validate.ts). Defaults suit a server behind a
 * proxy on a private network: everything but the probes needs a token.
 */
import type { Middleware } from '../client/middleware.js';
import type { FastifyServerOptions } from 'fastify';
import type { Registry } from 'prom-client';
import { InvalidOptionsError } from '../core/errors.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { checkInteger, checkKnownKeys, checkString } from '../core/validate.js';
import type { Store } from '../store/types.js';
import type { WorkerOptions } from '../worker/options.js';

export interface JwtOptions {
  /** HS256/384/512 shared secret (at least 32 characters)… */
  secret?: string;
  /** …or the URL of a JWKS (RS256, ES256, …). Exactly one of the two. */
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /** Claim holding the role (admin, operator or user). Default "role". */
  roleClaim?: string;
  /** Claim holding the owner of a user. Default "sub". */
  ownerClaim?: string;
}

export interface ServerOptions {
  /** An open store (you close it), or… */
  store?: Store;
  /** …a store URL (sqlite:, postgres://, mysql://) the server opens and closes. */
  databaseUrl?: string;
  /** Run the store's migrations before serving. Default false (run `tasklease migrate` once per upgrade). */
  migrate?: boolean;
  /** Task definitions: submits are checked against them, and an in-process worker runs them. */
  tasks?: readonly AnyTaskDefinition[];
  /**
   * Middleware (client/middleware.ts) of the server's client and its worker: submits over HTTP pass its submit and
   * encode hooks, the worker its execute and decode hooks. Reads over HTTP show payloads as stored (an encrypted one
   * stays sealed: the dashboard opens it in the browser with the viewer's key).
   */
  middleware?: readonly Middleware[];
  /** Run a worker in this process: true for defaults, or its options. Default false. */
  worker?: boolean | Omit<WorkerOptions, 'store' | 'tasks'>;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8080 (the seed's); 0 picks a free port. */
  port?: number;
  /** Largest request body. Default 1 MiB. */
  bodyLimitBytes?: number;
  /** Largest task payload (client maxPayloadBytes). Default 1 MiB. */
  maxPayloadBytes?: number;
  jwt?: JwtOptions;
  /** Failed authentications allowed per client address and window before 429. Default 20 per 60 s. */
  failedAuthLimit?: { max: number; windowMs: number };
  /** Serve /metrics and /actuator/prometheus without a token (a scraper on a private network). Default false. */
  publicMetrics?: boolean;
  /** Serve /openapi.json and /docs without a token. Default false. */
  publicDocs?: boolean;
  /** Origins allowed by CORS; none (the default) turns CORS off. */
  corsOrigins?: readonly string[];
  /** pino logger options, or false. Default { level: 'info' }. Request ids are in every line; each request is logged at debug. */
  logger?: FastifyServerOptions['logger'];
  /**
   * Trust X-Forwarded-* from a proxy: the client address the failed-authentication throttle counts, and the
   * scheme and host the dashboard's same-origin check compares. Set it behind a reverse proxy or load balancer
   * that is the only way in. Default false.
   */
  trustProxy?: boolean;
  /**
   * What the health probes show beyond `{ status }` (worker id, task types, counts, schema version): `never`,
   * `when-authorized` (to a caller with an operator or admin credential; the default) or `always`.
   */
  healthDetails?: HealthDetails;
  /** Prometheus registry to register on. Default a new one. */
  registry?: Registry;
  /** Server-Sent Events: concurrent streams (in all, and per credential), poll interval bounds, keep-alive period. */
  sse?: { maxStreams?: number; maxStreamsPerIdentity?: number; minPollMs?: number; maxPollMs?: number; keepAliveMs?: number };
  /** DEGRADED control-plane health above this many QUEUED tasks (seed: 1000). */
  backlogThreshold?: number;
  /** How often the server looks for bulk operations no live process holds and goes on with them (ms; 0: never). Default 5000. */
  bulkResumeIntervalMs?: number;
}

export const HEALTH_DETAILS = ['never', 'when-authorized', 'always'] as const;
export type HealthDetails = (typeof HEALTH_DETAILS)[number];

export interface ResolvedSse {
  maxStreams: number;
  maxStreamsPerIdentity: number;
  minPollMs: number;
  maxPollMs: number;
  keepAliveMs: number;
}

const KNOWN = [
  'store',
  'databaseUrl',
  'migrate',
  'tasks',
  'middleware',
  'worker',
  'host',
  'port',
  'bodyLimitBytes',
  'maxPayloadBytes',
  'jwt',
  'failedAuthLimit',
  'publicMetrics',
  'publicDocs',
  'corsOrigins',
  'logger',
  'trustProxy',
  'healthDetails',
  'registry',
  'sse',
  'backlogThreshold',
  'bulkResumeIntervalMs',
];

export function checkServerOptions(options: ServerOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionsError('Server', 'options', 'must be an object');
  checkKnownKeys('Server', options, KNOWN);
  if ((options.store === undefined) === (options.databaseUrl === undefined))
    throw new InvalidOptionsError('Server', 'store', 'give exactly one of store or databaseUrl');
  if (options.databaseUrl !== undefined) checkString('Server', 'databaseUrl', options.databaseUrl, { minLength: 1 });
  if (options.host !== undefined) checkString('Server', 'host', options.host, { minLength: 1, maxLength: 255 });
  if (options.port !== undefined) checkInteger('Server', 'port', options.port, { min: 0, max: 65535 });
  if (options.bodyLimitBytes !== undefined) checkInteger('Server', 'bodyLimitBytes', options.bodyLimitBytes, { min: 1024, max: 64 * 1024 * 1024 });
  if (options.backlogThreshold !== undefined) checkInteger('Server', 'backlogThreshold', options.backlogThreshold, { min: 0 });
  if (options.bulkResumeIntervalMs !== undefined) checkInteger('Server', 'bulkResumeIntervalMs', options.bulkResumeIntervalMs, { min: 0, max: 3_600_000 });
  if (options.failedAuthLimit !== undefined) {
    checkInteger('Server', 'failedAuthLimit.max', options.failedAuthLimit?.max, { min: 1 });
    checkInteger('Server', 'failedAuthLimit.windowMs', options.failedAuthLimit?.windowMs, { min: 1 });
  }
  if (options.corsOrigins !== undefined && (!Array.isArray(options.corsOrigins) || options.corsOrigins.some((o) => typeof o !== 'string' || o.length === 0))) {
    throw new InvalidOptionsError('Server', 'corsOrigins', 'must be a list of origins such as https://ops.example.com');
  }
  if (options.jwt !== undefined) checkJwtOptions(options.jwt);
  if (options.healthDetails !== undefined && !HEALTH_DETAILS.includes(options.healthDetails))
    throw new InvalidOptionsError('Server', 'healthDetails', `must be one of ${HEALTH_DETAILS.join(', ')}, got ${JSON.stringify(options.healthDetails)}`);
  resolveSse(options.sse);
}

function checkJwtOptions(jwt: JwtOptions): void {
  checkKnownKeys('Server.jwt', jwt, ['secret', 'jwksUrl', 'issuer', 'audience', 'roleClaim', 'ownerClaim']);
  if ((jwt.secret === undefined) === (jwt.jwksUrl === undefined))
    throw new InvalidOptionsError('Server', 'jwt.secret', 'give exactly one of jwt.secret or jwt.jwksUrl');
  if (jwt.secret !== undefined) checkString('Server', 'jwt.secret', jwt.secret, { minLength: 32 });
  if (jwt.jwksUrl !== undefined && !/^https?:\/\//.test(jwt.jwksUrl)) throw new InvalidOptionsError('Server', 'jwt.jwksUrl', 'must be an http(s) URL');
}

export function resolveSse(sse: ServerOptions['sse'] = {}): ResolvedSse {
  checkKnownKeys('Server.sse', sse, ['maxStreams', 'maxStreamsPerIdentity', 'minPollMs', 'maxPollMs', 'keepAliveMs']);
  const resolved = {
    maxStreams: sse.maxStreams ?? 1000,
    maxStreamsPerIdentity: sse.maxStreamsPerIdentity ?? 20,
    minPollMs: sse.minPollMs ?? 100,
    maxPollMs: sse.maxPollMs ?? 2000,
    keepAliveMs: sse.keepAliveMs ?? 15_000,
  };
  checkInteger('Server', 'sse.maxStreams', resolved.maxStreams, { min: 1 });
  checkInteger('Server', 'sse.maxStreamsPerIdentity', resolved.maxStreamsPerIdentity, { min: 1 });
  checkInteger('Server', 'sse.minPollMs', resolved.minPollMs, { min: 10 });
  checkInteger('Server', 'sse.maxPollMs', resolved.maxPollMs, { min: resolved.minPollMs });
  checkInteger('Server', 'sse.keepAliveMs', resolved.keepAliveMs, { min: 1000 });
  return resolved;
}
