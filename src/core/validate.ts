import { InvalidOptionsError } from './errors.js';

/** Option checks at a component's edge: a bad value fails at start, naming the field. */
export function checkNumber(
  component: string,
  field: string,
  value: unknown,
  range: { min?: number; max?: number; integer?: boolean } = {},
): void {
  if (typeof value !== 'number' || Number.isNaN(value) || !Number.isFinite(value)) {
    throw new InvalidOptionsError(component, field, `must be a finite number, got ${describe(value)}`);
  }
  if (range.integer && !Number.isInteger(value)) throw new InvalidOptionsError(component, field, `must be an integer, got ${value}`);
  if (range.min !== undefined && value < range.min) throw new InvalidOptionsError(component, field, `must be ≥ ${range.min}, got ${value}`);
  if (range.max !== undefined && value > range.max) throw new InvalidOptionsError(component, field, `must be ≤ ${range.max}, got ${value}`);
}

export function checkInteger(component: string, field: string, value: unknown, range: { min?: number; max?: number } = {}): void {
  checkNumber(component, field, value, { ...range, integer: true });
}

export function checkString(component: string, field: string, value: unknown, range: { minLength?: number; maxLength?: number } = {}): void {
  if (typeof value !== 'string') throw new InvalidOptionsError(component, field, `must be a string, got ${describe(value)}`);
  if (range.minLength !== undefined && value.length < range.minLength) {
    throw new InvalidOptionsError(component, field, `must have at least ${range.minLength} characters`);
  }
  if (range.maxLength !== undefined && value.length > range.maxLength) {
    throw new InvalidOptionsError(component, field, `must have at most ${range.maxLength} characters, got ${value.length}`);
  }
}

/** Rejects keys a component does not know: a typo must not silently fall back to a default. */
export function checkKnownKeys(component: string, input: object, known: readonly string[]): void {
  for (const key of Object.keys(input)) {
    if (!known.includes(key)) throw new InvalidOptionsError(component, key, `is not an option of ${component} (known: ${known.join(', ')})`);
  }
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'undefined') return String(value);
  return typeof value;
}
