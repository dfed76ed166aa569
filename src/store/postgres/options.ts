/**
 * PostgresStore options, validated at the edge: a bad value fails at
 * construction with an InvalidOptionsError naming the field.
 */
import pg from 'pg';
import { InvalidOptionsError } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, checkString } from '../../core/validate.js';
import { checkLeasePoolSize, checkOwnLeasePool, MIN_LEASE_POOL_SIZE } from '../lease-pool.js';

export interface PostgresStoreOptions {
  /**
   * `postgres://user:pass@host:port/db`. Give this or `pool`, not both. With
   * neither, `pg` reads the PG* environment variables (PGHOST, PGDATABASE, …).
   */
  connectionString?: string;
  /**
   * Your own pool. The store runs only short statements on it and never holds
   * one of its clients while waiting for another, so a pool of 1 cannot
   * deadlock the store. Handlers may share it: the worker's heartbeats and
   * outcome writes never use it (see leasePoolSize). The store never ends a
   * pool it did not create.
   */
  pool?: pg.Pool;
  /**
   * Connections of the store's lease pool: a small pool of its own, opened
   * with the same settings as the main pool (or as `pool`), that runs only a
   * worker's lease and outcome statements (heartbeats, lease checks,
   * progress, outcome writes, hand-backs), so handlers that hold clients of
   * the main pool can never starve a heartbeat. Opened on first use (a
   * producer-only store opens none). At least 2: one for heartbeats, one for
   * outcome writes. Default 2.
   */
  leasePoolSize?: number;
  /**
   * Your own pool for the lease statements instead of the one the store
   * opens (a special authentication, a pooler): used by nothing else, max ≥ 2.
   * The store never ends it.
   */
  leasePool?: pg.Pool;
  /** Schema holding the tables; created by migrate(). Default 'tasklease'. */
  schema?: string;
  /** Size of the pool the store creates (not with `pool`). Minimum 1, default 10. */
  poolSize?: number;
  /**
   * Prefix of the application_name our connections show in pg_stat_activity:
   * `<prefix>:pool:<schema>` and `<prefix>:listen:<schema>`, so operators can
   * tell which process holds what. Default 'tasklease'.
   */
  applicationName?: string;
  /**
   * Milliseconds to wait for a connection to be established (TCP, TLS and
   * startup), for the pool the store creates and its LISTEN connection; past
   * it a call fails with StoreConnectTimeoutError (STORE_CONNECT_TIMEOUT)
   * naming the host. Default 10000.
   */
  connectTimeoutMs?: number;
  /**
   * statement_timeout of the store's own connections: a statement running
   * longer is cancelled by the server (STORE_STATEMENT_TIMEOUT). 0: none.
   * Default 30000. Not applied to a `pool` you pass (set it on that pool).
   * Never sent in the startup packet (poolers refuse it): a `SET` once per
   * new connection, or with `pooler: 'transaction'` a `SET LOCAL` in each
   * statement's own transaction.
   */
  statementTimeoutMs?: number;
  /**
   * The connection pooler between the store and PostgreSQL, if it pools by
   * transaction (PgBouncer `pool_mode = transaction`): `'transaction'` makes
   * the store keep no state on a server connection between transactions —
   * unnamed statements, the statement timeout per transaction, migrations
   * locked inside their one transaction. Wake-ups then need
   * `listenConnectionString` (LISTEN cannot work through such a pooler) or
   * `pollOnly`. `'session'` (direct connections or session pooling) is the
   * default. See docs/production.md.
   */
  pooler?: 'session' | 'transaction';
  /**
   * Where the LISTEN connection goes, when it must not go where the pools do:
   * a direct or session-pooled address of the same database, for a store
   * behind a transaction pooler. Default: the pools' own address.
   */
  listenConnectionString?: string;
  /**
   * No LISTEN connection at all: workers find new tasks by polling (their
   * pollIntervalMs) and waitFor re-reads on its own timer. Default false.
   */
  pollOnly?: boolean;
  /**
   * Partitioned history (docs/tuning.md, "History at scale"): the retention
   * cleanup moves terminal tasks finished more than this many milliseconds
   * ago into system_async_task_history (and attempts, failures, actions into
   * theirs), partitioned by finish day, and retention drops whole days
   * instead of deleting rows. Reads (get, list, attempts, failures, actions,
   * diagnose) cover both; status changes and the seed's SQL see the task table
   * only, as after a purge. Unset (default): cleanup deletes rows in batches.
   * 0 or more; a few hours (e.g. 3 600 000 × 6) keeps recent work in the task
   * table for the seed's queries.
   */
  historyMoveAfterMs?: number;
  /** Not supported: PostgreSQL judges every time by the database clock (now()). */
  clock?: never;
}

