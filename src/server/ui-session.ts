/**
 * The dashboard's session: after a login (POST /api/v1/session) the browser
 * holds the API token (or JWT) it logged in with in an HttpOnly,
 * SameSite=Strict cookie, and the server verifies it on every request exactly
 * like a Bearer header (client.tokens.verify, with its 5 s cache). Why the
 * token itself and not a session id: no session table and no signing key to
 * share between servers, a revoke ends the session at once, and page scripts
 * never see the token (HttpOnly).
 *
 * Cross-site requests: SameSite=Strict keeps the cookie off them, and a
 * state-changing request that arrives with the cookie must also come from
 * this origin (Sec-Fetch-Site, else Origin), or it is refused with 403.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccessError } from '../core/errors.js';

export const SESSION_COOKIE = 'tasklease_session';
/** The browser forgets the session after this; the token may live longer. */
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
 * Refuses a request a browser sent from another site. A request with neither
 * header did not come from a browser page, so it carries no ambient cookie
 * the attacker could borrow.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  const fetchSite = request.headers['sec-fetch-site'];
  if (typeof fetchSite === 'string' && fetchSite !== 'same-origin' && fetchSite !== 'none') {
    throw new AccessError('FORBIDDEN', `cross-site request refused (Sec-Fetch-Site: ${fetchSite})`);
  }
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== `${request.protocol}://${request.host}`) {
    throw new AccessError('FORBIDDEN', `cross-site request refused (Origin ${origin} is not this server)`);
  }
}

/** The session cookie's credential, or null without one; a state-changing request must be same-origin. */
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

export function setSession(request: FastifyRequest, reply: FastifyReply, credential: string): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=${encodeURIComponent(credential)}; ${cookieAttributes(request, SESSION_MAX_AGE_SECONDS)}`);
}

export function clearSession(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; ${cookieAttributes(request, 0)}`);
}
