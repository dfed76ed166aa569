import { InvalidOptionsError } from './errors.js';

/** Option checks at a component's edge: a bad value fails at start, naming the field. */
export function checkNumber(component: string, field: string, value: unknown, range: { min?: number; max?: number; integer?: boolean } = {}): void {
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

/**
 * Rejects keys a component does not know, suggesting the closest known one: a
 * typo (`busyTimeout`, `idempotency_key`) must not silently fall back to a
 * default for JavaScript callers, whom no type checker warns. `prefix` names a
 * nested object (`retry.`). The one helper for every options object.
 */
export function checkKnownKeys(component: string, input: object, known: readonly string[], prefix = ''): void {
  for (const key of Object.keys(input)) {
    if (known.includes(key)) continue;
    const guess = closestKey(key, known);
    const hint = guess === undefined ? '' : `: did you mean "${prefix}${guess}"?`;
    throw new InvalidOptionsError(component, `${prefix}${key}`, `is unknown${hint} (known: ${known.map((k) => prefix + k).join(', ')})`);
  }
}

/** Every key of T exactly once, checked by the compiler, so a key list cannot drift from its interface. */
export function keysOf<T>(keys: Record<keyof T, true>): readonly string[] {
  return Object.keys(keys);
}

/** The known key nearest to `key` ignoring case, `_` and `-`, if near enough to be a likely typo. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = normalizeKey(key);
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(wanted, normalizeKey(candidate));
    if (best === undefined || distance < best.distance) best = { key: candidate, distance };
  }
  const allowed = Math.max(2, Math.floor(wanted.length / 3));
  return best !== undefined && best.distance <= allowed ? best.key : undefined;
}

function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, '');
}

/** Levenshtein distance; the keys are short, so the quadratic table is fine. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'undefined') return String(value);
  return typeof value;
}
