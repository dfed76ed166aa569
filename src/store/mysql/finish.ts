/**
 * Batched outcome writes: every outcome of a worker tick in one transaction of
 * two round trips. MariaDB's UPDATE has no RETURNING, so the fence is checked
 * up front: round trip 1 locks the tasks with SELECT … FOR UPDATE (in id
 * order, like every writer here) and the ones still held by the lease are
 * picked in code; round trip 2 writes only those — one UPDATE per kind, whose
 * WHERE repeats the fence and whose affected-row count must match — closes
 * their attempts, records failures and dead letters, and commits. The locks
 * guarantee nothing changes between the check and the write.
 */
import { StoreError } from '../../core/errors.js';
import type { ResultSetHeader } from 'mysql2/promise';
import type { AttemptOutcome } from '../types.js';
import { addMs, type BatchedTransaction, type Statement } from './connection.js';
import {
  closeAttemptsStatement, insertDeadLettersStatement, insertFailuresStatement, joinAssignments, LEASED, progressAssignments, sortedIds,
  valueById, type AttemptClose, type FailureInsert, type Fragment,
} from './sql.js';
import type { Row } from '../rows.js';

type Kind = AttemptOutcome['kind'];

export async function finishAttempts(tx: BatchedTransaction, outcomes: readonly AttemptOutcome[]): Promise<boolean[]> {
  const ids = sortedIds(outcomes.map((o) => o.lease.taskId));
  const [rows] = (await tx.step([
    {
      sql: `SELECT id, status, lease_owner, attempt_count, NOW(3) AS db_now FROM system_async_task WHERE id IN (?) ORDER BY id FOR UPDATE`,
      values: [ids],
    },
  ])) as Row[][];
  if (rows!.length === 0) return outcomes.map(() => false);
  const now = String(rows![0]!.db_now);
  const current = new Map(rows!.map((row) => [String(row.id), row]));
  const applied: boolean[] = [];
  const taken = new Set<string>();
  const cancelledInstead = new Set<string>();
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
    // CANCEL_REQUESTED may only end CANCELLED (or in success): a failure or hand-back on it cancels it,
    // the failure still recorded (the same rule as the other stores).
    const kind: Kind = row.status === 'CANCEL_REQUESTED' && (outcome.kind === 'RETRY' || outcome.kind === 'FAILED' || outcome.kind === 'ABANDONED')
      ? 'CANCELLED' : outcome.kind;
    if (kind !== outcome.kind) cancelledInstead.add(outcome.lease.taskId);
    byKind.set(kind, [...(byKind.get(kind) ?? []), outcome]);
  }
  if (taken.size === 0) return applied;

  const won = outcomes.filter((_, index) => applied[index]);
  const closes: AttemptClose[] = won.map((o) => ({
    taskId: o.lease.taskId,
    attempt: o.lease.attempt,
    outcome: o.kind === 'RETRY' ? 'FAILED' : o.kind,
    errorCode: o.kind === 'RETRY' || o.kind === 'FAILED' ? o.failure.errorCode : null,
  }));
  const failures: FailureInsert[] = won.flatMap((o) =>
    o.kind === 'RETRY' || o.kind === 'FAILED' ? [{ taskId: o.lease.taskId, attempt: o.lease.attempt, failure: o.failure }] : [],
  );
  const failedForGood = new Set(won.filter((o) => o.kind === 'FAILED' && !cancelledInstead.has(o.lease.taskId)).map((o) => o.lease.taskId));
  const groups = [...byKind];
  const statements: Statement[] = groups.map(([kind, group]) => updateTasks(kind, group, now));
  const written = await tx.last([
    ...statements,
    ...[closeAttemptsStatement(closes, now), insertFailuresStatement(failures, now),
      insertDeadLettersStatement(failures.filter((f) => failedForGood.has(f.taskId)), now)].filter((s): s is Statement => s !== null),
  ]);
  // An assertion, not the decision: the locked read above decided, and under its row locks the fenced UPDATEs
  // match exactly those rows. A mismatch would mean the locking contract broke; it is reported, never ignored.
  groups.forEach(([, group], index) => {
    const affected = (written[index] as ResultSetHeader).affectedRows;
    if (affected !== group.length) throw new StoreError(`MySQL store: a fenced outcome write changed ${affected} rows, expected ${group.length}`);
  });
  return applied;
}

/** One UPDATE for every task of one kind, fenced (lease owner, attempt, leased status); per-task values through valueById. */
function updateTasks(kind: Kind, group: readonly AttemptOutcome[], now: string): Statement {
  const sets: (Fragment | string)[] = ['lease_owner = NULL', 'lease_until = NULL', { sql: 'update_time = ?', values: [now] }];
  switch (kind) {
    case 'SUCCESS':
    case 'PARTIAL_SUCCESS':
      sets.push(
        { sql: 'status = ?, finish_time = ?', values: [kind, now] },
        valueById('artifact_id', group.map((o) => [o.lease.taskId, o.kind === kind ? o.artifactId : null] as const)),
        valueById('result_json', group.map((o) => [o.lease.taskId, o.kind === 'SUCCESS' || o.kind === 'PARTIAL_SUCCESS' ? o.resultJson : null] as const)),
      );
      break;
    case 'RETRY':
      sets.push(
        "status = 'RETRY_WAIT'",
        valueById('available_at', group.map((o) => [o.lease.taskId, o.kind === 'RETRY' ? addMs(now, Math.max(0, o.retryDelayMs)) : now] as const)),
        valueById('last_error_code', group.map((o) => [o.lease.taskId, o.kind === 'RETRY' ? o.failure.errorCode.slice(0, 250) : null] as const)),
      );
      break;
    case 'FAILED':
      sets.push(
        { sql: "status = 'FAILED', finish_time = ?", values: [now] },
        valueById('last_error_code', group.map((o) => [o.lease.taskId, o.kind === 'FAILED' ? o.failure.errorCode.slice(0, 250) : null] as const)),
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
  // The fence repeats what the locked read checked: no row outside it can be written, whatever happens.
  return {
    sql: `UPDATE system_async_task SET ${assignments.sql}
     WHERE id IN (?) AND (id, lease_owner, attempt_count) IN (?) AND status IN ${LEASED}`,
    values: [...assignments.values, group.map((o) => o.lease.taskId), group.map((o) => [o.lease.taskId, o.lease.workerId, o.lease.attempt])],
  };
}
