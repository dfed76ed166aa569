/**
 * The dashboard's session: a login (POST /api/v1/session) checks the API
 * token (or JWT) once and starts a session (client.tokens.startSession): a
 * row beside the API tokens, so every server behind a balancer knows it. The
 * browser holds only the session's random id, in an HttpOnly,
 * SameSite=Strict cookie; the server checks it on every request (with the
 * tokens' 5 s cache). Logout ends the session on the server, and revoking the
 * token logged in with ends its sessions. A session lasts 12 h at most, and
 * never longer than the credential it was started with.
 *
 * Cross-site requests: SameSite=Strict keeps the cookie off them, and a
 * state-changing request that arrives with the cookie must also show it comes
 * from this origin (assertSameOrigin), or it is refused with 403.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccessError } from '../core/errors.js';

export const SESSION_COOKIE = 'tasklease_session';
/** A session ends after this (sooner when its credential expires sooner). */
export const SESSION_MAX_AGE_SECONDS = 12 * 3600;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return null;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      try {
        return decodeURIComponent(part.slice(at + 1).trim());
      } catch {
        return null;
      }
    }
  }
  return null;
}

/**
 * Refuses a state-changing request unless it shows it came from this origin:
 * `Sec-Fetch-Site: same-origin`, or (browsers send Sec-Fetch-* only over
 * https and on localhost) no Sec-Fetch-Site and an `Origin` that is this
 * server. `Sec-Fetch-Site: none` (typed in, a bookmark), another site, or
 * neither header is refused: nothing proves such a request came from the
 * dashboard, and the cookie rides along on it.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  const fetchSite = request.headers['sec-fetch-site'];
  const origin = request.headers.origin;
  if (fetchSite !== undefined && fetchSite !== 'same-origin') {
    throw new AccessError('FORBIDDEN', `cross-site request refused (Sec-Fetch-Site: ${String(fetchSite)})`);
  }
  if (origin === undefined) {
    if (fetchSite === undefined) throw new AccessError('FORBIDDEN', 'cross-site request refused (neither Sec-Fetch-Site nor Origin was sent)');
    return;
  }
  if (origin !== `${request.protocol}://${request.host}`) {
    throw new AccessError('FORBIDDEN', `cross-site request refused (Origin ${String(origin)} is not this server)`);
  }
}

/** The session cookie's session id, or null without one; a state-changing request must be same-origin. */
export function sessionCredential(request: FastifyRequest): string | null {
  const credential = readCookie(request, SESSION_COOKIE);
  if (credential === null || credential.length === 0) return null;
  if (!SAFE_METHODS.has(request.method)) assertSameOrigin(request);
  return credential;
}

function cookieAttributes(request: FastifyRequest, maxAge: number): string {
  // Secure only over https: browsers drop a Secure cookie sent over plain http (other than localhost).
  return `Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${request.protocol === 'https' ? '; Secure' : ''}`;
}

export function setSession(request: FastifyRequest, reply: FastifyReply, sessionId: string, maxAgeSeconds: number): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=${encodeURIComponent(sessionId)}; ${cookieAttributes(request, maxAgeSeconds)}`);
}

export function clearSession(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttributes(request, 0)}`);
}
