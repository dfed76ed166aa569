/**
 * The MySQL/MariaDB connection layer: session set-up, transactions, bounded
 * retries of deadlocks and lock-wait timeouts, and driver errors turned into
 * the project's own. Every statement goes through `query`, which lets mysql2
 * escape the values client-side (no server-side prepared statements: their
 * count is capped server-wide and IN lists of every length would each make one).
 */
import type { Pool, PoolConnection, ResultSetHeader } from 'mysql2/promise';
import { StoreClosedError, StoreConnectTimeoutError, StoreError, TaskLeaseError } from '../../core/errors.js';
import type { PoolStats } from '../pool-stats.js';
import type { Row } from '../rows.js';
import type { OnSent } from '../types.js';
import {
  causeOf,
  DEADLOCK,
  isConnectionError,
  isPacketTooLarge,
  isRefused,
  isRetryable,
  isSqlError,
  mapMysqlError,
  NamedLockTimeout,
  type ServerLabel,
} from './errors.js';

export { NamedLockTimeout } from './errors.js';

/**
 * How long a session of our own pool may sit idle inside one of our
 * transactions before the server ends it (wait_timeout, set for the
 * transaction and restored after). A client cut off mid-transaction — a
 * network partition, a frozen process — otherwise keeps its named lock and
 * row locks for the server's wait_timeout (8 h by default): every claim of
 * the database waits on the claim lock meanwhile. Our transactions send
 * their next round trip within milliseconds; a client stalled longer than
 * this loses the transaction (rolled back, retried), never a commit.
 */
export const IDLE_IN_TRANSACTION_SECONDS = 10;

/** A connection of the promise API: ours from the pool, or a caller's inside its own transaction. */
export type Conn = Pick<PoolConnection, 'query'> & { connection?: unknown };

/** The session every statement assumes: UTC times, client-side escaping intact, no gap locks. */
const SESSION_SQL = [
  "SET time_zone = '+00:00'",
  // Pinned so that a server default of NO_BACKSLASH_ESCAPES or ANSI_QUOTES cannot change what escaping means.
  "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'",
  // READ COMMITTED: SKIP LOCKED scans release rows they did not match, and inserts never wait on gap locks.
  'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED',
];

/** ER_UNKNOWN_SYSTEM_VARIABLE: this server's flavour does not have that limit. */
const UNKNOWN_SYSTEM_VARIABLE = 1193;

/** One statement with its `?` values. */
export interface Statement {
  sql: string;
  values?: unknown[];
}

export interface RunOptions {
  /** GET_LOCK name held around the transaction (released after COMMIT). */
  lockName?: string;
  lockTimeoutSeconds?: number;
  /** Called once a connection is had, before the first statement (types.ts OnSent); again for each retry. */
  onSent?: OnSent;
}

/** Retries taken inside the store, for tests and metrics. */
export interface RetryStats {
  deadlocks: number;
  lockWaitTimeouts: number;
  namedLockTimeouts: number;
  lostConnections: number;
}

export class MysqlDatabase {
  readonly retries: RetryStats = { deadlocks: 0, lockWaitTimeouts: 0, namedLockTimeouts: 0, lostConnections: 0 };
  private readonly prepared = new WeakSet<object>();
  /** Sessions left in a state no next user may inherit (a lock or idle limit not restored): destroyed, not released. */
  private readonly tainted = new WeakSet<object>();
  private collation: string | null = null;
  private packetBytes: number | null = null;
  private closed = false;

  /** Which session variable limits a statement's run time: MariaDB's, MySQL's, or none known (null). */
  private statementLimit: 'max_statement_time' | 'max_execution_time' | null | undefined;

  constructor(
    readonly pool: Pool,
    private readonly ownsPool: boolean,
    private readonly database: string | null,
    private readonly server: ServerLabel,
    /** Server-side limit of each statement on our own pool's sessions; 0: none. */
    private readonly statementTimeoutMs = 0,
    private readonly maxRetries = 6,
  ) {}

  async query<T = Row[]>(conn: Conn, sql: string, values: unknown[] = []): Promise<T> {
    const [result] = await conn.query({ sql, values, dateStrings: true, supportBigNumbers: true } as never);
    return result as T;
  }

