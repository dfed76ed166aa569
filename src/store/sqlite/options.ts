/**
 * SqliteStore options, validated at construction: a bad value fails at once
 * with an InvalidOptionsError naming the field.
 */
import { InvalidOptionsError } from '../../core/errors.js';
import { checkInteger, checkKnownKeys, checkString, describe } from '../../core/validate.js';

export interface SqliteStoreOptions {
  /** Database file; ':memory:' only for single-process use. */
  path: string;
  /** Milliseconds to wait for another process's write lock. Default 5000. */
  busyTimeoutMs?: number;
  /** The clock this store judges time by (all processes on one file share the machine's clock). Default Date.now. */
  clock?: () => number;
}

export interface ResolvedSqliteOptions {
  path: string;
  busyTimeoutMs: number;
  clock: () => number;
}

const COMPONENT = 'SqliteStore';
const KNOWN = ['path', 'busyTimeoutMs', 'clock'] as const;

export function resolveSqliteOptions(options: SqliteStoreOptions): ResolvedSqliteOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidOptionsError(COMPONENT, 'options', `must be an object, got ${describe(options)}`);
  checkKnownKeys(COMPONENT, options, KNOWN);
  checkString(COMPONENT, 'path', options.path, { minLength: 1 });
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  checkInteger(COMPONENT, 'busyTimeoutMs', busyTimeoutMs, { min: 0 });
  if (options.clock !== undefined && typeof options.clock !== 'function') {
    throw new InvalidOptionsError(COMPONENT, 'clock', 'must be a function returning milliseconds');
  }
  return { path: options.path, busyTimeoutMs, clock: options.clock ?? Date.now };
}