export interface ResolvedPostgresOptions {
  schema: string;
  pool: pg.Pool;
  ownsPool: boolean;
  /** The worker's own lease and outcome statements run here. */
  leasePool: pg.Pool;
  ownsLeasePool: boolean;
  /** What the dedicated LISTEN connection connects with. */
  clientConfig: pg.ClientConfig;
  /** The server as host:port/database, for messages (never a password). */
  serverLabel: string;
  connectTimeoutMs: number;
  pooler: 'session' | 'transaction';
  /** The statement timeout of the pools the store opens (0: none); never applied to a `pool` of yours. */
  statementTimeoutMs: number;
  pollOnly: boolean;
  /** null: no partitioned history (option historyMoveAfterMs). */
  historyMoveAfterMs: number | null;
}

const COMPONENT = 'PostgresStore';
const KNOWN = [
  'connectionString',
  'pool',
  'schema',
  'poolSize',
  'leasePoolSize',
  'leasePool',
  'applicationName',
  'connectTimeoutMs',
  'statementTimeoutMs',
  'pooler',
  'listenConnectionString',
  'pollOnly',
  'historyMoveAfterMs',
  'clock',
] as const;
export const POOLER_MODES = ['session', 'transaction'] as const;
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/i;
export const DEFAULT_SCHEMA = 'tasklease';
export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
/** Dead peers are found by TCP keepalive probes after this much silence. */
const KEEPALIVE_DELAY_MS = 10_000;

