/**
 * Search by payload and idempotency-key prefix (issue 29): the SQL pieces
 * every dialect shares. A JSON path is rendered from validated segments
 * (core/search.ts allows only A–Z a–z 0–9 _ - in one), as a literal, so an
 * operator's expression index on the same path matches the query; values
 * are always bound. LIKE patterns escape with '!' (no backslash: MySQL's
 * NO_BACKSLASH_ESCAPES mode and PostgreSQL's standard strings read '!' alike).
 */
import type { PayloadCondition } from '../../core/search.js';

const SAFE_SEGMENT = /^[A-Za-z0-9_-]+$/;

function checked(segments: readonly string[]): readonly string[] {
  // core/search.ts validated them; this guards the SQL text against a caller that skipped it.
  for (const segment of segments) if (!SAFE_SEGMENT.test(segment)) throw new Error(`unsafe JSON path segment ${JSON.stringify(segment)}`);
  return segments;
}

/** SQLite json_extract / MySQL JSON_EXTRACT path literal: `'$."order"."id"'`. */
export function jsonPathLiteral(segments: readonly string[]): string {
  return `'$${checked(segments)
    .map((s) => `."${s}"`)
    .join('')}'`;
}

/** PostgreSQL #> / #>> path literal: `'{order,id}'`. */
export function pgPathLiteral(segments: readonly string[]): string {
  return `'{${checked(segments).join(',')}}'`;
}

/** The escape clause every prefix LIKE uses. */
export const LIKE_ESCAPE = "ESCAPE '!'";

/** LIKE pattern for "starts with `prefix`", escaped for LIKE_ESCAPE. */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}

export type { PayloadCondition };
