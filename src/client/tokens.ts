/**
 * API tokens for the HTTP server and the CLI: random secrets shown once at
 * creation, kept only as SHA-256 hashes (src/store/tokens.ts). verify()
 * remembers good answers briefly so that a busy server does not read the
 * table on every request; a revoke through this client forgets at once,
 * one through another process takes at most `cacheMs` to apply.
 */
import * as crypto from 'node:crypto';
import { NotFoundError, TokenExpiryPastError, ValidationError } from '../core/errors.js';
import { uuidv7 } from '../core/ids.js';
import type { Store } from '../store/types.js';
import { TOKEN_ROLES, tokenStoreOf, type ApiTokenRecord, type TokenRole, type TokenStore } from '../store/tokens.js';
import { checkNoNul } from '../core/text.js';

export type { ApiTokenRecord, TokenRole };
export { TOKEN_ROLES };

/** Every secret starts with this: it tells a tasklease token from a JWT, and scanners can find leaked ones. */
export const TOKEN_PREFIX = 'tl_';
/** A dashboard session's id (its cookie): not an API token, so it is refused as a Bearer credential. */
export const SESSION_PREFIX = 'tls_';
/** How a session's row is named: `session <token id or "jwt">: <who logged in>` (revoking the token ends its sessions). */
const SESSION_NAME = /^session (\S+): (.*)$/s;

export interface SessionOwner {
  role: TokenRole;
  owner: string | null;
  /** Who logged in (a token's name, a JWT's subject). */
  name: string;
  /** The API token logged in with; null for a JWT. */
  tokenId: string | null;
  /** The session ends by then at the latest (the credential's own expiry). */
  expiresAt: Date;
}

export interface SessionRecord {
  record: ApiTokenRecord;
  /** Who logged in, as given to startSession. */
  name: string;
  /** The id of the API token logged in with, or `jwt`. */
  parent: string;
}

export interface CreateTokenOptions {
  name: string;
  role: TokenRole;
  /** Required for `user` tokens (the owner whose tasks they see); refused for the others. */
  owner?: string | null;
  /** Absolute expiry, or… */
  expiresAt?: Date | null;
  /** …a lifetime from now. Neither: never expires. */
  expiresInMs?: number;
}

export interface CreatedToken {
  /** The secret: shown once, never stored. */
  token: string;
  record: ApiTokenRecord;
}

