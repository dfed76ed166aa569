/**
 * mysql2 errors → the project's errors, and the predicates the retry loop
 * (connection.ts) judges errors by. Deadlocks (1213) and lock-wait timeouts
 * (1205) are retried inside the store; a missing table is
 * SchemaMissingError (SCHEMA_NOT_MIGRATED); a statement the server stopped
 * for its time limit is STORE_STATEMENT_TIMEOUT; a server that did not
 * complete the handshake in connectTimeoutMs is StoreConnectTimeoutError
 * naming it; anything else a StoreError (STORE_UNAVAILABLE) naming the
 * driver's code, with the driver's error as cause.
 */
import {
  ErrorCode,
  SchemaMissingError,
  StatementTooLargeError,
  StoreConnectTimeoutError,
  StoreError,
  TaskLeaseError,
  UniqueConflictError,
} from '../../core/errors.js';
import { UNIQUE_INDEX } from '../rules/unique.js';

export const DEADLOCK = 1213;
const LOCK_WAIT_TIMEOUT = 1205;
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT']);

/** Raised inside the store when a named lock (GET_LOCK) could not be had in time: retried like a lock-wait timeout. */
export class NamedLockTimeout extends Error {}

/** ER_NO_SUCH_TABLE. */
const NO_SUCH_TABLE = 1146;
/** ER_NET_PACKET_TOO_LARGE (the server then drops the connection), ER_WARN_ALLOWED_PACKET_OVERFLOWED. */
const PACKET_TOO_LARGE = new Set([1153, 1301]);

const DUPLICATE_ENTRY = 1062;

/** MariaDB ER_STATEMENT_TIMEOUT (max_statement_time), MySQL ER_QUERY_TIMEOUT (max_execution_time). */
const STATEMENT_TIMEOUTS = new Set([1969, 3024]);

/** The server a store talks to, for messages: host:port/database and the connect timeout. */
export interface ServerLabel {
  name: string;
  connectTimeoutMs: number;
}

export function mapMysqlError(error: unknown, server: ServerLabel): Error {
  if (error instanceof TaskLeaseError) return error;
  if (error instanceof NamedLockTimeout) return new StoreError(`MySQL store: ${error.message}`, { cause: error });
  const driver = error as { code?: string; errno?: number; message?: string };
  if (isPacketTooLarge(error)) {
    return new StatementTooLargeError(
      `MySQL store: a statement was longer than max_allowed_packet of MySQL at ${server.name}: raise max_allowed_packet on the server, or send smaller payloads or results`,
      { cause: error },
    );
  }
  if (driver.errno === DUPLICATE_ENTRY && (driver.message ?? '').includes(UNIQUE_INDEX)) return new UniqueConflictError('MySQL store', { cause: error });
  if (driver.errno === NO_SUCH_TABLE) return new SchemaMissingError(`MySQL database ${server.name} (${driver.message ?? ''})`, { cause: error });
  if (driver.code === 'ETIMEDOUT' && /connect/i.test(driver.message ?? '')) {
    return new StoreConnectTimeoutError(`MySQL at ${server.name}`, server.connectTimeoutMs, { cause: error });
  }
  const detail = driver.code ? `${driver.code}${driver.errno ? ` (${driver.errno})` : ''}` : 'error';
  const code = driver.errno !== undefined && STATEMENT_TIMEOUTS.has(driver.errno) ? ErrorCode.STORE_STATEMENT_TIMEOUT : undefined;
  return new StoreError(`MySQL store: ${detail}: ${driver.message ?? String(error)}`, { cause: error, ...(code ? { code } : {}) });
}

export function causeOf(error: unknown): unknown {
  return error instanceof StoreError ? error.cause : error;
}

/** Refused for its size: sending it again is refused again, even though the server dropped the connection. */
export function isPacketTooLarge(error: unknown): boolean {
  const errno = (error as { errno?: number } | null)?.errno;
  return errno !== undefined && PACKET_TOO_LARGE.has(errno);
}

export function isRetryable(error: unknown): boolean {
  const errno = (error as { errno?: number } | null)?.errno;
  return errno === DEADLOCK || errno === LOCK_WAIT_TIMEOUT;
}

export function isSqlError(error: unknown): boolean {
  return typeof (error as { sqlState?: unknown } | null)?.sqlState === 'string' && !(error as { fatal?: boolean }).fatal;
}

export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: string; fatal?: boolean } | null;
  return Boolean(e && (e.fatal === true || (e.code !== undefined && CONNECTION_CODES.has(e.code))));
}

export function isRefused(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND';
}
