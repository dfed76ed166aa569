/**
 * The submit option `unique`, checked at the edge and resolved into the
 * UniqueSpec the stores keep (store/rules/unique.ts says how).
 *
 * Three modes, one object:
 * - by state (`{ key }`, optionally `states`): one task per key while it is
 *   in those statuses; default every status that is not terminal.
 * - throttle (`periodMs`): one task per key per window of the database clock,
 *   whatever it became; `states` narrows that (default every status).
 * - debounce (`debounceMs`): while the task has not started, a later submit
 *   replaces its payload and moves its start to now + debounceMs; once it runs,
 *   a later submit makes a new task.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '../core/errors.js';
import { isTaskStatus, TERMINAL_STATUSES, type TaskStatus } from '../core/status.js';
import type { UniqueSpec } from '../core/task.js';
import { checkKnownKeys, keysOf } from '../core/validate.js';
import { FRESH_ONLY_BIT, statesMask, UNIQUE_STATUSES } from '../store/rules/unique.js';

export interface UniqueOptions {
  /** What makes two submits of a type and owner the same. Default: the payload (as JSON). 1–255 characters. */
  key?: string;
  /** Throttle: at most one task per key in each window of this many milliseconds (database clock). */
  periodMs?: number;
  /** The statuses in which a task holds its key. Must include every non-terminal status. */
  states?: readonly TaskStatus[];
  /** Debounce: a later submit replaces the waiting task's payload and starts it this many milliseconds later. */
  debounceMs?: number;
}

const KEYS = keysOf<UniqueOptions>({ key: true, periodMs: true, states: true, debounceMs: true });
const MAX_WINDOW_MS = 366 * 24 * 3600 * 1000;
/** A task passes through these without anyone's action: leaving one out would let a requeue or claim collide. */
const REQUIRED_STATES: readonly TaskStatus[] = UNIQUE_STATUSES.filter((s) => !TERMINAL_STATUSES.includes(s));
const DEBOUNCE_STATES = statesMask(['QUEUED', 'PAUSED']) | FRESH_ONLY_BIT;

export interface UniqueRequest {
  unique?: UniqueOptions;
  delayMs?: number;
  availableAt?: Date;
  idempotencyKey?: string;
}

/** The spec to store, or null without `unique`; throws ValidationError (field `unique.*`) on a bad option. */
export function resolveUnique(label: string, request: UniqueRequest, task: { taskType: string; owner: string | null; payloadJson: string }): UniqueSpec | null {
  const unique = request.unique;
  if (unique === undefined) return null;
  if (unique === null || typeof unique !== 'object' || Array.isArray(unique)) throw new ValidationError(`${label}: unique must be an object`, 'unique');
  checkKnownKeys(`${label} unique`, unique, KEYS, 'unique.');
  if (request.idempotencyKey !== undefined) throw new ValidationError(`${label}: give idempotencyKey or unique, not both`, 'unique');
  const key = unique.key ?? task.payloadJson;
  if (unique.key !== undefined && (typeof unique.key !== 'string' || unique.key.length === 0 || unique.key.length > 255)) {
    throw new ValidationError(`${label}: unique.key must be a string of 1 to 255 characters`, 'unique.key');
  }
  const periodMs = optionalWindow(label, 'periodMs', unique.periodMs, 1);
  const debounceMs = optionalWindow(label, 'debounceMs', unique.debounceMs, 0);
  if (debounceMs !== null) checkDebounce(label, request, unique);
  const states = debounceMs !== null ? DEBOUNCE_STATES : statesMask(checkStates(label, unique.states, periodMs !== null));
  const hash = createHash('sha256').update(JSON.stringify([task.taskType, task.owner ?? '', key, states, periodMs, debounceMs !== null]));
  return { key: hash.digest('hex'), states, periodMs, debounceMs };
}

function checkDebounce(label: string, request: UniqueRequest, unique: UniqueOptions): void {
  if (unique.periodMs !== undefined || unique.states !== undefined) {
    throw new ValidationError(`${label}: unique.debounceMs cannot be combined with unique.periodMs or unique.states`, 'unique.debounceMs');
  }
  if (request.delayMs !== undefined || request.availableAt !== undefined) {
    throw new ValidationError(`${label}: unique.debounceMs sets the start; give no delayMs or availableAt`, 'unique.debounceMs');
  }
}

function optionalWindow(label: string, field: string, value: unknown, min: number): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_WINDOW_MS) {
    throw new ValidationError(`${label}: unique.${field} must be an integer from ${min} to ${MAX_WINDOW_MS}, got ${String(value)}`, `unique.${field}`);
  }
  return value;
}

function checkStates(label: string, states: unknown, period: boolean): readonly TaskStatus[] {
  if (states === undefined) return period ? UNIQUE_STATUSES : REQUIRED_STATES;
  if (!Array.isArray(states) || !states.every(isTaskStatus)) {
    throw new ValidationError(`${label}: unique.states must be an array of statuses (${UNIQUE_STATUSES.join(', ')})`, 'unique.states');
  }
  const missing = REQUIRED_STATES.filter((s) => !states.includes(s));
  if (missing.length > 0) {
    throw new ValidationError(`${label}: unique.states must include every non-terminal status; missing ${missing.join(', ')}`, 'unique.states');
  }
  return states;
}
