/**
 * Flag value parsers for commander: each throws InvalidArgumentError, which
 * commander reports naming the flag ("option '--limit <n>' argument 'x' is
 * invalid. …") and the CLI exits 2.
 */
import { InvalidArgumentError } from 'commander';

export function integer(min: number, max: number): (value: string) => number {
  return (value) => {
    const number = /^-?\d+$/.test(value.trim()) ? Number(value) : NaN;
    if (!Number.isSafeInteger(number) || number < min || number > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return number;
  };
}

/**
 * An integer, or `default` (the stored policy value falls back to the workers'
 * default). The word stays a word here: commander turns a parser's null into ''.
 */
export function integerOrDefault(min: number, max: number): (value: string) => number | 'default' {
  const parse = integer(min, max);
  return (value) => (value === 'default' ? 'default' : parse(value));
}

export function positiveNumber(max: number): (value: string) => number {
  return decimal((number) => number > 0 && number <= max, `must be a number above 0 and at most ${max}`);
}

export function nonNegativeNumber(max: number): (value: string) => number {
  return decimal((number) => number <= max, `must be a number from 0 to ${max}`);
}

/** A plain decimal (no sign, no exponent) that passes `accept`. */
function decimal(accept: (number: number) => boolean, message: string): (value: string) => number {
  return (value) => {
    const number = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
    if (Number.isNaN(number) || !accept(number)) throw new InvalidArgumentError(message);
    return number;
  };
}

export function boolean(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError('must be true or false');
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `90s`, `10m`, `1h30m`, `2d` → milliseconds. A unit is required: a bare `10` is ambiguous. */
export function duration(value: string): number {
  const text = value.trim();
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new InvalidArgumentError('must be a duration such as 500ms, 90s, 10m, 1h30m or 2d');
  }
  return Math.round(parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * UNIT_MS[unit!]!, 0));
}

/** An ISO 8601 time (`2025-06-01T12:00:00Z`); a date alone means midnight UTC. */
export function isoTime(value: string): Date {
  const date = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim()) ? new Date(value.trim()) : new Date(NaN);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('must be an ISO 8601 time such as 2025-06-01T12:00:00Z');
  return date;
}

/** One of a fixed list of words. */
export function oneOf<T extends string>(values: readonly T[]): (value: string) => T {
  return (value) => {
    if (!values.includes(value as T)) throw new InvalidArgumentError(`must be one of ${values.join(', ')}`);
    return value as T;
  };
}

export function nonEmpty(value: string): string {
  if (value.length === 0) throw new InvalidArgumentError('must not be empty');
  return value;
}
