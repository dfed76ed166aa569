/**
 * Exit codes, stable for scripts (docs/cli.md lists them):
 *   0 ok · 1 operational failure · 2 usage or bad input · 3 not found.
 * Typed errors carry a `code` (src/core/errors.ts); the code decides the exit.
 */
import { CommanderError } from 'commander';
import { ErrorCode, TaskLeaseError, ValidationError } from '../core/errors.js';

export const ExitCode = { OK: 0, FAILURE: 1, USAGE: 2, NOT_FOUND: 3 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Bad command-line input found by the CLI itself (a flag's value, a file's line). */
export class UsageError extends ValidationError {
  constructor(message: string, field?: string) {
    super(message, field, 'USAGE');
  }
}

export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CommanderError) return ExitCode.USAGE;
  if (error instanceof ValidationError) return ExitCode.USAGE;
  if (error instanceof TaskLeaseError && error.code === ErrorCode.NOT_FOUND) return ExitCode.NOT_FOUND;
  return ExitCode.FAILURE;
}

/** `error CODE: message` — the code a script can match on, then the words a person reads. */
export function describeError(error: unknown): { code: string; message: string; field?: string } {
  if (error instanceof ValidationError) return { code: error.code, message: error.message, ...(error.field ? { field: error.field } : {}) };
  if (error instanceof TaskLeaseError) return { code: error.code, message: error.message };
  const code = (error as { code?: unknown })?.code;
  // Driver errors (ECONNREFUSED, 28P01, ER_ACCESS_DENIED_ERROR) keep their own code: it is what an operator searches for.
  const message =
    error instanceof AggregateError && !error.message
      ? error.errors.map((inner: unknown) => (inner instanceof Error ? inner.message : String(inner))).join('; ')
      : error instanceof Error
        ? error.message || error.name
        : String(error);
  return { code: typeof code === 'string' && code.length > 0 ? code : 'ERROR', message };
}
