/**
 * Batched outcome writes: every outcome of a worker tick in one transaction of
 * two round trips. MariaDB's UPDATE has no RETURNING, so the fence is checked
 * up front: round trip 1 locks the tasks with SELECT … FOR UPDATE (in id
 * order, like every writer here) and the ones still held by the lease are
 * picked in code; round trip 2 writes only those — one UPDATE per kind, whose
 * WHERE repeats the fence and whose affected-row count must match — closes
 * their attempts, records failures and dead letters, and commits. The locks
 * guarantee nothing changes between the check and the write. finish-claim.ts
 * runs the same two steps around a claim (lockOutcomeRows, planOutcomes).
 */
import { StoreError } from '../../core/errors.js';
import { TaskStatus, TERMINAL_STATUSES } from '../../core/status.js';
import type { ResultSetHeader } from 'mysql2/promise';
import type { Row } from '../rows.js';
import {
  attemptOutcomeName,
  delayOf,
  hasFailure,
  isUncharged,
  isSuccess,
  LEASED_STATUSES_SET,
  LEASED_SQL,
  STATUS_SQL,
  statusAfterOutcome,
  SUCCESS_STATUSES,
} from '../rules/index.js';
import type { AttemptOutcome, FinishResult } from '../types.js';
import type { Statement, TransactionSteps } from './connection.js';
import { addMs } from './encode.js';
import { settle } from './flows.js';
import {
  caseById,
  closeAttemptsStatement,
  deadLetterInserts,
  insertDeadLettersStatement,
  insertFailuresStatement,
  joinAssignments,
  progressAssignments,
  sortedIds,
  valueById,
  type AttemptClose,
  type FailureInsert,
  type Fragment,
} from './sql.js';

export async function finishAttempts(tx: TransactionSteps, outcomes: readonly AttemptOutcome[]): Promise<FinishResult> {
  const [rows] = (await tx.step([lockOutcomeRows(outcomes)])) as Row[][];
  const plan = planOutcomes(outcomes, rows!);
  if (plan.writes.length === 0) return plan.result;
  if (plan.flowEnded.length === 0) {
    plan.check(await tx.last(plan.writes));
    return plan.result;
  }
  // A flow node ended: its children settle in the same transaction, before the commit (flows.ts).
  plan.check(await tx.step(plan.writes));
  const released = await settle(tx, plan.flowEnded);
  await tx.last([]);
  return released.length > 0 ? { ...plan.result, released } : plan.result;
}

/** Round trip 1 of an outcome write: the tasks' rows, locked in id order (task_type and owner: the slots they free). */
export function lockOutcomeRows(outcomes: readonly AttemptOutcome[]): Statement {
  const ids = sortedIds(outcomes.map((o) => o.lease.taskId));
  return {
    sql: `SELECT id, task_type, owner, status, lease_owner, attempt_count, lease_token, flow_id, sequence_key, NOW(3) AS db_now FROM system_async_task WHERE id IN (?) ORDER BY id FOR UPDATE`,
    values: [ids],
  };
}

/** What round trip 2 writes (with the COMMIT), and the check of what it wrote. */
export interface OutcomePlan {
  result: FinishResult;
  /** The rows (from lockOutcomeRows) whose lease the writes end. */
  ended: Row[];
  /** Tasks of a flow or a sequence these writes end for good: their children (their keys) settle before the commit. */
  flowEnded: string[];
  writes: Statement[];
  /** Throws unless the fenced UPDATEs (the first results of `writes`) changed exactly the rows decided on. */
  check(written: readonly unknown[]): void;
}