  async rows(conn: Conn, sql: string, values: unknown[] = []): Promise<Row[]> {
    return this.query<Row[]>(conn, sql, values);
  }

  async exec(conn: Conn, sql: string, values: unknown[] = []): Promise<ResultSetHeader> {
    return this.query<ResultSetHeader>(conn, sql, values);
  }

  /** Runs the statements in one round trip where the connection allows it; one result per statement. */
  async batch(conn: Conn, statements: readonly Statement[]): Promise<unknown[]> {
    if (statements.length === 0) return [];
    if (statements.length === 1 || !allowsMultipleStatements(conn)) {
      const results: unknown[] = [];
      for (const statement of statements) results.push(await this.query(conn, statement.sql, statement.values ?? []));
      return results;
    }
    const sql = statements.map((statement) => statement.sql).join(';\n');
    return this.query<unknown[]>(
      conn,
      sql,
      statements.flatMap((statement) => statement.values ?? []),
    );
  }

  /**
   * A transaction whose BEGIN (and named lock) travel with its first batch and
   * whose COMMIT (and lock release) travel with its last: a claim or an
   * outcome write in two round trips. Rolled back (and the lock released) on
   * any error; retried as a whole on deadlocks, lock-wait and named-lock timeouts.
   */
  batchedTransaction<T>(work: (tx: BatchedTransaction) => Promise<T>, options: RunOptions = {}): Promise<T> {
    return this.withRetries(() =>
      this.withConnection(async (conn) => {
        options.onSent?.();
        const tx = new BatchedTransaction(this, conn, options);
        try {
          const result = await work(tx);
          if (!tx.finished) await tx.last([]);
          return result;
        } catch (error) {
          if (!tx.finished) await tx.abort();
          throw error;
        }
      }),
    );
  }

  /** Runs `work` on one pooled connection outside a transaction, retried on lock conflicts. */
  run<T>(work: (conn: Conn) => Promise<T>): Promise<T> {
    return this.withRetries(() => this.withConnection(work));
  }

  /** Runs `work` in one READ COMMITTED transaction, retried as a whole on deadlocks and lock-wait timeouts. */
  transaction<T>(work: (conn: Conn) => Promise<T>, options: RunOptions = {}): Promise<T> {
    return this.withRetries(() =>
      this.withConnection(async (conn) => {
        options.onSent?.();
        await this.begin(conn, options);
        try {
          const result = await work(conn);
          await this.end(conn, options, 'COMMIT');
          return result;
        } catch (error) {
          await this.end(conn, options, 'ROLLBACK');
          throw error;
        }
      }),
    );
  }

  /** What opens a transaction of ours, in one round trip: the idle bound, the named lock, BEGIN. */
  opening(conn: Conn, options: RunOptions): Statement[] {
    const statements: Statement[] = this.bounded(conn) ? [{ sql: 'SET SESSION wait_timeout = ?', values: [IDLE_IN_TRANSACTION_SECONDS] }] : [];
    if (options.lockName) {
      // The server's own measure of the lock wait (SYSDATE: the time of the call, not of the statement's start): see OnSent.
      statements.push({ sql: 'SET @tasklease_asked = SYSDATE(6)' });
      statements.push({ sql: 'SELECT GET_LOCK(?, ?) AS got', values: [options.lockName, options.lockTimeoutSeconds ?? 5] });
      statements.push({ sql: 'SELECT TIMESTAMPDIFF(MICROSECOND, @tasklease_asked, SYSDATE(6)) AS waited' });
    }
    statements.push({ sql: 'START TRANSACTION' });
    return statements;
  }

  /**
   * Whether the opening's GET_LOCK was had; the lock wait is reported to
   * onSent (the leases the transaction grants count from after it).
   */
  lockHeld(opening: readonly Statement[], results: readonly unknown[], options: RunOptions): boolean {
    const at = opening.findIndex((statement) => statement.sql.startsWith('SELECT GET_LOCK'));
    if (at < 0) return true;
    if (Number((results[at] as Row[])[0]?.got) !== 1) return false;
    const waitedMs = Number((results[at + 1] as Row[])[0]?.waited) / 1000;
    if (Number.isFinite(waitedMs) && waitedMs >= 1) options.onSent?.(waitedMs);
    return true;
  }

