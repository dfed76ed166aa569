/**
 * Driver errors → the project's errors. "Cannot reach the database" becomes a
 * StoreError (code STORE_UNAVAILABLE) with the driver's error as `cause`, so
 * a worker backs off and retries; a missing table, schema or function of
 * ours is SchemaMissingError (SCHEMA_NOT_MIGRATED); a statement the server
 * cancelled for statement_timeout is STORE_STATEMENT_TIMEOUT; a value
 * PostgreSQL refuses becomes a ValidationError; anything else is a
 * StoreError that names the SQLSTATE. (A connect timeout is named by the
 * store, which knows the host: isConnectTimeout.)
 */
import { ErrorCode, SchemaMissingError, StoreError, TaskLeaseError, UniqueConflictError, ValidationError } from '../../core/errors.js';
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
  if (isUnreachable(error)) {
    return new StoreError(`PostgreSQL unreachable while ${action}: ${messageOf(error)}`, { cause: error });
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (code === '23505' && (error as { constraint?: unknown }).constraint === UNIQUE_INDEX) return new UniqueConflictError(action, { cause: error });
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

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
