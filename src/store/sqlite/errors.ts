/**
 * better-sqlite3 errors → the project's errors. A missing table means the
 * schema was never migrated (SchemaMissingError, SCHEMA_NOT_MIGRATED); a lock
 * that another process held past busy_timeout, or a file that cannot be read,
 * is a StoreError (STORE_UNAVAILABLE, the worker backs off and retries); a row
 * the constraints refuse is a ValidationError; anything else a StoreError
 * naming SQLite's code.
 */
import { SchemaMissingError, StoreError, TaskLeaseError, UniqueConflictError, ValidationError } from '../../core/errors.js';
import { UNIQUE_INDEX } from '../rules/unique.js';

const UNAVAILABLE = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_CANTOPEN', 'SQLITE_FULL', 'SQLITE_READONLY']);

export function mapSqliteError(error: unknown, path: string): Error {
  if (error instanceof TaskLeaseError) return error;
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith('no such table')) return new SchemaMissingError(`SQLite database ${path}`, { cause: error });
  if (code.startsWith('SQLITE_CONSTRAINT') && message.includes(UNIQUE_INDEX)) return new UniqueConflictError(`SQLite database ${path}`, { cause: error });
  if (code.startsWith('SQLITE_CONSTRAINT')) {
    return new ValidationError(`SQLite refused the row: ${message}`, undefined, undefined, { cause: error });
  }
  const family = code.replace(/^(SQLITE_[A-Z]+).*/, '$1');
  if (UNAVAILABLE.has(family)) return new StoreError(`SQLite database ${path} unavailable (${code}): ${message}`, { cause: error });
  return new StoreError(`SQLite error${code ? ` ${code}` : ''} on ${path}: ${message}`, { cause: error });
}
