/**
 * The dashboard's routes (issue 15): its built files under /ui (dist/ui, made
 * by `npm run build`), the login session (ui-session.ts) and the cluster
 * stats its overview polls. Everything else the dashboard shows comes from the
 * public API with the same access rules as for any other caller.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NotFoundError } from '../core/errors.js';
import type { Authenticator, FailureLimiter, Principal } from './auth.js';
import { ADMIN_PREFIX } from './admin-routes.js';
import { ok, principalOf, type RouteSpec } from './routes.js';
import { assertSameOrigin, clearSession, readCookie, SESSION_COOKIE, SESSION_MAX_AGE_SECONDS, setSession } from './ui-session.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

/** dist/ui of the package this module belongs to (from src/server or dist/src/server alike). */
export function builtUiDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'ui');
}

/** Every built file by its URL path, read once: only these paths are ever served (no traversal to guard). */
function loadFiles(root: string): Map<string, { body: Buffer; type: string }> {
  const files = new Map<string, { body: Buffer; type: string }>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(root, path).split(sep).join('/'), { body: readFileSync(path), type: CONTENT_TYPES[extname(name)] ?? 'application/octet-stream' });
    }
  };
  if (existsSync(root)) walk(root);
  return files;
}

const whoIs = (principal: Principal) => ({ role: principal.role, owner: principal.owner, name: principal.name });

function staticRoutes(root: string): RouteSpec[] {
  let files: ReturnType<typeof loadFiles> | null = null;
  const tags = ['dashboard'];
  return [
    {
      method: 'GET',
      url: '/ui',
      access: 'public',
      tags,
      summary: 'The dashboard (redirects to /ui/)',
      handler: async (_request, reply) => reply.redirect('/ui/'),
    },
    {
      method: 'GET',
      url: '/ui/*',
      access: 'public',
      tags,
      summary: "The dashboard's built files",
      async handler(request, reply) {
        if (!files || files.size === 0) files = loadFiles(root); // built after start: look again
        const path = (request.params as { '*': string })['*'] || 'index.html';
        const file = files.get(path);
        if (!file) {
          if (files.size === 0) throw new NotFoundError('dashboard build (run npm run build)', root);
          throw new NotFoundError('dashboard file', path);
        }
        // Bundles carry a content hash in their names; index.html must be re-read to find new ones.
        reply.header('cache-control', path.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
        return reply.type(file.type).send(file.body);
      },
    },
  ];
}

function sessionRoutes(authenticator: Authenticator, limiter: FailureLimiter): RouteSpec[] {
  const tags = ['dashboard'];
  return [
    {
      method: 'POST',
      url: '/api/v1/session',
      access: 'public',
      tags,
      summary: 'Log in with an API token (or JWT): sets the HttpOnly, SameSite=Strict session cookie the dashboard uses',
      schema: {
        body: { type: 'object', required: ['token'], additionalProperties: false, properties: { token: { type: 'string', minLength: 1, maxLength: 4096 } } },
      },
      async handler(request, reply, { client }) {
        assertSameOrigin(request);
        const { token } = request.body as { token: string };
        const principal = await limiter.attempt(request.ip, reply, () => authenticator.verifyCredential(token.trim()));
        const now = Date.now();
        const credentialLeft = principal.expiresAt ? Math.floor((principal.expiresAt.getTime() - now) / 1000) : Infinity;
        const maxAgeSeconds = Math.max(1, Math.min(SESSION_MAX_AGE_SECONDS, credentialLeft));
        const { sessionId } = await client.tokens.startSession({ ...principal, expiresAt: new Date(now + maxAgeSeconds * 1000) });
        setSession(request, reply, sessionId, maxAgeSeconds);
        return whoIs(principal);
      },
    },
    {
      method: 'GET',
      url: '/api/v1/session',
      access: 'user',
      tags,
      summary: 'Who the caller is: role, owner, name',
      handler: async (request) => whoIs(principalOf(request)),
    },
    {
      method: 'DELETE',
      url: '/api/v1/session',
      access: 'public',
      tags,
      summary: 'Log out: ends the session on the server and clears its cookie',
      async handler(request, reply, { client }) {
        assertSameOrigin(request);
        const sessionId = readCookie(request, SESSION_COOKIE);
        if (sessionId) await client.tokens.endSession(sessionId);
        clearSession(request, reply);
        return { loggedOut: true };
      },
    },
  ];
}

export function dashboardRoutes(options: { authenticator: Authenticator; limiter: FailureLimiter; uiDir?: string }): RouteSpec[] {
  return [
    ...staticRoutes(options.uiDir ?? builtUiDir()),
    ...sessionRoutes(options.authenticator, options.limiter),
    {
      method: 'GET',
      url: `${ADMIN_PREFIX}/stats`,
      access: 'operator',
      tags: ['admin'],
      summary: 'Cluster snapshot: tasks by status, running against each limit, dead letters, workers, queue wait p50/p99 (last 5 min)',
      handler: async (_request, _reply, { client }) => ok(await client.stats()),
    },
    {
      method: 'GET',
      url: `${ADMIN_PREFIX}/stats/history`,
      access: 'operator',
      tags: ['admin'],
      summary:
        'Queue history per minute or hour (client.history): submitted, started, succeeded, failed, dead-lettered, wait and run quantiles; range=1h|24h|7d or from/to/step; taskType: one type',
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            taskType: { type: 'string', minLength: 1, maxLength: 255 },
            range: { type: 'string', enum: Object.keys(HISTORY_RANGES) },
            from: { type: 'string', format: 'date-time' },
            to: { type: 'string', format: 'date-time' },
            step: { type: 'string', enum: ['minute', 'hour'] },
          },
        },
      },
      handler: async (request, _reply, { client }) => {
        const q = request.query as { taskType?: string; range?: string; from?: string; to?: string; step?: 'minute' | 'hour' };
        // A range counts back from the database clock (the rows are cut by the writers' clocks, near enough).
        const range = HISTORY_RANGES[q.range ?? (q.from === undefined ? '1h' : '')];
        const to = q.to !== undefined ? new Date(q.to) : await client.store.now();
        const from = q.from !== undefined ? new Date(q.from) : new Date(to.getTime() - (range?.ms ?? HISTORY_RANGES['1h']!.ms));
        const step = q.step ?? range?.step ?? 'minute';
        return ok(await client.history({ from, to, step, ...(q.taskType !== undefined ? { taskType: q.taskType } : {}) }));
      },
    },
  ];
}

/** The dashboard's ranges: how far back, and the step their chart uses. */
export const HISTORY_RANGES: Record<string, { ms: number; step: 'minute' | 'hour' }> = {
  '1h': { ms: 3_600_000, step: 'minute' },
  '24h': { ms: 86_400_000, step: 'minute' },
  '7d': { ms: 7 * 86_400_000, step: 'hour' },
};
