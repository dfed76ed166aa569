/**
 * Driver errors → the project's errors. "Cannot reach the database" becomes a
 * StoreError (code STORE_UNAVAILABLE) with the driver's error as `cause`, so
 * a worker backs off and retries; a missing table, schema or function of
 * ours is SchemaMissingError (SCHEMA_NOT_MIGRATED); a statement the server
 * cancelled for statement_timeout is STORE_STATEMENT_TIMEOUT; a value
 * PostgreSQL refuses becomes a ValidationError; anything else is a
 * StoreError that names the SQLSTATE. (A connect timeout is named by the
 * store, which knows the host: isConnectTimeout.) What a connection pooler
 * refuses for good — a startup parameter, named prepared statements through
 * transaction pooling — is a StoreConfigurationError (STORE_CONFIGURATION)
 * naming the setting and the fix, never "unreachable".
 */
import { ErrorCode, SchemaMissingError, StoreConfigurationError, StoreError, TaskLeaseError, UniqueConflictError, ValidationError } from '../../core/errors.js';
import { UNIQUE_INDEX } from '../rules/unique.js';

/** Socket-level errors and SQLSTATE classes 08 (connection), 57P0x (shutdown, cannot connect now), 53300 (too many connections). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ECONNABORTED',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '08P01',
]);
const UNREACHABLE_MESSAGES = [
  'Connection terminated',
  'connection error',
  'not queryable',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end',
  'terminating connection',
];

/** SQLSTATEs that mean "this value cannot be stored": bad encoding, out of range, index row too large. */
const REJECTED_VALUE_CODES: Record<string, string> = {
  '22021': 'a text value holds bytes PostgreSQL cannot store (NUL or invalid UTF-8)',
  '22P05': 'a text value holds a character the database encoding cannot represent',
  '22003': 'a number is out of range',
  '22001': 'a value is too long',
  '22P02': 'a value has the wrong format',
  '54000': 'a value is too large for an index (shorten the task type, owner or idempotency key)',
  '23505': 'a row with this key exists already (a task id submitted twice?)',
};

export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
  return UNREACHABLE_MESSAGES.some((text) => error.message.includes(text));
}

/**
 * Whether the connection that met `error` must not be lent again: it lost its
 * server (isUnreachable: class 08, 57P01 admin shutdown, 57P02 crash shutdown,
 * 57P03 cannot connect now, socket errors), or the server it reached is
 * read-only now (25006: a demoted primary or a standby). After a failover such a
 * session stays on the old primary for as long as it lives, while a new
 * connection reaches the new one (through HAProxy, a moved VIP or DNS name).
 * The store's errors carry the driver's as `cause`.
 */
export function spoilsConnection(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = (e as { cause?: unknown }).cause, depth += 1) {
    if (isUnreachable(e) || (e as { code?: unknown }).code === READ_ONLY) return true;
  }
  return false;
}

/** read_only_sql_transaction. */
const READ_ONLY = '25006';

/** undefined_table, invalid_schema_name; undefined_function only for our own functions (tasklease_claim, …). */
function isSchemaMissing(code: unknown, message: string): boolean {
  return code === '42P01' || code === '3F000' || (code === '42883' && message.includes('tasklease_'));
}

/** The pool's or the client's own connect timer fired. */
export function isConnectTimeout(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return message.includes('timeout exceeded when trying to connect') || message.includes('due to connection timeout');
}

export function mapPgError(error: unknown, action: string): Error {
  if (error instanceof TaskLeaseError) return error;
  const refused = poolerRefusal(error, action);
  if (refused) return refused;
  if (isUnreachable(error)) {
    return new StoreError(`PostgreSQL unreachable while ${action}: ${messageOf(error)}`, { cause: error });
  }
  const code = (error as { code?: unknown } | null)?.code;
  const constraint = (error as { constraint?: unknown } | null)?.constraint;
  if (code === '23505' && constraint === UNIQUE_INDEX) return new UniqueConflictError(action, { cause: error });
  if (code === '23505' && typeof constraint === 'string' && constraint.startsWith('pg_')) {
    // A catalog row: two sessions created the same object at once (DDL outside the migration lock).
    return new StoreError(`PostgreSQL error while ${action}: another session created the same object at the same time (${messageOf(error)})`, {
      cause: error,
    });
  }
  if (isSchemaMissing(code, messageOf(error))) return new SchemaMissingError(`PostgreSQL (${messageOf(error)})`, { cause: error });
  if (code === '57014' && messageOf(error).includes('statement timeout')) {
    return new StoreError(`PostgreSQL cancelled a statement while ${action}: it ran past statementTimeoutMs`, {
      cause: error,
      code: ErrorCode.STORE_STATEMENT_TIMEOUT,
    });
  }
  if (typeof code === 'string' && REJECTED_VALUE_CODES[code] !== undefined) {
    return new ValidationError(`PostgreSQL refused the input while ${action}: ${REJECTED_VALUE_CODES[code]} (${messageOf(error)})`, undefined, undefined, {
      cause: error,
    });
  }
  const state = typeof code === 'string' ? ` [SQLSTATE ${code}]` : '';
  return new StoreError(`PostgreSQL error while ${action}${state}: ${messageOf(error)}`, { cause: error });
}

/** PgBouncer's answer to a startup parameter it does not pass on (a pool's statement_timeout, options, …). */
const UNSUPPORTED_STARTUP = /unsupported startup parameter:?\s*"?([A-Za-z_.]+)/i;
/** Named prepared statements through transaction pooling: 26000 "prepared statement … does not exist", 42P05 "… already exists". */
const LOST_PREPARED = /prepared statement "?[^"]*"? (does not exist|already exists)/i;

function poolerRefusal(error: unknown, action: string): StoreConfigurationError | null {
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  const startup = UNSUPPORTED_STARTUP.exec(error.message);
  if (startup) {
    const parameter = startup[1]!;
    return new StoreConfigurationError(
      parameter,
      `the connection pooler refused the startup parameter ${parameter} while ${action}: PostgresStore sends none but user, database and ` +
        `application_name, so it comes from a pool or PG* environment variable of yours (e.g. PGOPTIONS) — remove ${parameter} from it ` +
        `(statementTimeoutMs applies the store's timeout without it), or list it in PgBouncer's ignore_startup_parameters`,
      { cause: error },
    );
  }
  if ((code === '26000' || code === '42P05') && LOST_PREPARED.test(error.message)) {
    return new StoreConfigurationError(
      'pooler',
      `PostgreSQL lost a prepared statement while ${action} (${error.message}): the store is behind a pooler in transaction mode; ` +
        `open it with pooler: 'transaction' (or ?pooler=transaction on the URL)`,
      { cause: error },
    );
  }
  return null;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