export function resolvePostgresOptions(input: PostgresStoreOptions | undefined): ResolvedPostgresOptions {
  const options = input ?? {};
  if (typeof options !== 'object' || options === null) throw new InvalidOptionsError(COMPONENT, 'options', 'must be an object');
  checkKnownKeys(COMPONENT, options, KNOWN);
  if (options.clock !== undefined) {
    throw new InvalidOptionsError(COMPONENT, 'clock', 'is not supported: PostgreSQL judges time by the database clock (now())');
  }
  const schema = options.schema ?? DEFAULT_SCHEMA;
  checkSchemaName(schema);
  if (options.connectionString !== undefined) checkString(COMPONENT, 'connectionString', options.connectionString, { minLength: 1 });
  const prefix = options.applicationName ?? 'tasklease';
  checkString(COMPONENT, 'applicationName', prefix, { minLength: 1, maxLength: 40 });
  if (!/^[\x20-\x7e]+$/.test(prefix)) throw new InvalidOptionsError(COMPONENT, 'applicationName', 'must be printable ASCII');
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  checkInteger(COMPONENT, 'connectTimeoutMs', connectTimeoutMs, { min: 1, max: 600_000 });
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  checkInteger(COMPONENT, 'statementTimeoutMs', statementTimeoutMs, { min: 0, max: 86_400_000 });
  const pooler = options.pooler ?? 'session';
  if (!(POOLER_MODES as readonly unknown[]).includes(pooler))
    throw new InvalidOptionsError(COMPONENT, 'pooler', `must be 'session' or 'transaction', got ${JSON.stringify(pooler)}`);
  const pollOnly = options.pollOnly ?? false;
  if (typeof pollOnly !== 'boolean') throw new InvalidOptionsError(COMPONENT, 'pollOnly', 'must be true or false');
  if (options.listenConnectionString !== undefined) {
    checkString(COMPONENT, 'listenConnectionString', options.listenConnectionString, { minLength: 1 });
    if (pollOnly) throw new InvalidOptionsError(COMPONENT, 'listenConnectionString', 'cannot be given with pollOnly: true (nothing listens)');
  }
  // Nothing but user, database and application_name in the startup packet: poolers refuse other parameters
  // (PgBouncer: 08P01 unsupported startup parameter). The statement timeout is applied by the store (connection.ts).
  const listenerTimeouts = { connectionTimeoutMillis: connectTimeoutMs, keepAlive: true, keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS };
  const timeouts: pg.PoolConfig = { ...listenerTimeouts };
  const historyMoveAfterMs = options.historyMoveAfterMs ?? null;
  if (historyMoveAfterMs !== null) checkInteger(COMPONENT, 'historyMoveAfterMs', historyMoveAfterMs, { min: 0, max: 3_650 * 86_400_000 });
  const shared = { pooler, pollOnly, connectTimeoutMs, historyMoveAfterMs };
  // Direct or session-pooled: one SET per new connection (the session is ours). Behind a transaction
  // pooler the store limits each transaction instead (connection.ts, limitEachTransaction).
  if (pooler === 'session' && statementTimeoutMs > 0) Object.assign(timeouts, { Client: clientLimitedTo(statementTimeoutMs) });
  const leasePool = (base: pg.PoolConfig): { leasePool: pg.Pool; ownsLeasePool: boolean } => {
    if (options.leasePool !== undefined) return { leasePool: ownLeasePool(options), ownsLeasePool: false };
    const max = options.leasePoolSize ?? MIN_LEASE_POOL_SIZE;
    checkLeasePoolSize(COMPONENT, max);
    // A Client class of your pool's (pg-native, a wrapper) is kept: the lease pool then runs without the store's SET.
    const own = base.Client !== undefined ? { Client: base.Client } : {};
    const pool = new pg.Pool({ ...base, ...timeouts, ...own, max, application_name: applicationName('lease', schema, prefix) });
    return { leasePool: pool, ownsLeasePool: true };
  };
  const listenBase = (base: pg.ClientConfig): pg.ClientConfig =>
    options.listenConnectionString !== undefined ? { connectionString: options.listenConnectionString } : base;
  if (options.pool !== undefined) {
    if (options.connectionString !== undefined) throw new InvalidOptionsError(COMPONENT, 'pool', 'cannot be given together with connectionString');
    if (options.poolSize !== undefined) throw new InvalidOptionsError(COMPONENT, 'poolSize', 'applies only to the pool the store creates, not to `pool`');
    if (typeof options.pool !== 'object' || options.pool === null || typeof options.pool.connect !== 'function') {
      throw new InvalidOptionsError(COMPONENT, 'pool', 'must be a pg.Pool');
    }
    const poolOptions = (options.pool as pg.Pool & { options?: pg.PoolConfig }).options ?? {};
    const clientConfig = { ...listenerTimeouts, ...listenerConfig(listenBase(poolOptions), schema, prefix) };
    return {
      schema,
      pool: options.pool,
      ownsPool: false,
      ...leasePool(poolOptions),
      clientConfig,
      serverLabel: serverLabel(poolOptions),
      ...shared,
      statementTimeoutMs,
    };
  }
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  checkInteger(COMPONENT, 'poolSize', poolSize, { min: 1, max: 1000 });
  const base: pg.ClientConfig = options.connectionString !== undefined ? { connectionString: options.connectionString } : {};
  const pool = new pg.Pool({ ...base, ...timeouts, max: poolSize, application_name: applicationName('pool', schema, prefix) });
  const clientConfig = { ...listenerTimeouts, ...listenerConfig(listenBase(base), schema, prefix) };
  return { schema, pool, ownsPool: true, ...leasePool(base), clientConfig, serverLabel: serverLabel(base), ...shared, statementTimeoutMs };
}

