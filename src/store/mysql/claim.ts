/**
 * The MySQL/MariaDB claim: one short transaction under a named lock.
 *
 * Why a lock at all, with SKIP LOCKED? SKIP LOCKED keeps claimers off each
 * other's rows, but the limits are about rows nobody locks: two claimers that
 * both count 4 RUNNING tasks of a type capped at 5 would each take one. So
 * counting and claiming are serialized by GET_LOCK (one per database), held
 * from before the count until after COMMIT; the transaction is a handful of
 * indexed statements, so the lock is held for about a millisecond.
 */
import type { Task } from '../../core/task.js';
import { taskFromRow, type Row } from '../rows.js';
import type { ClaimParams } from '../types.js';
import { addMs, decode, type Conn, type MysqlDatabase } from './connection.js';
import { LEASED } from './sql.js';

interface Policy {
  maxConcurrency: number | null;
  enabled: boolean;
}

export async function claim(db: MysqlDatabase, conn: Conn, params: ClaimParams): Promise<Task[]> {
  const taskTypes = [...new Set(params.taskTypes)];
  const { now, policies } = await readPolicies(db, conn, taskTypes);
  const global = policies.get('GLOBAL');
  if (global && !global.enabled) return [];
  const leased = await db.rows(conn, `SELECT task_type, COUNT(*) AS n FROM system_async_task WHERE status IN ${LEASED} GROUP BY task_type`);
  const leasedByType = new Map(leased.map((row) => [String(row.task_type), Number(row.n)]));
  const leasedTotal = leased.reduce((sum, row) => sum + Number(row.n), 0);
  const room = Math.min(params.limit, (global?.maxConcurrency ?? params.globalConcurrency) - leasedTotal);
  if (room <= 0) return [];

  const perType: { taskType: string; limit: number }[] = [];
  for (const taskType of taskTypes) {
    const policy = policies.get(`TYPE:${taskType}`);
    if (policy && !policy.enabled) continue;
    const typeRoom = (policy?.maxConcurrency ?? params.typeConcurrency) - (leasedByType.get(taskType) ?? 0);
    if (typeRoom > 0) perType.push({ taskType, limit: Math.min(typeRoom, room) });
  }
  if (perType.length === 0) return [];
  const candidates = await lockCandidates(db, conn, perType, now);
  // Rows locked but not chosen are released at COMMIT, untouched.
  const chosen = candidates.sort(claimOrder).slice(0, room);
  if (chosen.length === 0) return [];

  const ids = chosen.map((row) => String(row.id));
  const leaseUntil = addMs(now, params.leaseMs);
  await db.exec(
    conn,
    `UPDATE system_async_task SET status = 'RUNNING', lease_owner = ?, lease_until = ?, attempt_count = attempt_count + 1,
       start_time = COALESCE(start_time, ?), update_time = ?
     WHERE id IN (?)`,
    [params.workerId, leaseUntil, now, now, ids],
  );
  await db.exec(conn, 'INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at) VALUES ?', [
    chosen.map((row) => [row.id, Number(row.attempt_count) + 1, params.workerId, now]),
  ]);
  // The rows are locked by us, so what we wrote is exactly the candidate plus these columns: no read-back needed.
  return chosen.map((row) =>
    taskFromRow(
      {
        ...row,
        status: 'RUNNING',
        lease_owner: params.workerId,
        lease_until: leaseUntil,
        attempt_count: Number(row.attempt_count) + 1,
        start_time: row.start_time ?? now,
        update_time: now,
      },
      decode,
    ),
  );
}

async function readPolicies(db: MysqlDatabase, conn: Conn, taskTypes: readonly string[]): Promise<{ now: string; policies: Map<string, Policy> }> {
  // LEFT JOIN from a one-row table: NOW(3) comes back even when no policy row exists.
  const rows = await db.rows(
    conn,
    `SELECT NOW(3) AS db_now, p.policy_key, p.max_concurrency, p.enabled
     FROM (SELECT 1 AS one) AS d LEFT JOIN system_async_task_policy p ON p.policy_key IN (?)`,
    [['GLOBAL', ...taskTypes.map((type) => `TYPE:${type}`)]],
  );
  const policies = new Map<string, Policy>();
  for (const row of rows) {
    if (row.policy_key === null || row.policy_key === undefined) continue;
    policies.set(String(row.policy_key), {
      maxConcurrency: row.max_concurrency === null ? null : Number(row.max_concurrency),
      enabled: Number(row.enabled) !== 0,
    });
  }
  return { now: String(rows[0]!.db_now), policies };
}

/** One UNION ALL of per-type SKIP LOCKED selects, each walking the claim index in claim order up to that type's free room. */
async function lockCandidates(db: MysqlDatabase, conn: Conn, perType: readonly { taskType: string; limit: number }[], now: string): Promise<Row[]> {
  const parts: string[] = [];
  const values: unknown[] = [];
  for (const { taskType, limit } of perType) {
    parts.push(`(SELECT * FROM system_async_task FORCE INDEX (ix_system_async_task_claim)
      WHERE claimable = 1 AND task_type = ? AND available_at <= ? AND (deadline_at IS NULL OR deadline_at > ?)
      ORDER BY priority DESC, available_at, create_time, id LIMIT ? FOR UPDATE SKIP LOCKED)`);
    values.push(taskType, now, now, limit);
  }
  return db.rows(conn, parts.join(' UNION ALL '), values);
}

/** priority desc, available_at, create_time, then id (UUIDv7: creation order) for a total order. */
function claimOrder(a: Row, b: Row): number {
  return (
    Number(b.priority) - Number(a.priority) ||
    compareText(a.available_at, b.available_at) ||
    compareText(a.create_time, b.create_time) ||
    compareText(a.id, b.id)
  );
}

function compareText(a: unknown, b: unknown): number {
  const left = String(a);
  const right = String(b);
  return left < right ? -1 : left > right ? 1 : 0;
}
