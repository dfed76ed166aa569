/**
 * API tokens (issue 13): who may call the HTTP API, with which role. The
 * secret itself is never stored: only its SHA-256, so a leaked table grants
 * nothing. Each dialect implements TokenStore in its own tokens.ts over the
 * table system_async_task_api_token (the last migration of each dialect);
 * tokenStoreOf() picks the one for a store, loading only that dialect.
 */
import { sideStoreOf } from './side-store.js';
import type { Store } from './types.js';

export const TOKEN_ROLES = ['admin', 'operator', 'user'] as const;
/** admin: everything; operator: operations and reads, no token management; user: its own tasks only. */
export type TokenRole = (typeof TOKEN_ROLES)[number];

export interface ApiTokenRecord {
  id: string;
  name: string;
  role: TokenRole;
  /** The owner a `user` token is bound to (null for admin and operator tokens). */
  owner: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

export interface NewApiToken {
  id: string;
  name: string;
  role: TokenRole;
  owner: string | null;
  /** Hex SHA-256 of the secret. */
  tokenHash: string;
  expiresAt: Date | null;
}

export interface TokenStore {
  insertToken(params: { token: NewApiToken }): Promise<ApiTokenRecord>;
  /** The token with this hash, revoked or expired ones included (the caller judges). */
  findTokenByHash(params: { tokenHash: string }): Promise<ApiTokenRecord | null>;
  /** Newest first. */
  listTokens(): Promise<ApiTokenRecord[]>;
  /** Sets revoked_at once; false when the id is unknown or already revoked. */
  revokeToken(params: { id: string }): Promise<boolean>;
  markTokenUsed(params: { id: string }): Promise<void>;
}

/** The TokenStore working on the same database (and connections) as `store`. */
export function tokenStoreOf(store: Store): Promise<TokenStore> {
  return sideStoreOf<TokenStore>(store, {
    sqlite: async (sqlite) => new (await import('./sqlite/tokens.js')).SqliteTokenStore(sqlite),
    postgres: async (postgres) => new (await import('./postgres/tokens.js')).PostgresTokenStore(postgres),
    mysql: async (mysql) => new (await import('./mysql/tokens.js')).MysqlTokenStore(mysql),
  });
}

/** Rows of every dialect, once their times are Dates. */
export function tokenFromRow(row: Record<string, unknown>, time: (value: unknown) => Date): ApiTokenRecord {
  const optionalTime = (value: unknown): Date | null => (value === null || value === undefined ? null : time(value));
  return {
    id: String(row.id),
    name: String(row.name),
    role: row.role as TokenRole,
    owner: row.owner === null ? null : String(row.owner),
    createdAt: time(row.created_at),
    expiresAt: optionalTime(row.expires_at),
    revokedAt: optionalTime(row.revoked_at),
    lastUsedAt: optionalTime(row.last_used_at),
  };
}

export const TOKEN_COLUMNS = 'id, name, role, owner, created_at, expires_at, revoked_at, last_used_at';
