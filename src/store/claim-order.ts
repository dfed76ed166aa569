import type { Row } from './rows.js';

/**
 * The claim order for stores that merge per-type candidate lists in code:
 * priority desc, available_at, create_time, then id (UUIDv7: creation order)
 * for a total order. Times compare as the dialect's sortable text or Dates.
 */
export function claimOrder(a: Row, b: Row): number {
  return Number(b.priority) - Number(a.priority) || compare(a.available_at, b.available_at) || compare(a.create_time, b.create_time) || compare(a.id, b.id);
}

function compare(a: unknown, b: unknown): number {
  const left = a instanceof Date ? a.getTime() : String(a);
  const right = b instanceof Date ? b.getTime() : String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}
