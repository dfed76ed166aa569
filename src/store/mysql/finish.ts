/**
 * Batched outcome writes: every outcome of a worker tick in one transaction,
 * one UPDATE per kind. MariaDB's UPDATE has no RETURNING, so the fence is
 * checked up front: the tasks are locked with SELECT … FOR UPDATE (in id
 * order, like every writer here), the ones still held by the lease are picked
 * in code, and only those are written — the locks guarantee nothing changes
 * between the check and the write.
 */
import { ValidationError } from '../../core/errors.js';
import type { AttemptOutcome } from '../types.js';
import { addMs, type Conn, type MysqlDatabase } from './connection.js';
import {
  caseById, closeAttempts, insertDeadLetters, insertFailures, joinAssignments, progressAssignments, sortedIds,
  type AttemptClose, type FailureInsert, type Fragment,
} from './sql.js';

type Kind = AttemptOutcome['kind'];

export async function finishAttempts(db: MysqlDatabase, conn: Conn, outcomes: readonly AttemptOutcome[]): Promise<boolean[]> {
  const results = serializedResults(outcomes);
  const ids = sortedIds(outcomes.map((o) => o.lease.taskId));
  const rows = await db.rows(
    conn,
    `SELECT id, status, lease_owner, attempt_count, NOW(3) AS db_now FROM system_async_task WHERE id IN (?) ORDER BY id FOR UPDATE`,
    [ids],
  );
  if (rows.length === 0) return outcomes.map(() => false);
  const now = String(rows[0]!.db_now);
  const current = new Map(rows.map((row) => [String(row.id), row]));
  const applied: boolean[] = [];
  const taken = new Set<string>();
  const byKind = new Map<Kind, AttemptOutcome[]>();
  for (const outcome of outcomes) {
    const row = current.get(outcome.lease.taskId);
    const holds =
      row !== undefined &&
      !taken.has(outcome.lease.taskId) &&
      String(row.lease_owner) === outcome.lease.workerId &&
      Number(row.attempt_count) === outcome.lease.attempt &&
      (row.status === 'RUNNING' || row.status === 'CANCEL_REQUESTED');
    applied.push(holds);
    if (!holds) continue;
    taken.add(outcome.lease.taskId);
    byKind.set(outcome.kind, [...(byKind.get(outcome.kind) ?? []), outcome]);
  }
  for (const [kind, group] of byKind) await updateTasks(db, conn, kind, group, now, results);

  const won = outcomes.filter((_, index) => applied[index]);
  const closes: AttemptClose[] = won.map((o) => ({
    taskId: o.lease.taskId,
    attempt: o.lease.attempt,
    outcome: o.kind === 'RETRY' ? 'FAILED' : o.kind,
    errorCode: o.kind === 'RETRY' || o.kind === 'FAILED' ? o.failure.errorCode : null,
  }));
  await closeAttempts(db, conn, closes, now);
  const failures: FailureInsert[] = won.flatMap((o) =>
    o.kind === 'RETRY' || o.kind === 'FAILED' ? [{ taskId: o.lease.taskId, attempt: o.lease.attempt, failure: o.failure }] : [],
  );
  await insertFailures(db, conn, failures, now);
  const failedForGood = new Set(won.filter((o) => o.kind === 'FAILED').map((o) => o.lease.taskId));
  await insertDeadLetters(db, conn, failures.filter((f) => failedForGood.has(f.taskId)), now);
  return applied;
}

/** One UPDATE for every task of one kind; per-task values through CASE id. */
async function updateTasks(
  db: MysqlDatabase, conn: Conn, kind: Kind, group: readonly AttemptOutcome[], now: string, results: Map<AttemptOutcome, string | null>,
): Promise<void> {
  const ids = group.map((o) => o.lease.taskId);
  const sets: (Fragment | string)[] = ['lease_owner = NULL', 'lease_until = NULL', { sql: 'update_time = ?', values: [now] }];
  switch (kind) {
    case 'SUCCESS':
    case 'PARTIAL_SUCCESS':
      sets.push(
        { sql: 'status = ?, finish_time = ?', values: [kind, now] },
        caseById('artifact_id', group.map((o) => [o.lease.taskId, o.kind === kind ? o.artifactId : null] as const)),
        caseById('result_json', group.map((o) => [o.lease.taskId, results.get(o) ?? null] as const)),
      );
      break;
    case 'RETRY':
      sets.push(
        "status = 'RETRY_WAIT'",
        caseById('available_at', group.map((o) => [o.lease.taskId, o.kind === 'RETRY' ? addMs(now, Math.max(0, o.retryDelayMs)) : now] as const)),
        caseById('last_error_code', group.map((o) => [o.lease.taskId, o.kind === 'RETRY' ? o.failure.errorCode.slice(0, 250) : null] as const)),
      );
      break;
    case 'FAILED':
      sets.push(
        { sql: "status = 'FAILED', finish_time = ?", values: [now] },
        caseById('last_error_code', group.map((o) => [o.lease.taskId, o.kind === 'FAILED' ? o.failure.errorCode.slice(0, 250) : null] as const)),
      );
      break;
    case 'CANCELLED':
      sets.push({ sql: "status = 'CANCELLED', finish_time = ?", values: [now] });
      break;
    case 'ABANDONED':
      sets.push("status = 'QUEUED'");
      break;
  }
  sets.push(...progressAssignments(group.map((o) => [o.lease.taskId, o.progress] as const)));
  const assignments = joinAssignments(sets);
  await db.exec(conn, `UPDATE system_async_task SET ${assignments.sql} WHERE id IN (?)`, [...assignments.values, ids]);
}

/** Results serialized before the transaction: a result that is not JSON fails the call, not half a batch. */
function serializedResults(outcomes: readonly AttemptOutcome[]): Map<AttemptOutcome, string | null> {
  const results = new Map<AttemptOutcome, string | null>();
  outcomes.forEach((outcome, index) => {
    if (outcome.kind !== 'SUCCESS' && outcome.kind !== 'PARTIAL_SUCCESS') return;
    if (outcome.result === undefined || outcome.result === null) return void results.set(outcome, null);
    try {
      results.set(outcome, JSON.stringify(outcome.result) ?? null);
    } catch (error) {
      throw new ValidationError(`outcomes[${index}].result cannot be serialized as JSON`, `outcomes[${index}].result`, undefined, { cause: error });
    }
  });
  return results;
}
