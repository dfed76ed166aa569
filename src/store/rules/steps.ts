/**
 * Durable steps (ctx.step, worker/steps.ts): the rules every store keeps for
 * system_async_task_step.
 *
 * - A step is recorded only under its lease's fence with an unexpired lease
 *   (as progress is, leases.ts): a zombie whose lease was lost records
 *   nothing. The task row is locked (or, on SQLite, the write lock held) while
 *   the fence is judged, so a sweep that takes the lease away cannot commit
 *   between the judgement and the insert: the next attempt reads every step
 *   the earlier one recorded.
 * - Unique per (task, cycle, name). A second record of a name in the same
 *   cycle keeps the first (its result wins; the answer is still "recorded"
 *   while the lease holds): a step is never recorded twice.
 * - Cycle 0 is the task's current attempt cycle, the only one ctx.step replays.
 *   A new cycle (an operator's retry of a FAILED task, a dead letter's replay:
 *   changes.ts newCycle) ends the old one in the same transaction: its steps'
 *   cycle becomes the task's attempt count then, which is ≥ 1 and grows from
 *   one cycle to the next (a cycle with steps ran at least one attempt), so
 *   ended cycles never collide with each other or with cycle 0. Hand-backs,
 *   snoozes, retries and lease expiries stay in the cycle: they resume.
 */

/** The cycle ctx.step reads and writes. */
export const CURRENT_CYCLE = 0;

/** The assignment that ends a task's current cycle of steps, given its attempt count (SQL text: a column or a placeholder). */
export function endStepCycleSql(attemptCount: string): string {
  return `cycle = ${attemptCount}`;
}

/**
 * A step's place in its cycle (1, 2, …): one more than the steps the cycle holds, counted while the task row is
 * locked, so records of one task count in turn. (On PostgreSQL two records of one execution that race may read the
 * same count: their order is then the record time's, then the name's. It orders a listing; it is no key.)
 */
export function nextStepSeqSql(stepTable: string, taskId: string): string {
  return `(SELECT COUNT(*) + 1 FROM ${stepTable} WHERE task_id = ${taskId} AND cycle = ${CURRENT_CYCLE})`;
}

/** Order of a step listing, oldest first: ended cycles in their order, then the current one; within one, as recorded. */
export const STEP_ORDER_SQL = `CASE WHEN cycle = ${CURRENT_CYCLE} THEN 1 ELSE 0 END, cycle, seq, recorded_at, name`;
