/**
 * Values to and from MySQL/MariaDB: DATETIME(3) text in UTC, JSON as text,
 * and what the columns can hold, checked before anything is written.
 */
import { ValidationError } from '../../core/errors.js';
import type { NewTask } from '../../core/task.js';
import type { Decode } from '../rows.js';

const INT_MAX = 2_147_483_647;

export const decode: Decode = {
  time(value: unknown): Date {
    if (value instanceof Date) return value;
    // dateStrings: 'YYYY-MM-DD HH:MM:SS.fff', UTC because of the session time_zone.
    return new Date(`${String(value).replace(' ', 'T')}Z`);
  },
  json(value: unknown): unknown {
    if (value === null || value === undefined) return null;
    return JSON.parse(Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
  },
};

/** A Date as a DATETIME(3) literal in UTC. */
export function sqlTime(date: Date): string {
  return date.toISOString().slice(0, 23).replace('T', ' ');
}

export function addMs(dbNow: string, ms: number): string {
  return sqlTime(new Date(decode.time(dbNow).getTime() + Math.round(ms)));
}

/** What the columns can hold, checked before anything is written; strings must be valid UTF-16 (a lone surrogate cannot be stored). */
export function validateNewTask(task: NewTask, index: number): void {
  const at = (field: string) => `tasks[${index}].${field}`;
  checkText(task.id, at('id'), 64, false);
  checkText(task.taskType, at('taskType'), 255, false);
  if (typeof task.payloadJson !== 'string') throw new ValidationError(`${at('payloadJson')} must be a string`, at('payloadJson'));
  if (hasLoneSurrogate(task.payloadJson)) throw new ValidationError(`${at('payloadJson')} contains a lone surrogate`, at('payloadJson'));
  if (!Number.isInteger(task.priority) || Math.abs(task.priority) > INT_MAX) {
    throw new ValidationError(`${at('priority')} must be an integer within ±${INT_MAX}`, at('priority'));
  }
  if (!Number.isFinite(task.delayMs) || task.delayMs < 0) throw new ValidationError(`${at('delayMs')} must be a finite number ≥ 0`, at('delayMs'));
  checkDate(task.availableAt, at('availableAt'));
  checkDate(task.deadlineAt, at('deadlineAt'));
  if (!Number.isInteger(task.maxAttempts) || task.maxAttempts < 1 || task.maxAttempts > INT_MAX) {
    throw new ValidationError(`${at('maxAttempts')} must be an integer ≥ 1`, at('maxAttempts'));
  }
  checkText(task.owner, at('owner'), 255, true);
  checkText(task.idempotencyKey, at('idempotencyKey'), 255, true);
  checkText(task.traceId, at('traceId'), 255, true);
  checkText(task.rateKey ?? null, at('rateKey'), 255, true);
}

export function checkText(value: unknown, field: string, maxLength: number, nullable: boolean): void {
  if (value === null && nullable) return;
  if (typeof value !== 'string' || value.length === 0) throw new ValidationError(`${field} must be a non-empty string`, field);
  if (value.length > maxLength) throw new ValidationError(`${field} is ${value.length} characters, over the MySQL column limit of ${maxLength}`, field);
  if (hasLoneSurrogate(value)) throw new ValidationError(`${field} contains a lone surrogate (not valid Unicode)`, field);
}

function checkDate(value: Date | null, field: string): void {
  if (value === null) return;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new ValidationError(`${field} must be a valid Date`, field);
  const year = value.getUTCFullYear();
  if (year < 1000 || year > 9999) throw new ValidationError(`${field} is outside the DATETIME range (years 1000–9999)`, field);
}

/** In a `u` regex a surrogate pair is one code point, so only lone halves match. */
export function hasLoneSurrogate(text: string): boolean {
  return /\p{Surrogate}/u.test(text);
}