const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export class TokenApi {
  private backing: Promise<TokenStore> | null = null;
  private readonly cache = new Map<string, { record: ApiTokenRecord; until: number }>();

  constructor(
    private readonly store: Store,
    private readonly cacheMs = 5000,
  ) {}

  async create(options: CreateTokenOptions): Promise<CreatedToken> {
    const { name, role } = options ?? ({} as CreateTokenOptions);
    if (typeof name !== 'string' || name.trim().length === 0 || name.length > 255)
      throw new ValidationError('token name must be a string of 1 to 255 characters', 'name');
    if (SESSION_NAME.test(name.trim())) throw new ValidationError('token names of the form "session <id>: <name>" are kept for dashboard sessions', 'name');
    if (!TOKEN_ROLES.includes(role)) throw new ValidationError(`token role must be one of ${TOKEN_ROLES.join(', ')}`, 'role');
    const owner = options.owner ?? null;
    if (role === 'user' && (typeof owner !== 'string' || owner.length === 0 || owner.length > 255))
      throw new ValidationError('a user token needs an owner (1 to 255 characters)', 'owner');
    if (role !== 'user' && owner !== null) throw new ValidationError(`a ${role} token sees every owner: give no owner`, 'owner');
    checkNoNul('name', name, 'token');
    checkNoNul('owner', owner, 'token');
    const token = `${TOKEN_PREFIX}${crypto.randomBytes(32).toString('base64url')}`;
    const record = await (
      await this.tokens()
    ).insertToken({
      token: { id: uuidv7(), name: name.trim(), role, owner, tokenHash: hashToken(token), expiresAt: expiryOf(options) },
    });
    return { token, record };
  }

  /** Every API token, and the dashboard sessions still live (an ended session is left out: one row per login piles up). */
  async list(): Promise<ApiTokenRecord[]> {
    const now = Date.now();
    return (await (await this.tokens()).listTokens()).filter((record) => !SESSION_NAME.test(record.name) || usable(record, now));
  }

  /** Revokes a token (or a session), and the dashboard sessions logged in with it. */
  async revoke(id: string): Promise<void> {
    const revoked = await this.revokeOne(id);
    if (!revoked) throw new NotFoundError('active token', id);
    for (const session of await this.list()) {
      if (session.revokedAt === null && SESSION_NAME.exec(session.name)?.[1] === id) await this.revokeOne(session.id);
    }
  }

  /**
   * A dashboard session: a row beside the API tokens (so every server behind a
   * balancer knows it, and a revoke or logout ends it at once), whose random
   * id is the cookie. The API token itself never leaves the login request.
   */
  async startSession(who: SessionOwner): Promise<{ sessionId: string; record: ApiTokenRecord }> {
    const sessionId = `${SESSION_PREFIX}${crypto.randomBytes(32).toString('base64url')}`;
    const name = `session ${who.tokenId ?? 'jwt'}: ${who.name}`.slice(0, 255);
    const record = await (
      await this.tokens()
    ).insertToken({ token: { id: uuidv7(), name, role: who.role, owner: who.owner, tokenHash: hashToken(sessionId), expiresAt: who.expiresAt } });
    return { sessionId, record };
  }

  /** The live session with this id, else null. */
  async verifySession(sessionId: string): Promise<SessionRecord | null> {
    if (typeof sessionId !== 'string' || !sessionId.startsWith(SESSION_PREFIX)) return null;
    const record = await this.lookUp(sessionId);
    const match = record ? SESSION_NAME.exec(record.name) : null;
    return record && match ? { record, parent: match[1]!, name: match[2]! } : null;
  }

  /** Logout: the session ends on every server (within cacheMs on the others). False when it was not live. */
  async endSession(sessionId: string): Promise<boolean> {
    const session = await this.verifySession(sessionId);
    return session ? this.revokeOne(session.record.id) : false;
  }

  /** The token's record when the secret is known, not revoked and not expired; else null. */
  async verify(secret: string): Promise<ApiTokenRecord | null> {
    if (typeof secret !== 'string' || !secret.startsWith(TOKEN_PREFIX)) return null;
    return this.lookUp(secret);
  }

  private async revokeOne(id: string): Promise<boolean> {
    const revoked = await (await this.tokens()).revokeToken({ id });
    for (const [hash, entry] of this.cache) if (entry.record.id === id) this.cache.delete(hash);
    return revoked;
  }

  private async lookUp(secret: string): Promise<ApiTokenRecord | null> {
    if (secret.length > 200) return null;
    const hash = hashToken(secret);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.until > now) return usable(cached.record, now) ? cached.record : null;
    const tokens = await this.tokens();
    const record = await tokens.findTokenByHash({ tokenHash: hash });
    if (!record || !usable(record, now)) return null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(hash, { record, until: now + this.cacheMs });
    if (record.lastUsedAt === null || now - record.lastUsedAt.getTime() > LAST_USED_WRITE_INTERVAL_MS) {
      // Bookkeeping only: a failed write must not fail the request it belongs to.
      tokens.markTokenUsed({ id: record.id }).catch(() => undefined);
      record.lastUsedAt = new Date(now);
    }
    return record;
  }

  private tokens(): Promise<TokenStore> {
    this.backing ??= tokenStoreOf(this.store);
    return this.backing;
  }
}

/** crypto.hash (Node 20.12+): one call, no Hash object; about 4× faster than createHash for a token, on every request. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export function hashToken(secret: string): string {
  return oneShotHash ? oneShotHash('sha256', secret, 'hex') : crypto.createHash('sha256').update(secret, 'utf8').digest('hex');
}

function usable(record: ApiTokenRecord, now: number): boolean {
  return record.revokedAt === null && (record.expiresAt === null || record.expiresAt.getTime() > now);
}

function expiryOf(options: CreateTokenOptions): Date | null {
  if (options.expiresAt !== undefined && options.expiresAt !== null && options.expiresInMs !== undefined)
    throw new ValidationError('give expiresAt or expiresInMs, not both', 'expiresAt');
  if (options.expiresInMs !== undefined) {
    if (!Number.isInteger(options.expiresInMs) || options.expiresInMs < 1) throw new ValidationError('expiresInMs must be a positive integer', 'expiresInMs');
    return new Date(Date.now() + options.expiresInMs);
  }
  const at = options.expiresAt ?? null;
  if (at !== null && (!(at instanceof Date) || Number.isNaN(at.getTime()))) throw new ValidationError('expiresAt must be a valid Date', 'expiresAt');
  if (at !== null && at.getTime() <= Date.now()) throw new TokenExpiryPastError(at);
  return at;
}
