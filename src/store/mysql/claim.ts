/**
 * The MySQL/MariaDB claim: one short transaction under a named lock, in two
 * round trips.
 *
 * Why a lock at all, with SKIP LOCKED? SKIP LOCKED keeps claimers off each
 * other's rows, but the limits are about rows nobody locks: two claimers that
 * both count 4 RUNNING tasks of a type capped at 5 would each take one. So
 * counting and claiming are serialized by GET_LOCK (one per database), held
 * from before the count until after COMMIT.
 *
 * Round trip 1: GET_LOCK, BEGIN, the clock into @tasklease_now (one reading
 * for the whole claim), one read of policies + leased
 * counts, and the candidates (SKIP LOCKED). The candidates are read before
 * the counts are known, so each type asks for as many as its cap could allow
 * (the last policies seen, else the defaults); the fresh counts and policies
 * then decide, in code, how many are taken. A type whose fresh policy allows
 * more than was asked for (a cap raised since) is read again at once, so a
 * policy change still applies on the very next claim. Round trip 2: the
 * UPDATE, the attempt rows, COMMIT and RELEASE_LOCK.
 */
import { GLOBAL_POLICY_KEY, typePolicyKey } from '../../core/policy-keys.js';
import { TaskStatus } from '../../core/status.js';
import type { Task } from '../../core/task.js';
import { claimOrder } from '../claim-order.js';
import { taskFromRow, type Row } from '../rows.js';
import { LEASED_SQL, STATUS_SQL } from '../rules/index.js';
import type { ClaimParams } from '../types.js';
import type { BatchedTransaction, Statement } from './connection.js';
import { addMs, decode } from './encode.js';

interface Policy {
  maxConcurrency: number | null;
  enabled: boolean;
}

/** Policy caps (policy_key → max_concurrency) seen by the last claim: only how many candidates to ask for. */
export type CapCache = Map<string, number | null>;

