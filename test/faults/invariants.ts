/**
 * FAULTS.md's invariants, checked through the Store's own reads (so on every
 * dialect alike) and the handlers' tables after a case (and at the end of a
 * chaos run):
 *
 * - I1 No loss: every acknowledged task is there, in a known status.
 * - I2 One owner: at most one SUCCESS attempt per task, and a succeeded
 *   task's effect was written by that attempt (the final lease holder).
 * - I3 Fencing is checked by the cases themselves (a stale write changes
 *   0 rows, the stale handler is aborted): it needs to know who is stale.
 * - I4 Progress: once lease + sweep time has passed, no task is RUNNING on
 *   an expired lease (the check waits that long for the sweep).
 * - I5 Counts reconcile: acknowledged = completed + dead + cancelled +
 *   pending, no task spent more attempts than it may, and every FAILED task
 *   has its dead letter.
 *
 * The second half of I2 (the effect is the final attempt's) is reported as
 * a known gap, not a violation, until a handler can write its effect in the
 * transaction of its fenced completion (issue 11, "exactly-once effects"):
 * today an effect and its completion are two transactions, so a handler
 * frozen or cut off between them can write an effect its lease no longer
 * covers. Tasks whose effect was written more than once are counted too.
 */
import { ALL_STATUSES, type TaskStatus } from '../../src/core/status.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { waitFor } from '../helpers/wait.js';
import type { HandlerTables } from './handler-tables.js';

export interface InvariantReport {
  violations: string[];
  /** What FAULTS.md asks for and tasklease cannot promise yet (see above). */
  knownGaps: string[];
  figures: {
    acknowledged: number;
    byStatus: Record<string, number>;
    failedBy: Record<string, number>;
    /** Attempts the tasks started (their attempt counts summed). */
    attempts: number;
    executions: number;
    repeatedEffects: number;
  };
}

const G = Scope.global();
const LEASED: TaskStatus[] = ['RUNNING', 'CANCEL_REQUESTED'];
const SUCCEEDED = new Set(['SUCCESS', 'PARTIAL_SUCCESS']);

export async function checkInvariants(
  store: Store,
  tables: HandlerTables,
  acknowledged: readonly string[],
  timing: { leaseMs: number; recoveryIntervalMs: number },
): Promise<InvariantReport> {
  const violations: string[] = [];
  const knownGaps: string[] = [];
  // I4 first: it may wait for the sweep, and the counts below should see its result.
  const settleMs = timing.leaseMs + timing.recoveryIntervalMs + 10_000;
  const stuck = async () => {
    const now = (await store.now()).getTime();
    return (await allTasks(store, LEASED)).filter((task) => task.leaseUntil !== null && task.leaseUntil.getTime() < now).length;
  };
  await waitFor(async () => (await stuck()) === 0, 'no expired lease', settleMs, 200).catch(async () =>
    violations.push(`I4: ${await stuck()} task(s) still RUNNING on an expired lease ${settleMs} ms later`),
  );

  const tasks = await allTasks(store);
  const found = new Map(tasks.map((task) => [task.id, task]));
  const missing = acknowledged.filter((id) => !found.has(id));
  if (missing.length > 0) violations.push(`I1: ${missing.length} acknowledged task(s) missing, e.g. ${missing.slice(0, 3).join(', ')}`);
  const wanted = new Set(acknowledged);
  const rows = tasks.filter((task) => wanted.has(task.id));
  const unknown = rows.filter((row) => !(ALL_STATUSES as readonly string[]).includes(row.status));
  if (unknown.length > 0) violations.push(`I1: ${unknown.length} task(s) in an unknown status`);

  // Only a task that started more than one attempt can have two SUCCESS attempts.
  const doubleSuccess: string[] = [];
  for (const task of tasks.filter((t) => t.attemptCount > 1)) {
    if ((await store.listAttempts({ taskId: task.id })).filter((a) => a.outcome !== null && SUCCEEDED.has(a.outcome)).length > 1) doubleSuccess.push(task.id);
  }
  if (doubleSuccess.length > 0) violations.push(`I2: ${doubleSuccess.length} task(s) with two SUCCESS attempts, e.g. ${doubleSuccess[0]}`);
  const effects = await tables.effects();
  const effectOf = new Map(effects.map((e) => [e.taskId, e.attempt]));
  const wrongEffect = tasks.filter((t) => t.status === 'SUCCESS' && effectOf.get(t.id) !== t.attemptCount);
  if (wrongEffect.length > 0) {
    const example = { id: wrongEffect[0]!.id, attempt_count: wrongEffect[0]!.attemptCount, effect: effectOf.get(wrongEffect[0]!.id) ?? null };
    knownGaps.push(`I2 (effects): ${wrongEffect.length} succeeded task(s) whose effect is not the final attempt's, e.g. ${JSON.stringify(example)}`);
  }

  const byStatus: Record<string, number> = {};
  for (const row of rows) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
  if (rows.length !== acknowledged.length) violations.push(`I5: acknowledged ${acknowledged.length} ≠ counted ${rows.length}`);
  const overspent = rows.filter((row) => row.attemptCount - row.attemptBase > row.maxAttempts);
  if (overspent.length > 0) {
    const { id, attemptCount, attemptBase, maxAttempts } = overspent[0]!;
    violations.push(
      `I5: ${overspent.length} task(s) ran more attempts than max_attempts, e.g. ${JSON.stringify({ id, attemptCount, attemptBase, maxAttempts })}`,
    );
  }
  const lettered = new Set((await allDeadLetters(store)).map((letter) => letter.originalTaskId));
  const noLetter = tasks.filter((t) => t.status === 'FAILED' && !lettered.has(t.id));
  if (noLetter.length > 0) violations.push(`I5: ${noLetter.length} FAILED task(s) without a dead letter`);

  const failedBy: Record<string, number> = {};
  for (const task of tasks.filter((t) => t.status === 'FAILED')) failedBy[task.lastErrorCode ?? 'none'] = (failedBy[task.lastErrorCode ?? 'none'] ?? 0) + 1;
  return {
    violations,
    knownGaps,
    figures: {
      acknowledged: acknowledged.length,
      byStatus,
      failedBy,
      attempts: tasks.reduce((sum, t) => sum + t.attemptCount, 0),
      executions: await tables.executions(),
      repeatedEffects: effects.filter((e) => e.writes > 1).length,
    },
  };
}

/** Every task (in `statuses`), page by page. */
export async function allTasks(store: Store, statuses: readonly TaskStatus[] | null = null): Promise<Task[]> {
  const tasks: Task[] = [];
  for (let cursor: string | null = null; ;) {
    const page = await store.listTasks({ scope: G, status: statuses, limit: 1000, cursor });
    tasks.push(...page.tasks);
    if (page.nextCursor === null) return tasks;
    cursor = page.nextCursor;
  }
}

/** Every dead letter, page by page (newest first: the cursor is the last id seen). */
async function allDeadLetters(store: Store): Promise<{ originalTaskId: string }[]> {
  const letters: { id: string; originalTaskId: string }[] = [];
  for (let cursor: string | null = null; ;) {
    const page = await store.listDeadLetters({ scope: G, limit: 1000, cursor });
    letters.push(...page);
    if (page.length < 1000) return letters;
    cursor = page[page.length - 1]!.id;
  }
}
