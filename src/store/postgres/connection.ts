/**
 * What every PostgreSQL module shares: the pool, the quoted schema and table
 * names, the NOTIFY channel, and one way to run a statement that maps driver
 * errors (errors.ts). Statements on the hot path are named, so each pooled
 * connection parses and plans them once — except behind a transaction pooler
 * (option pooler: 'transaction'), where a named statement lives on a server
 * connection the next transaction may not get (26000 / 42P05): there every
 * statement is unnamed (statementName).
 *
 * The statement timeout never travels in the startup packet (poolers refuse
 * it: errors.ts). On direct or session-pooled connections it is one `SET`
 * when a connection opens (the session is ours: PgBouncer resets it when we
 * disconnect; options.ts, clientLimitedTo). Behind a transaction pooler
 * nothing may outlive a transaction, so a statement on the store's own pool
 * runs in a transaction of its own that starts with
 * `SET LOCAL statement_timeout` (limitEachTransaction).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { PoolStats } from '../pool-stats.js';
import type { OnSent } from '../types.js';
import { TimeTextCache } from '../time-cache.js';
import { mapPgError, spoilsConnection } from './errors.js';
import { quoteIdent } from './options.js';

/** Anything that runs a query: the pool, a pooled client, or a caller's client inside BEGIN. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

export interface PgContext {
  readonly pool: pg.Pool;
  /**
   * The worker's heartbeats, lease checks, progress and outcome writes: a
   * pool no handler can take a client from (DESIGN §3), so that handlers
   * holding the main pool's clients never delay a renewal.
   */
  readonly leasePool: pg.Pool;
  /** The schema name as given (validated). */
  readonly schemaName: string;
  /** The schema as a quoted identifier. */
  readonly schema: string;
  readonly tables: {
    task: string;
    attempt: string;
    failure: string;
    deadLetter: string;
    policy: string;
    worker: string;
    awaited: string;
    action: string;
    dependency: string;
    sequence: string;
    step: string;
    log: string;
    rateStart: string;
    migrations: string;
  };
  /** One LISTEN/NOTIFY channel per schema; payloads are JSON (see listener.ts). */
  readonly channel: string;
  /** Prefix of prepared-statement names: unique per schema, so two stores can share a pool. */
  readonly statementPrefix: string;
  /** SQL text built once per store (see sql()). */
  readonly sqlCache: Map<string, string>;
  /** False behind a transaction pooler: every statement unnamed (see above). */
  readonly namedStatements: boolean;
}

/** The name of a hot-path statement (parsed and planned once per connection), or none behind a transaction pooler. */
export function statementName(ctx: PgContext, key: string): string | undefined {
  return ctx.namedStatements ? `${ctx.statementPrefix}${key}` : undefined;
}

/** The store's own pools behind a transaction pooler, with their statement timeout (ms): run() wraps their statements. */
const perTransactionTimeouts = new WeakMap<pg.Pool, number>();

/** Behind a transaction pooler: run() sends each statement to `pool` in a transaction limited to `timeoutMs`. */
export function limitEachTransaction(pool: pg.Pool, timeoutMs: number): void {
  if (timeoutMs > 0) perTransactionTimeouts.set(pool, timeoutMs);
}

/** `BEGIN` for a transaction on a client of `pool`, with the statement timeout behind a transaction pooler. */
export function beginOn(pool: pg.Pool): string {
  const timeoutMs = perTransactionTimeouts.get(pool);
  return timeoutMs === undefined ? 'BEGIN' : `BEGIN; SET LOCAL statement_timeout = ${Math.trunc(timeoutMs)}`;
}

/** Builds a statement's text once per store: the hot path should not rebuild long strings on every call. */
export function sql(ctx: PgContext, key: string, build: (ctx: PgContext) => string): string {
  let text = ctx.sqlCache.get(key);
  if (text === undefined) {
    text = build(ctx);
    ctx.sqlCache.set(key, text);
  }
  return text;
}

export function createContext(pool: pg.Pool, leasePool: pg.Pool, schemaName: string, transactionPooler = false): PgContext {
  const schema = quoteIdent(schemaName);
  const digest = createHash('sha256').update(schemaName).digest('hex').slice(0, 12);
  return {
    pool,
    leasePool,
    schemaName,
    schema,
    tables: {
      task: `${schema}.system_async_task`,
      attempt: `${schema}.system_async_task_attempt`,
      failure: `${schema}.system_async_task_failure`,
      deadLetter: `${schema}.system_async_task_dead_letter`,
      policy: `${schema}.system_async_task_policy`,
      worker: `${schema}.system_async_task_worker`,
      awaited: `${schema}.system_async_task_awaited`,
      action: `${schema}.system_async_task_action`,
      dependency: `${schema}.system_async_task_dependency`,
      sequence: `${schema}.system_async_task_sequence`,
      step: `${schema}.system_async_task_step`,
      log: `${schema}.system_async_task_log`,
      rateStart: `${schema}.system_async_task_rate_start`,
      migrations: `${schema}.tasklease_migrations`,
    },
    // Channel names are identifiers (≤ 63 bytes); a digest keeps any schema name short and distinct.
    channel: `tasklease_${digest}`,
    statementPrefix: `tasklease_${digest}_`,
    sqlCache: new Map(),
    namedStatements: !transactionPooler,
  };
}

