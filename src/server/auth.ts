/**
 * Who is calling: an API token (`Authorization: Bearer tl_…`, checked against
 * its stored hash) or, when configured, a JWT verified with a shared secret or
 * a JWKS, its claims mapped to a role and an owner. Credentials anywhere else
 * (a query string, X-Api-Key, another scheme) are refused, not ignored.
 * Failed attempts are counted per client address (FailureLimiter); a valid
 * credential always passes.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AccessError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { TOKEN_PREFIX, type TokenApi } from '../client/tokens.js';
import { TOKEN_ROLES, type TokenRole } from '../store/tokens.js';
import type { JwtOptions } from './options.js';
import type { Actor } from '../client/actors.js';
import { replaceNul } from '../core/text.js';
import { ACTION_TEXT_LIMIT } from '../store/rules/actions.js';
import { sessionCredential } from './ui-session.js';

export interface Principal {
  role: TokenRole;
  /** Set for `user`: the only owner whose tasks it sees. */
  owner: string | null;
  /** Token name or JWT subject, for logs. */
  name: string;
  via: 'token' | 'jwt' | 'session';
  /** The API token's id (for a session: the session's row); null for a JWT. */
  tokenId: string | null;
  /** When the credential stops working; null when it never expires. */
  expiresAt: Date | null;
  /** The credential behind it, for per-caller limits: `token:<id>` (a session: its token's) or `jwt:<subject>`. */
  identity: string;
}

export function scopeOf(principal: Principal): Scope {
  return principal.role === 'user' ? Scope.owner(principal.owner!) : Scope.global();
}

/**
 * Who the caller is in a task's action history: its credential's stable
 * identity (`token:<id>`, `jwt:<subject>`) and, for a token, the name
 * operators recognize (`token:ops-laptop`). A subject longer than the
 * stores keep is cut, never refused: an action must not fail on its record.
 */
export function actorOf(principal: Principal): Actor {
  const fit = (text: string): string => replaceNul(text).slice(0, ACTION_TEXT_LIMIT);
  return { id: fit(principal.identity), name: principal.identity.startsWith('token:') ? fit(`token:${principal.name}`) : null };
}

/** An operator action's options from the caller: its scope and who it is. */
export function actingAs(principal: Principal): { scope: Scope; actor: Actor } {
  return { scope: scopeOf(principal), actor: actorOf(principal) };
}

const CREDENTIAL_ELSEWHERE = ['x-api-key', 'x-auth-token', 'api-key', 'x-tasklease-token'];

export class Authenticator {
  private readonly jwtKey: Uint8Array | JWTVerifyGetKey | null;

  constructor(
    private readonly tokens: TokenApi,
    private readonly jwt: JwtOptions | undefined,
  ) {
    if (!jwt) this.jwtKey = null;
    else if (jwt.secret !== undefined) this.jwtKey = new TextEncoder().encode(jwt.secret);
    else this.jwtKey = createRemoteJWKSet(new URL(jwt.jwksUrl!));
  }

  /** The caller, or an AccessError saying what was wrong (never which part of a token). */
  async authenticate(request: FastifyRequest): Promise<Principal> {
    const header = request.headers.authorization;
    // The dashboard's session cookie (ui-session.ts): checked for cross-site use before it counts.
    const session = header === undefined ? sessionCredential(request) : null;
    if (session !== null) return this.fromSession(session);
    if (header === undefined) {
      const elsewhere =
        CREDENTIAL_ELSEWHERE.find((name) => request.headers[name] !== undefined) ??
        (/[?&](access_token|token|api_key)=/.test(request.url) ? 'the query string' : undefined);
      if (elsewhere) throw new AccessError('UNAUTHENTICATED', `credentials in ${elsewhere} are not accepted: send Authorization: Bearer <token>`);
      throw new AccessError('UNAUTHENTICATED', 'this route needs Authorization: Bearer <token>');
    }
    const match = /^Bearer ([\x21-\x7e]{1,4096})$/i.exec(header);
    if (!match) throw new AccessError('UNAUTHENTICATED', 'the Authorization header must be "Bearer <token>"');
    return this.verifyCredential(match[1]!);
  }

  /** An API token or a JWT, however it came (header, or the dashboard's login and session). */
  async verifyCredential(credential: string): Promise<Principal> {
    if (credential.startsWith(TOKEN_PREFIX)) return this.fromToken(credential);
    if (this.jwtKey && credential.split('.').length === 3) return this.fromJwt(credential);
    throw new AccessError('UNAUTHENTICATED', 'unknown, expired or revoked token');
  }