function ownLeasePool(options: PostgresStoreOptions): pg.Pool {
  const pool = options.leasePool as unknown;
  if (options.leasePoolSize !== undefined)
    throw new InvalidOptionsError(COMPONENT, 'leasePoolSize', 'applies only to the lease pool the store opens, not to `leasePool`');
  if (typeof pool !== 'object' || pool === null || typeof (pool as pg.Pool).connect !== 'function')
    throw new InvalidOptionsError(COMPONENT, 'leasePool', 'must be a pg.Pool');
  checkOwnLeasePool(COMPONENT, pool, options.pool, (pool as pg.Pool).options?.max ?? 10, 'max');
  return pool as pg.Pool;
}

export function checkSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new InvalidOptionsError(
      COMPONENT,
      'schema',
      `must match ${String(SCHEMA_NAME)} (letters, digits, underscore; at most 63), got ${JSON.stringify(schema)}`,
    );
  }
}

/**
 * A double-quoted identifier. Only names that passed checkSchemaName (or our
 * own constants) reach SQL text; quoting keeps mixed case and reserved words
 * (a schema called "user") working.
 */
export function quoteIdent(name: string): string {
  if (name.includes('\u0000')) throw new InvalidOptionsError(COMPONENT, 'schema', 'must not contain NUL');
  return `"${name.replace(/"/g, '""')}"`;
}

function listenerConfig(base: pg.ClientConfig, schema: string, prefix: string): pg.ClientConfig {
  // Copy the connection fields only: pool-only options mean nothing to a Client.
  const { connectionString, host, port, user, password, database, ssl, keepAlive } = base;
  const config: pg.ClientConfig = { connectionString, host, port, user, password, database, ssl, keepAlive };
  for (const key of Object.keys(config) as (keyof pg.ClientConfig)[]) if (config[key] === undefined) delete config[key];
  return { ...config, application_name: applicationName('listen', schema, prefix) };
}

/** host:port/database of a connection config (or of the PG* environment pg falls back to); no user, no password. */
function serverLabel(config: pg.ClientConfig): string {
  let host = config.host ?? process.env.PGHOST ?? 'localhost';
  let port = String(config.port ?? process.env.PGPORT ?? 5432);
  let database = config.database ?? process.env.PGDATABASE ?? '';
  if (config.connectionString) {
    try {
      const url = new URL(config.connectionString);
      host = decodeURIComponent(url.hostname) || host;
      port = url.port || port;
      database = decodeURIComponent(url.pathname.replace(/^\//, '')) || database;
    } catch {
      // not a URL (a key=value string): the defaults above
    }
  }
  return `${host}:${port}/${database}`;
}

/** Shows up in pg_stat_activity, so operators (and tests) can tell our connections apart. */
export function applicationName(role: 'pool' | 'lease' | 'listen', schema: string, prefix = 'tasklease'): string {
  return `${prefix}:${role}:${schema}`.slice(0, 63);
}

/**
 * The Client class of a pool the store opens on direct or session-pooled
 * connections: its connect() ends with one `SET statement_timeout`, so the
 * limit is in place before the pool hands the connection out.
 */
export function clientLimitedTo(timeoutMs: number): typeof pg.Client {
  return class LimitedClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: (error: Error | null) => void): void;
    override connect(callback?: (error: Error | null) => void): Promise<pg.Client> | void {
      const done = super.connect().then(async () => {
        // A pooler may accept the login at once and hold the first query until it has a server
        // connection: a connection lost meanwhile rejects the SET (the pool has no listener yet).
        const lost = (): void => undefined;
        this.on('error', lost);
        try {
          await this.query(`SET statement_timeout = ${Math.trunc(timeoutMs)}`);
        } finally {
          this.off('error', lost);
        }
        return this as pg.Client;
      });
      // pg-pool connects with a callback.
      if (!callback) return done;
      done.then(
        () => callback(null),
        (error: Error) => callback(error),
      );
    }
  };
}