/** Decides, from the locked rows, which outcomes still hold their lease, and the writes for those. */
export function planOutcomes(outcomes: readonly AttemptOutcome[], rows: readonly Row[]): OutcomePlan {
  const none = (applied: boolean[]): OutcomePlan => ({ result: { applied, deadLetters: [] }, ended: [], flowEnded: [], writes: [], check: () => undefined });
  if (rows.length === 0) return none(outcomes.map(() => false));
  const now = String(rows[0]!.db_now);
  const current = new Map(rows.map((row) => [String(row.id), row]));
  const applied: boolean[] = [];
  const taken = new Set<string>();
  /** Outcomes by the status they lead to (rules/: a cancel request turns failures and hand-backs into CANCELLED). */
  const byTarget = new Map<TaskStatus, AttemptOutcome[]>();
  for (const outcome of outcomes) {
    const row = current.get(outcome.lease.taskId);
    const holds =
      row !== undefined &&
      !taken.has(outcome.lease.taskId) &&
      String(row.lease_owner) === outcome.lease.workerId &&
      Number(row.attempt_count) === outcome.lease.attempt &&
      String(row.lease_token) === outcome.lease.token &&
      LEASED_STATUSES_SET.has(String(row.status));
    applied.push(holds);
    if (!holds) continue;
    taken.add(outcome.lease.taskId);
    const target = statusAfterOutcome(outcome.kind, String(row.status) as TaskStatus);
    byTarget.set(target, [...(byTarget.get(target) ?? []), outcome]);
  }
  if (taken.size === 0) return none(applied);

  const won = outcomes.filter((_, index) => applied[index]);
  const closes: AttemptClose[] = won.map((o) => ({
    taskId: o.lease.taskId,
    attempt: o.lease.attempt,
    outcome: attemptOutcomeName(o.kind),
    errorCode: hasFailure(o) ? o.failure.errorCode : null,
  }));
  const failures: FailureInsert[] = won.flatMap((o) => (hasFailure(o) ? [{ taskId: o.lease.taskId, attempt: o.lease.attempt, failure: o.failure }] : []));
  const failedForGood = new Set((byTarget.get(TaskStatus.FAILED) ?? []).map((o) => o.lease.taskId));
  const letters = deadLetterInserts(failures.filter((f) => failedForGood.has(f.taskId)));
  const groups = [...byTarget];
  const statements: Statement[] = groups.map(([target, group]) => updateTasks(target, group, now));
  const writes = [
    ...statements,
    ...[closeAttemptsStatement(closes, now), insertFailuresStatement(failures, now), insertDeadLettersStatement(letters, now)].filter(
      (s): s is Statement => s !== null,
    ),
  ];
  // An assertion, not the decision: the locked read above decided, and under its row locks the fenced UPDATEs
  // match exactly those rows. A mismatch would mean the locking contract broke; it is reported, never ignored.
  const check = (written: readonly unknown[]): void =>
    groups.forEach(([, group], index) => {
      const affected = (written[index] as ResultSetHeader).affectedRows;
      if (affected !== group.length) throw new StoreError(`MySQL store: a fenced outcome write changed ${affected} rows, expected ${group.length}`);
    });
  const result = { applied, deadLetters: letters.map((l) => ({ taskId: l.taskId, deadLetterId: l.deadLetterId })) };
  const flowEnded = [...byTarget]
    .filter(([target]) => TERMINAL_STATUSES.includes(target))
    .flatMap(([, group]) => group.map((o) => o.lease.taskId))
    // Only a task in a flow has edges to settle (every task an edge names is in one), only a sequenced one a key.
    .filter((id) => current.get(id)!.flow_id != null || current.get(id)!.sequence_key != null);
  return { result, ended: [...taken].map((id) => current.get(id)!), flowEnded, writes, check };
}

/** One UPDATE for every task going to one status, fenced (lease owner, attempt, token, leased status); per-task values through valueById. */
function updateTasks(target: TaskStatus, group: readonly AttemptOutcome[], now: string): Statement {
  const sets: (Fragment | string)[] = [`status = ${STATUS_SQL[target]}`, 'lease_owner = NULL', 'lease_until = NULL', { sql: 'update_time = ?', values: [now] }];
  if (TERMINAL_STATUSES.includes(target)) sets.push({ sql: 'finish_time = ?', values: [now] });
  if (SUCCESS_STATUSES.includes(target)) {
    sets.push(
      'last_error_code = NULL', // a success clears the task's last error (rules/outcomes.ts lastErrorCodeSql)
      valueById(
        'artifact_id',
        group.map((o) => [o.lease.taskId, isSuccess(o) ? o.artifactId : null] as const),
      ),
      valueById(
        'result_json',
        group.map((o) => [o.lease.taskId, isSuccess(o) ? o.resultJson : null] as const),
      ),
    );
  }
  if (target !== TaskStatus.CANCELLED) {
    // RETRY and SNOOZED say when the task may run again; a hand-back keeps its place in the queue.
    const delayed = group.flatMap((o) => {
      const delay = delayOf(o);
      return delay === null ? [] : [[o.lease.taskId, addMs(now, delay)] as const];
    });
    if (delayed.length === group.length) sets.push(valueById('available_at', delayed));
    else if (delayed.length > 0) sets.push(caseById('available_at', delayed));
  }
  const uncharged = group.filter((o) => isUncharged(o.kind)).map((o) => o.lease.taskId);
  if (uncharged.length === group.length)
    sets.push('attempt_base = attempt_base + 1'); // rules/outcomes.ts attemptBaseAfterSql
  else if (uncharged.length > 0) sets.push({ sql: 'attempt_base = attempt_base + CASE WHEN id IN (?) THEN 1 ELSE 0 END', values: [uncharged] });
  const failing = group.filter(hasFailure).map((o) => [o.lease.taskId, o.failure.errorCode.slice(0, 250)] as const);
  if (failing.length === group.length) sets.push(valueById('last_error_code', failing));
  else if (failing.length > 0) sets.push(caseById('last_error_code', failing));
  sets.push(...progressAssignments(group.map((o) => [o.lease.taskId, o.progress] as const)));
  const assignments = joinAssignments(sets);
  // The fence repeats what the locked read checked: no row outside it can be written, whatever happens.
  return {
    sql: `UPDATE system_async_task SET ${assignments.sql}
     WHERE id IN (?) AND (id, lease_owner, attempt_count, lease_token) IN (?) AND status IN ${LEASED_SQL}`,
    values: [...assignments.values, group.map((o) => o.lease.taskId), group.map((o) => [o.lease.taskId, o.lease.workerId, o.lease.attempt, o.lease.token])],
  };
}