  /** What closes it: COMMIT or ROLLBACK, the lock's release, the session's own idle limit back. */
  closing(conn: Conn, options: RunOptions, end: 'COMMIT' | 'ROLLBACK'): Statement[] {
    const statements: Statement[] = [{ sql: end }];
    if (options.lockName) statements.push({ sql: 'DO RELEASE_LOCK(?)', values: [options.lockName] });
    if (this.bounded(conn)) statements.push({ sql: 'SET SESSION wait_timeout = DEFAULT' });
    return statements;
  }

  /** The idle bound is set only on our own pool's sessions, and only where it rides a round trip already made. */
  private bounded(conn: Conn): boolean {
    return this.ownsPool && allowsMultipleStatements(conn);
  }

  /** Throws NamedLockTimeout (the transaction is then closed) when the lock could not be had in time. */
  async begin(conn: Conn, options: RunOptions): Promise<unknown[]> {
    const opening = this.opening(conn, options);
    const results = await this.batch(conn, opening);
    // Statements batched behind a failed GET_LOCK ran unserialized: the rollback undoes their locks (they never write).
    if (!this.lockHeld(opening, results, options)) {
      await this.end(conn, options, 'ROLLBACK');
      throw new NamedLockTimeout(`could not take lock ${options.lockName} within ${options.lockTimeoutSeconds ?? 5}s`);
    }
    return results;
  }

  /**
   * Ends the transaction. A COMMIT that fails throws (the caller rolls
   * back). A rollback never throws over the error that caused it: one that
   * fails leaves nothing to undo (the server rolls back a lost session), and
   * a connection whose lock or idle limit could not be restored is tainted:
   * destroyed when it is handed back, never lent again.
   */
  async end(conn: Conn, options: RunOptions, end: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    const closing = this.closing(conn, options, end);
    if (end === 'COMMIT') {
      await this.batch(conn, closing);
      return;
    }
    await conn.query('ROLLBACK').catch(() => undefined);
    await this.batch(conn, closing.slice(1)).catch(() => this.tainted.add(sessionOf(conn)));
  }

  /** Runs `work` on a caller's connection (their transaction): no BEGIN/COMMIT, no retries. */
  async onCallerConnection<T>(conn: Conn, work: (conn: Conn) => Promise<T>): Promise<T> {
    try {
      await this.prepare(conn);
      return await work(conn);
    } catch (error) {
      throw this.wrap(error);
    }
  }

  /** Session-wide named lock; the caller releases it. */
  async getLock(conn: Conn, name: string, timeoutSeconds: number): Promise<void> {
    const rows = await this.rows(conn, 'SELECT GET_LOCK(?, ?) AS got', [name, timeoutSeconds]);
    if (Number(rows[0]?.got) !== 1) throw new NamedLockTimeout(`could not take lock ${name} within ${timeoutSeconds}s`);
  }

  /** The collation for identifiers: binary and NO PAD, so 'a' ≠ 'A' ≠ 'a '. */
  async identifierCollation(conn: Conn): Promise<string> {
    if (this.collation) return this.collation;
    const rows = await this.rows(
      conn,
      "SELECT COLLATION_NAME AS name FROM information_schema.COLLATIONS WHERE COLLATION_NAME IN ('utf8mb4_0900_bin', 'utf8mb4_nopad_bin')",
    );
    const names = rows.map((row) => String(row.name));
    const found = names.includes('utf8mb4_0900_bin') ? 'utf8mb4_0900_bin' : names.includes('utf8mb4_nopad_bin') ? 'utf8mb4_nopad_bin' : null;
    if (!found) throw new StoreError('the server has neither utf8mb4_0900_bin (MySQL 8) nor utf8mb4_nopad_bin (MariaDB 10.2+)');
    this.collation = found;
    return found;
  }