export async function claim(tx: BatchedTransaction, params: ClaimParams, caps: CapCache): Promise<Task[]> {
  const taskTypes = [...new Set(params.taskTypes)];
  const asked = new Map(taskTypes.map((taskType) => [taskType, guessRoom(params, caps, taskType)]));
  const statements = [{ sql: 'SET @tasklease_now = NOW(3)' }, stateStatement(taskTypes), ...taskTypes.map((t) => candidatesStatement(t, asked.get(t)!))];
  const [, stateRows, ...candidateSets] = (await tx.step(statements)) as Row[][];
  const { now, policies, leasedByType, leasedTotal } = readState(stateRows!);
  rememberCaps(caps, taskTypes, policies);
  const global = policies.get(GLOBAL_POLICY_KEY);
  if (global && !global.enabled) return [];
  const room = Math.min(params.limit, (global?.maxConcurrency ?? params.globalConcurrency) - leasedTotal);
  if (room <= 0) return [];

  const candidates: Row[] = [];
  const reread: { taskType: string; allowed: number }[] = [];
  taskTypes.forEach((taskType, index) => {
    const policy = policies.get(typePolicyKey(taskType));
    if (policy && !policy.enabled) return;
    const allowed = Math.min(room, (policy?.maxConcurrency ?? params.typeConcurrency) - (leasedByType.get(taskType) ?? 0));
    if (allowed <= 0) return;
    const found = candidateSets[index]!;
    // Fewer rows than asked for: that was every claimable row of the type. As many: there may be more.
    if (allowed > asked.get(taskType)! && found.length === asked.get(taskType)!) reread.push({ taskType, allowed });
    else candidates.push(...found.slice(0, allowed));
  });
  if (reread.length > 0) {
    // Our own locks are not skipped: the rows read before come back, in the same order, with the ones after them.
    const sets = (await tx.step(reread.map(({ taskType, allowed }) => candidatesStatement(taskType, allowed)))) as Row[][];
    sets.forEach((rows) => candidates.push(...rows));
  }
  // Rows locked but not chosen are released at COMMIT, untouched.
  const chosen = candidates.sort(claimOrder).slice(0, room);
  if (chosen.length === 0) return [];

  const ids = chosen.map((row) => String(row.id));
  const leaseUntil = addMs(now, params.leaseMs);
  await tx.last([
    {
      sql: `UPDATE system_async_task SET status = ${STATUS_SQL.RUNNING}, lease_owner = ?, lease_until = ?, attempt_count = attempt_count + 1,
       start_time = COALESCE(start_time, ?), update_time = ?
     WHERE id IN (?)`,
      values: [params.workerId, leaseUntil, now, now, ids],
    },
    {
      sql: 'INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at) VALUES ?',
      values: [chosen.map((row) => [row.id, Number(row.attempt_count) + 1, params.workerId, now])],
    },
  ]);
  // The rows are locked by us, so what we wrote is exactly the candidate plus these columns: no read-back needed.
  return chosen.map((row) =>
    taskFromRow(
      {
        ...row,
        status: TaskStatus.RUNNING,
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

/** How many candidates of a type to lock before the counts are known: what its cap (as last seen) could allow. */
function guessRoom(params: ClaimParams, caps: CapCache, taskType: string): number {
  const typeKey = typePolicyKey(taskType);
  const typeCap = caps.has(typeKey) ? (caps.get(typeKey) ?? params.typeConcurrency) : params.typeConcurrency;
  const globalCap = caps.has(GLOBAL_POLICY_KEY) ? (caps.get(GLOBAL_POLICY_KEY) ?? params.globalConcurrency) : params.globalConcurrency;
  return Math.max(0, Math.min(params.limit, typeCap, globalCap));
}

function rememberCaps(caps: CapCache, taskTypes: readonly string[], policies: Map<string, Policy>): void {
  for (const key of [GLOBAL_POLICY_KEY, ...taskTypes.map(typePolicyKey)]) {
    const policy = policies.get(key);
    if (policy) caps.set(key, policy.maxConcurrency);
    else caps.delete(key);
  }
}

/**
 * The clock, the policies and the leased counts in one read. The counts walk
 * ix_system_async_task_leased (status first): only RUNNING and
 * CANCEL_REQUESTED rows, whatever the size of the backlog or the history.
 */
function stateStatement(taskTypes: readonly string[]): Statement {
  return {
    sql: `SELECT 'now' AS kind, @tasklease_now AS k, NULL AS n, NULL AS enabled
     UNION ALL SELECT 'policy', policy_key, max_concurrency, enabled FROM system_async_task_policy WHERE policy_key IN (?)
     UNION ALL SELECT 'leased', task_type, COUNT(*), NULL FROM system_async_task FORCE INDEX (ix_system_async_task_leased)
       WHERE status IN ${LEASED_SQL} GROUP BY task_type`,
    values: [[GLOBAL_POLICY_KEY, ...taskTypes.map(typePolicyKey)]],
  };
}

function readState(rows: readonly Row[]): { now: string; policies: Map<string, Policy>; leasedByType: Map<string, number>; leasedTotal: number } {
  let now = '';
  const policies = new Map<string, Policy>();
  const leasedByType = new Map<string, number>();
  let leasedTotal = 0;
  for (const row of rows) {
    if (row.kind === 'now') now = String(row.k);
    else if (row.kind === 'policy') {
      policies.set(String(row.k), { maxConcurrency: row.n === null ? null : Number(row.n), enabled: Number(row.enabled) !== 0 });
    } else {
      leasedByType.set(String(row.k), Number(row.n));
      leasedTotal += Number(row.n);
    }
  }
  return { now, policies, leasedByType, leasedTotal };
}

/** One type's SKIP LOCKED select, walking the claim index in claim order; due and deadline judged by the claim's one clock reading. */
/** A type's claimable rows in claim order, locked (explain.ts shows its plan). Reads @tasklease_now. */
export function candidatesStatement(taskType: string, limit: number): Statement {
  return {
    sql: `SELECT * FROM system_async_task FORCE INDEX (ix_system_async_task_claim)
      WHERE claimable = 1 AND task_type = ? AND available_at <= @tasklease_now AND (deadline_at IS NULL OR deadline_at > @tasklease_now)
      ORDER BY priority DESC, available_at, create_time, id LIMIT ? FOR UPDATE SKIP LOCKED`,
    values: [taskType, limit],
  };
}
