/**
 * The SQLite claim. Runs inside BEGIN IMMEDIATE (the caller's), so the counts
 * below cannot change before the claimed rows are written: the global and
 * per-type limits hold however many processes claim at once.
 */
import { GLOBAL_POLICY_KEY, typePolicyKey } from '../../core/policy-keys.js';
import type { Task } from '../../core/task.js';
import { claimOrder } from '../claim-order.js';
import { taskFromRow, type Row } from '../rows.js';
import { CLAIMABLE_SQL, LEASED_SQL, STATUS_SQL } from '../rules/index.js';
import type { ClaimParams } from '../types.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite, toSqliteTime } from './encode.js';

interface PolicyRow {
  policy_key: string;
  task_type: string | null;
  max_concurrency: number | null;
  enabled: number;
}

/** A type's claimable rows in claim order; parameters: type, now, now, limit (explain.ts shows its plan). */
export const CANDIDATES_SQL = `SELECT id, task_type, priority, available_at, create_time FROM system_async_task
     WHERE task_type = ? AND status IN ${CLAIMABLE_SQL} AND available_at <= ? AND (deadline_at IS NULL OR deadline_at > ?)
     ORDER BY priority DESC, available_at, create_time LIMIT ?`;

export function claim(db: Db, params: ClaimParams, nowMs: number): Task[] {
  const now = toSqliteTime(nowMs);
  const policies = readPolicies(db, params.taskTypes);
  const global = policies.get(GLOBAL_POLICY_KEY);
  if (global && global.enabled === 0) return [];
  const globalCap = global?.max_concurrency ?? params.globalConcurrency;
  const leased = leasedByType(db);
  let room = Math.min(params.limit, globalCap - [...leased.values()].reduce((sum, n) => sum + n, 0));
  if (room <= 0) return [];

  const candidatesOf = statement(db, CANDIDATES_SQL);
  const candidates: Row[] = [];
  for (const taskType of new Set(params.taskTypes)) {
    const policy = policies.get(typePolicyKey(taskType));
    if (policy && policy.enabled === 0) continue;
    const typeRoom = (policy?.max_concurrency ?? params.typeConcurrency) - (leased.get(taskType) ?? 0);
    if (typeRoom <= 0) continue;
    candidates.push(...(candidatesOf.all(taskType, now, now, Math.min(typeRoom, room)) as Row[]));
  }
  candidates.sort(claimOrder);
  const chosen = candidates.slice(0, room);
  room -= chosen.length;

  const leaseUntil = toSqliteTime(nowMs + params.leaseMs);
  const update = statement(
    db,
    `UPDATE system_async_task SET status = ${STATUS_SQL.RUNNING}, lease_owner = ?, lease_until = ?, attempt_count = attempt_count + 1,
       start_time = COALESCE(start_time, ?), update_time = ?
     WHERE id = ? RETURNING *`,
  );
  const attempt = statement(db, 'INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at) VALUES (?, ?, ?, ?)');
  return chosen.map((candidate) => {
    const row = update.get(params.workerId, leaseUntil, now, now, candidate.id) as Row;
    attempt.run(row.id, row.attempt_count, params.workerId, now);
    return taskFromRow(row, decodeSqlite);
  });
}

function readPolicies(db: Db, taskTypes: readonly string[]): Map<string, PolicyRow> {
  const keys = [GLOBAL_POLICY_KEY, ...taskTypes.map(typePolicyKey)];
  const rows = statement(
    db,
    `SELECT policy_key, task_type, max_concurrency, enabled FROM system_async_task_policy WHERE policy_key IN (${keys.map(() => '?').join(',')})`,
  ).all(...keys) as PolicyRow[];
  return new Map(rows.map((row) => [row.policy_key, row]));
}

/** RUNNING + CANCEL_REQUESTED rows per type: what the limits count. */
export function leasedByType(db: Db): Map<string, number> {
  // INDEXED BY: left alone, the planner may scan a wider index or the table — every finished row, on every claim.
  const rows = statement(
    db,
    `SELECT task_type, COUNT(*) AS n FROM system_async_task INDEXED BY ix_system_async_task_leased
    WHERE status IN ${LEASED_SQL} GROUP BY task_type`,
  ).all() as { task_type: string; n: number }[];
  return new Map(rows.map((row) => [row.task_type, row.n]));
}
