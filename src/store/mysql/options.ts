/**
 * MysqlStore options, validated at construction: a bad value fails at once
 * with a message naming the field.
 */
import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import type { Pool } from 'mysql2/promise';
import { InvalidOptionsError } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, checkString, describe } from '../../core/validate.js';
import { checkLeasePoolSize, checkOwnLeasePool, MIN_LEASE_POOL_SIZE } from '../lease-pool.js';

export interface MysqlStoreOptions {
  /** mysql://user:password@host:port/database (mariadb:// is accepted too). Either this or `pool`. */
  uri?: string;
  /**
   * A mysql2 promise pool you own; the store never ends it. Either this or `uri`.
   * Created with `multipleStatements: true`, claims and outcome writes take two
   * round trips each (as with `uri`); without it, one per statement (slower, as correct).
   */
  pool?: Pool;
  /** The database holding the tables; default: the one named in `uri` (or the pool's). */
  database?: string;
  /** Connections in the pool the store creates from `uri`. Default 10. */
  poolSize?: number;
  /**
   * Connections of the store's lease pool: a small pool of its own (opened
   * from `uri`, or with the host, port, user, password, database, socketPath
   * and ssl of `pool`) that runs only a worker's lease and outcome statements
   * (heartbeats, lease checks, progress, outcome writes, hand-backs), so
   * handlers holding the main pool's connections never starve a heartbeat.
   * Opened on first use. At least 2: one for heartbeats, one for outcome
   * writes. Default 2.
   */
  leasePoolSize?: number;
  /**
   * Your own mysql2 promise pool for the lease statements instead of the one
   * the store opens (a special authentication, say): used by nothing else,
   * connectionLimit ≥ 2, created with `flags: ['FOUND_ROWS']` as `pool` must
   * be. The store never ends it.
   */
  leasePool?: Pool;
  /**
   * Milliseconds to wait for a connection's handshake (pool from `uri`); past it
   * a call fails with StoreConnectTimeoutError (STORE_CONNECT_TIMEOUT) naming
   * the host. Default 10000.
   */
  connectTimeoutMs?: number;
  /**
   * Server-side limit of each of the store's statements on the pool it creates
   * (MariaDB max_statement_time; MySQL 8 max_execution_time, SELECTs only):
   * past it the statement fails with STORE_STATEMENT_TIMEOUT. 0: none. Default 30000.
   */
  statementTimeoutMs?: number;
  /**
   * How often (ms) a store with idle workers reads the wake-up counters that
   * every submit bumps, so that workers in other processes see a new task
   * within about this long (MySQL has no LISTEN/NOTIFY). One primary-key read
   * per period per process while workers run. 0: off (other processes then
   * see new tasks at their next poll, pollIntervalMs). Default 10.
   */
  wakeupPollMs?: number;
}

const COMPONENT = 'MysqlStore';
const KNOWN = ['uri', 'pool', 'database', 'poolSize', 'leasePoolSize', 'leasePool', 'connectTimeoutMs', 'statementTimeoutMs', 'wakeupPollMs'] as const;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
export const DEFAULT_WAKEUP_POLL_MS = 10;

export interface ResolvedMysqlOptions {
  pool: Pool;
  ownsPool: boolean;
  /** The worker's own lease and outcome statements run here. */
  leasePool: Pool;
  ownsLeasePool: boolean;
  database: string | null;
  /** Identifies the database for in-process wake-ups shared between stores; also names it in messages (no credentials). */
  identity: string;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  wakeupPollMs: number;
}

export function resolveMysqlOptions(input: MysqlStoreOptions): ResolvedMysqlOptions {
  if (typeof input !== 'object' || input === null) throw new InvalidOptionsError(COMPONENT, 'options', `must be an object, got ${describe(input)}`);
  checkKnownKeys(COMPONENT, input, KNOWN);
  if (input.database !== undefined) {
    checkString(COMPONENT, 'database', input.database, { minLength: 1, maxLength: 64 });
    if (input.database.includes('\u0000')) throw new InvalidOptionsError(COMPONENT, 'database', 'must not contain NUL characters');
  }
  if (input.uri !== undefined && input.pool !== undefined) throw new InvalidOptionsError(COMPONENT, 'pool', 'cannot be given together with uri');
  const timeouts = {
    connectTimeoutMs: input.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: input.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
    wakeupPollMs: input.wakeupPollMs ?? DEFAULT_WAKEUP_POLL_MS,
  };
  checkInteger(COMPONENT, 'connectTimeoutMs', timeouts.connectTimeoutMs, { min: 1, max: 600_000 });
  checkInteger(COMPONENT, 'statementTimeoutMs', timeouts.statementTimeoutMs, { min: 0, max: 86_400_000 });
  checkInteger(COMPONENT, 'wakeupPollMs', timeouts.wakeupPollMs, { min: 0, max: 60_000 });
  if (input.leasePool === undefined) checkLeasePoolSize(COMPONENT, input.leasePoolSize ?? MIN_LEASE_POOL_SIZE);
  const lease: LeasePoolFor = (endpoint) => leasePoolFor(input, endpoint, timeouts.connectTimeoutMs);
  if (input.pool !== undefined) return { ...fromPool(input, lease), ...timeouts };
  if (input.uri === undefined) throw new InvalidOptionsError(COMPONENT, 'uri', 'is required (or pass a mysql2 pool as "pool")');
  return { ...fromUri(input.uri, input, lease, timeouts.connectTimeoutMs), ...timeouts };
}