  private async fromToken(secret: string): Promise<Principal> {
    const record = await this.tokens.verify(secret);
    if (!record) throw new AccessError('UNAUTHENTICATED', 'unknown, expired or revoked token');
    return {
      role: record.role,
      owner: record.owner,
      name: record.name,
      via: 'token',
      tokenId: record.id,
      expiresAt: record.expiresAt,
      identity: `token:${record.id}`,
    };
  }

  private async fromSession(sessionId: string): Promise<Principal> {
    const session = await this.tokens.verifySession(sessionId);
    if (!session) throw new AccessError('UNAUTHENTICATED', 'the session has ended: log in again');
    const { record, parent } = session;
    return {
      role: record.role,
      owner: record.owner,
      name: session.name,
      via: 'session',
      tokenId: record.id,
      expiresAt: record.expiresAt,
      identity: parent === 'jwt' ? `jwt:${session.name}` : `token:${parent}`,
    };
  }

  private async fromJwt(jwt: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      const options = { ...(this.jwt!.issuer ? { issuer: this.jwt!.issuer } : {}), ...(this.jwt!.audience ? { audience: this.jwt!.audience } : {}) };
      const key = this.jwtKey!;
      payload = (key instanceof Uint8Array ? await jwtVerify(jwt, key, options) : await jwtVerify(jwt, key, options)).payload;
    } catch {
      throw new AccessError('UNAUTHENTICATED', 'invalid or expired JWT');
    }
    const role = payload[this.jwt!.roleClaim ?? 'role'];
    const owner = payload[this.jwt!.ownerClaim ?? 'sub'];
    if (typeof role !== 'string' || !TOKEN_ROLES.includes(role as TokenRole))
      throw new AccessError('UNAUTHENTICATED', `the JWT has no valid role claim (${TOKEN_ROLES.join(', ')})`);
    if (role === 'user' && (typeof owner !== 'string' || owner.length === 0)) throw new AccessError('UNAUTHENTICATED', 'a user JWT needs an owner claim');
    return {
      role: role as TokenRole,
      owner: role === 'user' ? (owner as string) : null,
      name: String(payload.sub ?? 'jwt'),
      via: 'jwt',
      tokenId: null,
      expiresAt: typeof payload.exp === 'number' ? new Date(payload.exp * 1000) : null,
      identity: `jwt:${String(payload.sub ?? 'jwt')}`,
    };
  }
}

/**
 * Failed authentications per client address in a fixed window. Only failures
 * are throttled: a valid credential always passes, so nobody (a page on
 * another origin making an operator's browser send bad requests, or clients
 * sharing one proxy address) can lock a valid caller out. Over the limit, a
 * failure answers 429 instead of 401.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /**
   * Runs one authentication attempt for `address`: its success is returned
   * whatever the count; a wrong credential (UNAUTHENTICATED) is counted, or
   * answers RATE_LIMITED (with Retry-After) once the address is over the limit.
   * Anything else (a cross-site refusal, no credential at all) is not counted.
   */
  async attempt<T>(address: string, reply: FastifyReply, authenticate: () => Promise<T>, counts: () => boolean = () => true): Promise<T> {
    try {
      return await authenticate();
    } catch (error) {
      if (!(error instanceof AccessError) || error.code !== 'UNAUTHENTICATED' || !counts()) throw error;
      const blocked = this.blockedFor(address);
      if (blocked > 0) {
        reply.header('retry-after', String(blocked));
        throw new AccessError('RATE_LIMITED', `too many failed authentications from this address: retry in ${blocked} s`);
      }
      this.recordFailure(address);
      throw error;
    }
  }

  /** Seconds to wait when this address is over the limit, else 0. */
  blockedFor(address: string): number {
    const entry = this.windows.get(address);
    if (!entry) return 0;
    const now = Date.now();
    if (entry.resetAt <= now) {
      this.windows.delete(address);
      return 0;
    }
    return entry.count >= this.max ? Math.ceil((entry.resetAt - now) / 1000) : 0;
  }

  recordFailure(address: string): void {
    const now = Date.now();
    if (this.windows.size > 100_000) this.prune(now);
    const entry = this.windows.get(address);
    if (!entry || entry.resetAt <= now) this.windows.set(address, { count: 1, resetAt: now + this.windowMs });
    else entry.count += 1;
  }

  private prune(now: number): void {
    for (const [address, entry] of this.windows) if (entry.resetAt <= now) this.windows.delete(address);
  }
}
