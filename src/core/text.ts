/**
 * NUL (U+0000) in text, decided once for every store: PostgreSQL's text
 * columns cannot hold it while SQLite and MySQL can, and a task queue must
 * answer alike on all three. A name a caller chooses (owner, idempotency key,
 * trace id, token name, a filter on them) is refused with a ValidationError;
 * text written at run time (a progress or failure message) gets U+FFFD in its
 * place, because a failing handler must never fail its own outcome write.
 */
import { ValidationError } from './errors.js';

export function checkNoNul(field: string, value: unknown, label?: string): void {
  if (typeof value === 'string' && value.includes('\u0000')) {
    throw new ValidationError(`${label ? `${label}: ` : ''}${field} contains a NUL character (\\u0000), which no store keeps`, field);
  }
}

export function replaceNul(text: string): string {
  return text.includes('\u0000') ? text.replace(/\u0000/g, '\uFFFD') : text;
}
