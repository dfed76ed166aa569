/**
 * The plan of the claim's candidate read (claim.ts), as EXPLAIN QUERY PLAN
 * shows it: the diagnostics' and the fault suite's check that the claim
 * reads the claim index, not the table.
 */
import type { ClaimPlan } from '../types.js';
import { CANDIDATES_SQL } from './claim.js';
import type { Db } from './connection.js';
import { toSqliteTime } from './encode.js';

export function explainClaim(db: Db, taskType: string, nowMs: number): ClaimPlan {
  const now = toSqliteTime(nowMs);
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${CANDIDATES_SQL}`).all(taskType, now, now, 10) as { detail: string }[];
  return { plan: rows.map((row) => row.detail).join('\n') };
}