type PoolPart = Omit<ResolvedMysqlOptions, 'connectTimeoutMs' | 'statementTimeoutMs' | 'wakeupPollMs'>;
type LeasePoolFor = (endpoint: Endpoint) => Pick<ResolvedMysqlOptions, 'leasePool' | 'ownsLeasePool'>;

/** Yours (`leasePool`), or one the store opens where the main pool connects. */
function leasePoolFor(input: MysqlStoreOptions, endpoint: Endpoint, connectTimeoutMs: number): Pick<ResolvedMysqlOptions, 'leasePool' | 'ownsLeasePool'> {
  const own = input.leasePool as unknown;
  if (own === undefined) return { leasePool: createPool(endpoint, input.leasePoolSize ?? MIN_LEASE_POOL_SIZE, connectTimeoutMs), ownsLeasePool: true };
  if (input.leasePoolSize !== undefined)
    throw new InvalidOptionsError(COMPONENT, 'leasePoolSize', 'applies only to the lease pool the store opens, not to `leasePool`');
  if (typeof own !== 'object' || own === null || typeof (own as Pool).getConnection !== 'function') {
    throw new InvalidOptionsError(COMPONENT, 'leasePool', 'must be a mysql2/promise Pool (it has no getConnection())');
  }
  const limit = (own as { pool?: { config?: { connectionLimit?: number } } }).pool?.config?.connectionLimit ?? 10;
  checkOwnLeasePool(COMPONENT, own, input.pool, limit, 'connectionLimit');
  return { leasePool: own as Pool, ownsLeasePool: false };
}

/** Where a pool connects: what the store's own pools are opened with. */
interface Endpoint {
  host?: string;
  port?: number;
  user?: string;
  password?: string;
  database?: string;
  socketPath?: string;
  ssl?: unknown;
}

function fromPool(input: MysqlStoreOptions, lease: LeasePoolFor): PoolPart {
  const pool = input.pool as unknown;
  if (typeof pool !== 'object' || pool === null || typeof (pool as Pool).getConnection !== 'function') {
    throw new InvalidOptionsError(COMPONENT, 'pool', 'must be a mysql2/promise Pool (it has no getConnection())');
  }
  if (input.poolSize !== undefined) throw new InvalidOptionsError(COMPONENT, 'poolSize', 'only applies to a pool the store creates from uri');
  const config = (pool as { pool?: { config?: { connectionConfig?: Endpoint } } }).pool?.config?.connectionConfig ?? {};
  const database = input.database ?? config.database ?? null;
  const { host, port, user, password, socketPath, ssl } = config;
  const endpoint: Endpoint = { host, port, user, password, socketPath, ssl: ssl || undefined, ...(database ? { database } : {}) };
  return { pool: pool as Pool, ownsPool: false, ...lease(endpoint), database, identity: identityOf(config.host, config.port, database) };
}

function fromUri(uri: unknown, input: MysqlStoreOptions, lease: LeasePoolFor, connectTimeoutMs: number): PoolPart {
  checkString(COMPONENT, 'uri', uri, { minLength: 1 });
  let url: URL;
  try {
    url = new URL((uri as string).replace(/^mariadb:/, 'mysql:'));
  } catch {
    throw new InvalidOptionsError(COMPONENT, 'uri', 'is not a valid URL (expected mysql://user:password@host:port/database)');
  }
  if (url.protocol !== 'mysql:') throw new InvalidOptionsError(COMPONENT, 'uri', `must start with mysql:// or mariadb://, got ${url.protocol}//`);
  const poolSize = input.poolSize ?? 10;
  checkInteger(COMPONENT, 'poolSize', poolSize, { min: 1, max: 1000 });
  const fromPath = decodeURIComponent(url.pathname.replace(/^\//, ''));
  const database = input.database ?? (fromPath === '' ? null : fromPath);
  const endpoint: Endpoint = {
    host: decodeURIComponent(url.hostname) || '127.0.0.1',
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || 'root',
    password: decodeURIComponent(url.password),
    ...(database ? { database } : {}),
  };
  const pool = createPool(endpoint, poolSize, connectTimeoutMs);
  return { pool, ownsPool: true, ...lease(endpoint), database, identity: identityOf(url.hostname, url.port ? Number(url.port) : 3306, database) };
}

/** A pool with the session settings every statement of the store assumes. */
function createPool(endpoint: Endpoint, connectionLimit: number, connectTimeoutMs: number): Pool {
  const defined = Object.fromEntries(Object.entries(endpoint).filter(([, value]) => value !== undefined));
  return mysql.createPool({
    ...defined,
    connectionLimit,
    dateStrings: true,
    timezone: 'Z',
    supportBigNumbers: true,
    charset: 'utf8mb4',
    // Affected rows count matched rows, not changed ones: the fencing checks rely on it.
    flags: ['FOUND_ROWS'],
    // The hot paths send a transaction's statements in one or two round trips (MysqlDatabase.batch). Values are
    // still escaped by mysql2 and only this codebase's own identifiers are written into SQL text.
    multipleStatements: true,
    connectTimeout: connectTimeoutMs,
    // Dead peers are found by TCP keepalive probes after this much silence.
    enableKeepAlive: true,
    keepAliveInitialDelay: 10_000,
  });
}

function identityOf(host: string | undefined, port: number | undefined, database: string | null): string {
  return `${host ?? 'localhost'}:${port ?? 3306}/${database ?? ''}`;
}

/** A GET_LOCK name (MySQL caps them at 64 characters) unique to the database. */
export function lockName(purpose: string, database: string): string {
  const plain = `tasklease.${purpose}.${database}`;
  if (plain.length <= 64) return plain;
  return `tasklease.${purpose}.${createHash('sha1').update(database).digest('hex')}`;
}
