/**
 * FAULTS.md's invariants, checked with SQL against the test cluster after a
 * case (and at the end of a chaos run):
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
import { ALL_STATUSES } from '../../src/core/status.js';
import { waitFor } from '../helpers/wait.js';

export type Query = <R extends Record<string, unknown>>(sql: string, values?: unknown[]) => Promise<R[]>;

export interface InvariantReport {
  violations: string[];
  /** What FAULTS.md asks for and tasklease cannot promise yet (see above). */
  knownGaps: string[];
  figures: {
    acknowledged: number;
    byStatus: Record<string, number>;
    failedBy: Record<string, number>;
    attempts: number;
    executions: number;
    repeatedEffects: number;
  };
}

const t = (schema: string, table: string) => `"${schema}".${table}`;

export async function checkInvariants(
  query: Query,
  schema: string,
  acknowledged: readonly string[],
  timing: { leaseMs: number; recoveryIntervalMs: number },
): Promise<InvariantReport> {
  const violations: string[] = [];
  const knownGaps: string[] = [];
  const task = t(schema, 'system_async_task');
  // I4 first: it may wait for the sweep, and the counts below should see its result.
  const settleMs = timing.leaseMs + timing.recoveryIntervalMs + 10_000;
  const stuck = async () =>
    Number((await query<{ n: string }>(`SELECT count(*) AS n FROM ${task} WHERE status IN ('RUNNING', 'CANCEL_REQUESTED') AND lease_until < now()`))[0]!.n);
  await waitFor(async () => (await stuck()) === 0, 'no expired lease', settleMs, 200).catch(async () =>
    violations.push(`I4: ${await stuck()} task(s) still RUNNING on an expired lease ${settleMs} ms later`),
  );

  const rows = await query<{ id: string; status: string; attempts: number; base: number; max: number }>(
    `SELECT id, status, attempt_count AS attempts, attempt_base AS base, max_attempts AS max FROM ${task} WHERE id = ANY($1)`,
    [acknowledged],
  );
  const found = new Map(rows.map((row) => [row.id, row]));
  const missing = acknowledged.filter((id) => !found.has(id));
  if (missing.length > 0) violations.push(`I1: ${missing.length} acknowledged task(s) missing, e.g. ${missing.slice(0, 3).join(', ')}`);
  const unknown = rows.filter((row) => !(ALL_STATUSES as readonly string[]).includes(row.status));
  if (unknown.length > 0) violations.push(`I1: ${unknown.length} task(s) in an unknown status`);

  const doubleSuccess = await query<{ task_id: string }>(
    `SELECT task_id FROM ${t(schema, 'system_async_task_attempt')} WHERE outcome IN ('SUCCESS', 'PARTIAL_SUCCESS') GROUP BY task_id HAVING count(*) > 1`,
  );
  if (doubleSuccess.length > 0) violations.push(`I2: ${doubleSuccess.length} task(s) with two SUCCESS attempts, e.g. ${doubleSuccess[0]!.task_id}`);
  const wrongEffect = await query<{ id: string; attempt_count: number; effect: number | null }>(
    `SELECT s.id, s.attempt_count, e.attempt AS effect FROM ${task} s LEFT JOIN ${t(schema, 'effects')} e ON e.task_id = s.id
     WHERE s.status = 'SUCCESS' AND (e.attempt IS NULL OR e.attempt <> s.attempt_count)`,
  );
  if (wrongEffect.length > 0)
    knownGaps.push(`I2 (effects): ${wrongEffect.length} succeeded task(s) whose effect is not the final attempt's, e.g. ${JSON.stringify(wrongEffect[0])}`);

  const byStatus: Record<string, number> = {};
  for (const row of rows) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
  const settled = rows.length;
  if (settled !== acknowledged.length) violations.push(`I5: acknowledged ${acknowledged.length} ≠ counted ${settled}`);
  const overspent = rows.filter((row) => row.attempts - row.base > row.max);
  if (overspent.length > 0) violations.push(`I5: ${overspent.length} task(s) ran more attempts than max_attempts, e.g. ${JSON.stringify(overspent[0])}`);
  const noLetter = await query<{ id: string }>(
    `SELECT s.id FROM ${task} s WHERE s.status = 'FAILED' AND NOT EXISTS (SELECT 1 FROM ${t(schema, 'system_async_task_dead_letter')} d WHERE d.original_task_id = s.id)`,
  );
  if (noLetter.length > 0) violations.push(`I5: ${noLetter.length} FAILED task(s) without a dead letter`);

  const [figures] = await query<{ attempts: string; executions: string; repeated: string }>(
    `SELECT (SELECT count(*) FROM ${t(schema, 'system_async_task_attempt')}) AS attempts, (SELECT count(*) FROM ${t(schema, 'executions')}) AS executions,
            (SELECT count(*) FROM ${t(schema, 'effects')} WHERE writes > 1) AS repeated`,
  );
  const failedBy: Record<string, number> = {};
  for (const row of await query<{ code: string | null; n: string }>(
    `SELECT last_error_code AS code, count(*) AS n FROM ${task} WHERE status = 'FAILED' GROUP BY 1`,
  )) {
    failedBy[row.code ?? 'none'] = Number(row.n);
  }
  return {
    violations,
    knownGaps,
    figures: {
      acknowledged: acknowledged.length,
      byStatus,
      failedBy,
      attempts: Number(figures!.attempts),
      executions: Number(figures!.executions),
      repeatedEffects: Number(figures!.repeated),
    },
  };
}

/** The tables the handlers write (FAULTS.md): one row per execution start, one effect per task. */
export function handlerTablesSql(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS "${schema}".executions (task_id text NOT NULL, attempt integer NOT NULL, worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS "${schema}".effects (task_id text PRIMARY KEY, attempt integer NOT NULL, worker text NOT NULL, writes integer NOT NULL DEFAULT 1);`;
}
