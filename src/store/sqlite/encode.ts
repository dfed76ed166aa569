/** Values to and from SQLite: UTC times as sortable text, JSON as text. */
import type { Decode } from '../rows.js';
import { TimeTextCache } from '../time-cache.js';

const recentTimes = new TimeTextCache();

/** SQLite keeps UTC times as 'YYYY-MM-DD HH:MM:SS.SSS' text (see migrations.ts). */
export function toSqliteTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
}

export function fromSqliteTime(value: unknown): Date {
  const text = String(value);
  return recentTimes.get(text) ?? recentTimes.put(text, Date.parse(`${text.replace(' ', 'T')}Z`));
}

export const decodeSqlite: Decode = {
  time: fromSqliteTime,
  json: (value) => (typeof value === 'string' ? JSON.parse(value) : value),
};