  /** The server's max_allowed_packet (read once): no statement may be longer. */
  async maxPacketBytes(conn: Conn): Promise<number> {
    if (this.packetBytes !== null) return this.packetBytes;
    const rows = await this.rows(conn, 'SELECT @@max_allowed_packet AS n');
    this.packetBytes = Number(rows[0]?.n);
    return this.packetBytes;
  }

  /** The server as host:port/database, for messages. */
  get serverName(): string {
    return this.server.name;
  }

  async databaseName(): Promise<string> {
    if (this.database) return this.database;
    return this.run(async (conn) => {
      const rows = await this.rows(conn, 'SELECT DATABASE() AS name');
      const name = rows[0]?.name;
      if (typeof name !== 'string' || name === '') throw new StoreError('no database selected: give one in the uri or the "database" option');
      return name;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  private async withConnection<T>(work: (conn: Conn) => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreClosedError('MysqlStore', 'query');
    let conn: PoolConnection;
    try {
      conn = await this.pool.getConnection();
    } catch (error) {
      throw this.wrap(error);
    }
    let broken = false;
    try {
      await this.prepare(conn);
      return await work(conn);
    } catch (error) {
      broken = isConnectionError(error) || !(error instanceof TaskLeaseError || error instanceof NamedLockTimeout || isSqlError(error));
      throw error instanceof NamedLockTimeout || isRetryable(error) ? error : this.wrap(error);
    } finally {
      if (broken || this.tainted.has(sessionOf(conn))) conn.destroy();
      else conn.release();
    }
  }

  private async prepare(conn: Conn): Promise<void> {
    const key = sessionOf(conn);
    if (this.prepared.has(key)) return;
    for (const sql of SESSION_SQL) await conn.query(sql);
    const collation = await this.identifierCollation(conn);
    // Literals in the connection collation then compare with identifier columns without a collation mix.
    await conn.query(`SET NAMES utf8mb4 COLLATE ${collation}`);
    if (this.database) await conn.query('USE ??', [this.database] as never);
    if (this.ownsPool && this.statementTimeoutMs > 0) await this.limitStatements(conn);
    this.prepared.add(key);
  }

  /**
   * MariaDB limits every statement (max_statement_time, seconds); MySQL 8
   * only SELECTs (max_execution_time, ms). The first that the server knows
   * is used on every session.
   */
  private async limitStatements(conn: Conn): Promise<void> {
    const candidates = [
      { name: 'max_statement_time', value: this.statementTimeoutMs / 1000 },
      { name: 'max_execution_time', value: this.statementTimeoutMs },
    ] as const;
    for (const candidate of candidates) {
      if (this.statementLimit !== undefined && this.statementLimit !== candidate.name) continue;
      try {
        await conn.query(`SET SESSION ${candidate.name} = ?`, [candidate.value] as never);
        this.statementLimit = candidate.name;
        return;
      } catch (error) {
        if ((error as { errno?: number }).errno !== UNKNOWN_SYSTEM_VARIABLE) throw error;
      }
    }
    this.statementLimit = null;
  }

  private async withRetries<T>(attempt: () => Promise<T>): Promise<T> {
    let connectionFailures = 0;
    for (let tries = 1; ; tries += 1) {
      try {
        return await attempt();
      } catch (error) {
        const lockConflict = error instanceof NamedLockTimeout || isRetryable(error);
        // A server that refused or never finished a handshake is not a lost connection: retrying only multiplies the wait.
        const couldNotConnect = error instanceof StoreConnectTimeoutError || isRefused(causeOf(error));
        const lostConnection = !lockConflict && !couldNotConnect && !isPacketTooLarge(causeOf(error)) && isConnectionError(causeOf(error));
        if (lostConnection) connectionFailures += 1;
        const again = (lockConflict && tries < this.maxRetries) || (lostConnection && connectionFailures < 3);
        if (!again) throw this.wrap(error);
        this.count(error, lostConnection);
        // Full jitter: colliding claimers spread out instead of meeting again.
        await sleep(Math.random() * Math.min(200, 5 * 2 ** tries));
      }
    }
  }

  private count(error: unknown, lostConnection: boolean): void {
    const errno = (error as { errno?: number } | null)?.errno;
    if (lostConnection) this.retries.lostConnections += 1;
    else if (error instanceof NamedLockTimeout) this.retries.namedLockTimeouts += 1;
    else if (errno === DEADLOCK) this.retries.deadlocks += 1;
    else this.retries.lockWaitTimeouts += 1;
  }

  private wrap(error: unknown): Error {
    return mapMysqlError(error, this.server);
  }
}

/** The round trips of a transaction as a multi-step write sees them: steps, then the last one. */
/** What a settle or a release needs of a transaction: a round trip of statements. */
export interface Steps {
  step(statements: readonly Statement[]): Promise<unknown[]>;
}

export function stepsOn(db: MysqlDatabase, conn: Conn): Steps {
  return { step: (statements) => db.batch(conn, statements) };
}

export interface TransactionSteps {
  step(statements: readonly Statement[]): Promise<unknown[]>;
  last(statements: readonly Statement[]): Promise<unknown[]>;
}

/** A caller's transaction (ctx.complete(tx)): the same steps on their connection, which they commit or roll back. */
export class JoinedTransaction implements TransactionSteps {
  constructor(
    private readonly db: MysqlDatabase,
    private readonly conn: Conn,
  ) {}

  step(statements: readonly Statement[]): Promise<unknown[]> {
    return this.db.batch(this.conn, statements);
  }

  last(statements: readonly Statement[]): Promise<unknown[]> {
    return this.db.batch(this.conn, statements);
  }
}

/** See MysqlDatabase.batchedTransaction. */
export class BatchedTransaction implements TransactionSteps {
  private started = false;
  finished = false;

  constructor(
    private readonly db: MysqlDatabase,
    readonly conn: Conn,
    private readonly options: RunOptions,
  ) {}

  /** Sends `statements` (after the idle bound, the lock and BEGIN on the first call); their results, in order. */
  async step(statements: readonly Statement[]): Promise<unknown[]> {
    if (this.started) return this.db.batch(this.conn, statements);
    this.started = true;
    const opening = this.db.opening(this.conn, this.options);
    const results = await this.db.batch(this.conn, [...opening, ...statements]);
    // Statements batched behind a failed GET_LOCK ran unserialized: the rollback in abort() undoes their locks (they never write).
    if (!this.db.lockHeld(opening, results, this.options)) {
      throw new NamedLockTimeout(`could not take lock ${this.options.lockName} within ${this.options.lockTimeoutSeconds ?? 5}s`);
    }
    return results.slice(opening.length);
  }

  /** Sends `statements`, COMMIT, the lock release and the session's idle limit in one round trip. */
  async last(statements: readonly Statement[]): Promise<unknown[]> {
    const results = await this.step([...statements, ...this.db.closing(this.conn, this.options, 'COMMIT')]);
    this.finished = true;
    return results.slice(0, statements.length);
  }

  async abort(): Promise<void> {
    this.finished = true;
    // A lock that cannot be released must not go back to the pool with its connection: it is tainted, then destroyed.
    await this.db.end(this.conn, this.options, 'ROLLBACK');
  }
}

/** The driver's connection under a promise wrapper: one per server session. */
function sessionOf(conn: Conn): object {
  return (conn.connection ?? conn) as object;
}

function allowsMultipleStatements(conn: Conn): boolean {
  const core = (conn.connection ?? conn) as { config?: { multipleStatements?: boolean } };
  return core.config?.multipleStatements === true;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** mysql2 exposes no pool counters: these are its core pool's internal queues, read defensively (null if a release renames them). */
interface MysqlCorePoolInternals {
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
  config?: { connectionLimit?: number };
}

export function mysqlPoolStats(pool: Pool): PoolStats | null {
  const core = pool.pool as unknown as MysqlCorePoolInternals;
  const all = core._allConnections?.length;
  const free = core._freeConnections?.length;
  const queued = core._connectionQueue?.length;
  const max = core.config?.connectionLimit;
  if (typeof all !== 'number' || typeof free !== 'number' || typeof queued !== 'number' || typeof max !== 'number') return null;
  return { active: all - free, idle: free, max, pending: queued };
}