/**
 * Runs one statement. On a pool it takes a client of its own when the
 * statement needs one: under transaction pooling with a statement timeout
 * (SET LOCAL in a transaction of its own), or when `onSent` asks when the
 * statement is put on a connection (a worker's lease statements, types.ts
 * OnSent: the wait in the pool's queue must not count against the leases).
 */
export async function run<R extends pg.QueryResultRow = pg.QueryResultRow>(
  on: Queryable,
  action: string,
  text: string,
  values: unknown[] = [],
  name?: string,
  onSent?: OnSent,
): Promise<pg.QueryResult<R>> {
  const query = name === undefined ? { text, values, types: TYPES } : { name, text, values, types: TYPES };
  if (isPool(on)) {
    const limited = perTransactionTimeouts.get(on) !== undefined;
    if (limited || onSent !== undefined) return onClientOfItsOwn<R>(on, action, query, limited, onSent);
  }
  try {
    return await on.query<R>(query);
  } catch (error) {
    throw mapPgError(error, action);
  }
}

/** A pool (ours or a caller's, perhaps of another copy of pg), not a client: a client has no totalCount. */
function isPool(on: Queryable): on is pg.Pool {
  return typeof (on as Partial<pg.Pool>).connect === 'function' && typeof (on as Partial<pg.Pool>).totalCount === 'number';
}

/**
 * One statement on a client taken for it. `limited`: in a transaction of its
 * own whose first command limits its run time (SET LOCAL: gone at COMMIT, so
 * nothing stays on a pooled server connection), two round trips more than
 * autocommit.
 */
function onClientOfItsOwn<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  action: string,
  query: pg.QueryConfig,
  limited: boolean,
  onSent: OnSent | undefined,
): Promise<pg.QueryResult<R>> {
  return withClient(pool, action, async (client, markBroken) => {
    onSent?.();
    try {
      if (!limited) return await client.query<R>(query);
      await client.query(beginOn(pool));
      let result: pg.QueryResult<R>;
      try {
        result = await client.query<R>(query);
      } catch (error) {
        await client.query('ROLLBACK').catch(markBroken);
        throw error;
      }
      await client.query('COMMIT');
      return result;
    } catch (error) {
      throw mapPgError(error, action);
    }
  });
}

/**
 * Work on a client of `pool` taken for it (connect errors mapped as
 * `action`), released after — not lent again when it may be broken: its
 * connection failed, its server is shutting down or read-only now (a
 * failover: errors.ts spoilsConnection), or `work` marked it. (pool.query
 * drops a client after any error of its statement already.) While it is out, the client's
 * 'error' event is heard: a connection that dies under a checked-out client
 * emits it, and without a listener the process would crash (pool.query
 * listens for it too); the statement's own rejection carries the error.
 */
export async function withClient<T>(pool: pg.Pool, action: string, work: (client: pg.PoolClient, markBroken: () => void) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw mapPgError(error, action);
  }
  let broken = false;
  const markBroken = (): void => {
    broken = true;
  };
  client.on('error', markBroken);
  try {
    return await work(client, markBroken);
  } catch (error) {
    if (spoilsConnection(error)) broken = true;
    throw error;
  } finally {
    client.removeListener('error', markBroken);
    client.release(broken);
  }
}

const TIMESTAMPTZ_OID = 1184;

/**
 * timestamptz in UTC ('2026-11-29 13:53:09.517318+00') parsed by slicing:
 * the generic parser's regular expression was ~5 % of a worker's CPU in a
 * drain (six times per task row), and most texts repeat (TimeTextCache).
 * Other offsets take the generic path.
 */
const recentTimes = new TimeTextCache();

export function parseTimestamptz(text: string): Date {
  const known = recentTimes.get(text);
  if (known) return known;
  const n = text.length;
  // Years below 100 would be read by Date.UTC as 19xx.
  if (n >= 22 && text[10] === ' ' && text.endsWith('+00') && text[0] !== '0') {
    const dot = text[19] === '.' ? 19 : -1;
    const ms = dot < 0 ? 0 : Math.floor(Number(`0${text.slice(dot, n - 3)}`) * 1000 + 1e-6);
    const at = Date.UTC(+text.slice(0, 4), +text.slice(5, 7) - 1, +text.slice(8, 10), +text.slice(11, 13), +text.slice(14, 16), +text.slice(17, 19), ms);
    if (!Number.isNaN(at)) return recentTimes.put(text, at);
  }
  return genericTimestamptz(text) as Date;
}

const genericTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text');

const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ_OID && format !== 'binary' ? parseTimestamptz : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** The pool's figures for the metrics (pool-stats.ts). */
export function pgPoolStats(pool: pg.Pool): PoolStats {
  return {
    active: pool.totalCount - pool.idleCount,
    idle: pool.idleCount,
    max: pool.options.max ?? 10,
    pending: pool.waitingCount,
  };
}
