/**
 * Fenced writes about held leases: heartbeat, progress, hand-back. Each is one
 * statement whose WHERE carries the fence (lease_owner, attempt_count,
 * lease_token, a leased status; renewal and progress: an unexpired lease too, rules/
 * leases.ts); the rows it returns decide the answer.
 *
 * Multi-row writes first lock their rows one by one, through a LATERAL
 * primary-key lookup with FOR UPDATE per input row (fencedLookup). That
 * shape is on purpose:
 * - a worker's heartbeat and its batched outcome write can run at once on
 *   two connections; both send their leases sorted by task id and the
 *   nested loop locks in input order, so they queue instead of deadlocking;
 * - a subquery with FOR UPDATE is never flattened, so the plan is always
 *   "for each input row, one index probe" — a plain join let the planner
 *   (misled by a generic plan's guess of 1 row) rescan the unnest once per
 *   task row: quadratic, 170 ms for 500 outcomes.
 */
import type { Lease, TaskProgress } from '../../core/task.js';
import { progressValues } from '../rows.js';
import type { RenewParams, RenewResult } from '../types.js';
import { run, sql, type PgContext, statementName } from './connection.js';
import { checkStorableText, storableMessage, uuidKey } from './encode.js';
import { MAX_STEP_NAME_LENGTH } from '../../core/steps.js';
import { ValidationError } from '../../core/errors.js';
import { CURRENT_CYCLE, fenceSql, nextStepSeqSql, leaseKey, literal, liveLeaseSql, releaseAssignments, renewalAnswer } from '../rules/index.js';

/**
 * The task row of input row `alias` (columns task_id, worker_id, attempt, lease_token), if its lease still holds; locked.
 * `live`: and only if it has not expired (rules/leases.ts: renewals, not outcomes).
 */
export function fencedLookup(ctx: PgContext, alias: string, live = false): string {
  // The fence is checked outside the locking subquery on purpose: with the
  // status test inside, the planner probes the small leased partial index
  // and filters on id — a scan of every lease per input row. FOR UPDATE
  // returns the newest row version, so the fence is judged on it.
  return `SELECT l.id, l.status FROM (
      SELECT t.id, t.status, t.lease_owner, t.attempt_count, t.lease_token, t.lease_until FROM ${ctx.tables.task} t
      WHERE t.id = ${alias}.task_id OFFSET 0 FOR UPDATE
    ) l
    WHERE ${fenceSql(`${alias}.worker_id`, `${alias}.attempt`, `${alias}.lease_token`, 'l.')}${live ? ` AND ${liveLeaseSql('now()', 'l.')}` : ''}`;
}

/** The leases as unnest($1 ids, $2 workers, $3 attempts, $4 tokens), each fenced (`live`: and unexpired) and locked in input order. */
export function lockLeasesSql(ctx: PgContext, live = false): string {
  return `input AS MATERIALIZED (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::integer[], $4::text[]) AS u(task_id, worker_id, attempt, lease_token)
),
locked AS MATERIALIZED (
  SELECT t.id, i.attempt FROM input i CROSS JOIN LATERAL (${fencedLookup(ctx, 'i', live)}) t
)`;
}

/**
 * The attempt rows of `source` (columns id and the attempt column), with
 * their ctid: each found by its own primary-key probe, so that the UPDATE or
 * DELETE that follows is a TID scan whatever the planner believes about how
 * many rows `source` holds. (Joining the attempt table to a CTE the planner
 * guesses at 1 row gave a nested loop with a sequential scan inside.) The
 * ctid is that of the version our snapshot sees, so even a concurrent update
 * would be followed; none can happen, since the task row is locked and only
 * its lease holder (fenced) or the sweep (which locks the task row first)
 * writes an attempt row.
 *
 * Never use the ctid a FOR UPDATE returns for a later UPDATE in the same
 * statement: after a concurrent commit it is the NEW version's, invisible to
 * the statement's snapshot, and the TID scan silently finds nothing (a lost
 * outcome write, seen as a lost lease).
 */
export function attemptRowsSql(ctx: PgContext, source: string, attemptColumn: string): string {
  return `SELECT s.*, (SELECT x.ctid FROM ${ctx.tables.attempt} x WHERE x.task_id = s.id AND x.attempt = s.${attemptColumn}) AS attempt_ctid
    FROM ${source} s`;
}

/** Sorted by task id (the lock order every writer shares), as the four arrays of lockLeasesSql. */
export function leaseArrays(leases: readonly Lease[]): [(string | null)[], string[], number[], string[]] {
  const sorted = [...leases].sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
  return [sorted.map((l) => uuidKey(l.taskId)), sorted.map((l) => l.workerId), sorted.map((l) => l.attempt), sorted.map((l) => l.token)];
}

/**
 * The renewal; `durable` (ctx.fence): its transaction commits with synchronous_commit raised to on (from off or
 * local; a stricter setting such as remote_apply is kept), so that it answers only once its commit — and with it
 * every WAL record before it, the claim it confirms among them — is flushed. set_config(…, true) lasts until the
 * end of the statement's own transaction (no session state: PgBouncer-safe), and is evaluated by joining its
 * one-row CTE to the locked leases: with none locked nothing is written, and nothing needs to wait for a flush.
 */
export function renewSql(ctx: PgContext, durable: boolean): string {
  return sql(
    ctx,
    durable ? 'renew_durable' : 'renew',
    () => `WITH ${lockLeasesSql(ctx, true)}${
      durable
        ? `,
durable AS MATERIALIZED (
  SELECT set_config('synchronous_commit',
    CASE WHEN current_setting('synchronous_commit') IN ('off', 'local') THEN 'on' ELSE current_setting('synchronous_commit') END, true) AS mode
)`
        : ''
    }
UPDATE ${ctx.tables.task} t SET lease_until = now() + $5 * interval '1 millisecond', update_time = now()
FROM locked${durable ? ' CROSS JOIN durable' : ''} WHERE t.id = locked.id
RETURNING t.id, t.status, t.lease_owner, t.attempt_count, t.lease_token`,
  );
}

export async function renewLeases(ctx: PgContext, { leases, leaseMs, onSent, durable = false }: RenewParams): Promise<RenewResult> {
  const updated = await run<{ id: string; status: string; lease_owner: string; attempt_count: number; lease_token: string }>(
    ctx.leasePool,
    durable ? 'confirming a lease durably' : 'renewing leases',
    renewSql(ctx, durable),
    [...leaseArrays(leases), leaseMs],
    statementName(ctx, durable ? 'renew_durable' : 'renew'),
    onSent,
  );
  return renewalAnswer(leases, new Map(updated.rows.map((row) => [leaseKey(row.id, row.lease_owner, row.attempt_count, row.lease_token), row.status])));
}

export async function saveProgress(ctx: PgContext, lease: Lease, progress: TaskProgress): Promise<boolean> {
  const values = progressValues(progress);
  values[5] = storableMessage(values[5]);
  const result = await run(
    ctx.leasePool,
    'saving progress',
    `UPDATE ${ctx.tables.task} SET progress_total = $5, progress_processed = $6, progress_succeeded = $7, progress_failed = $8,
       progress_skipped = $9, progress_message = $10, update_time = now()
     WHERE id = $1 AND ${fenceSql('$2', '$3', '$4')} AND ${liveLeaseSql('now()')}`,
    [uuidKey(lease.taskId), lease.workerId, lease.attempt, lease.token, ...values],
    statementName(ctx, 'progress'),
  );
  return result.rowCount === 1;
}

/** Never-started prefetched tasks go back uncharged, their attempt recorded as RELEASED (a cancel request turns them CANCELLED). */
export async function releaseTasks(ctx: PgContext, leases: readonly Lease[]): Promise<number> {
  const text = sql(
    ctx,
    'release',
    () => `WITH ${lockLeasesSql(ctx)},
released AS (
  UPDATE ${ctx.tables.task} t SET ${releaseAssignments('now()', 't.').join(', ')}
  FROM locked WHERE t.id = locked.id
  RETURNING t.id, locked.attempt
),
closed AS (
  UPDATE ${ctx.tables.attempt} a SET finished_at = now(), outcome = ${literal('RELEASED')}
  FROM (${attemptRowsSql(ctx, 'released', 'attempt')}) r WHERE a.ctid = r.attempt_ctid
)
SELECT count(*)::integer AS n FROM released`,
  );
  const result = await run<{ n: number }>(ctx.leasePool, 'releasing tasks', text, leaseArrays(leases));
  return result.rows[0]?.n ?? 0;
}

/**
 * A completed step (rules/steps.ts), fenced by a live lease: the task row is locked while the fence is judged
 * (FOR UPDATE re-reads its newest version), so a sweep that takes the lease waits for this commit or makes it
 * record nothing. true while the lease holds, whether this call inserted the row or found it there.
 */
export async function recordStep(ctx: PgContext, lease: Lease, name: string, resultJson: string | null): Promise<boolean> {
  // ctx.step checks names (core/steps.ts); a direct caller gets the typed error PostgreSQL's text would not.
  checkStorableText('name', name, 4 * MAX_STEP_NAME_LENGTH);
  if (resultJson !== null && resultJson.includes('\u0000')) throw new ValidationError('a step result holds a raw NUL character: not JSON', 'resultJson');
  const text = sql(
    ctx,
    'step',
    () => `WITH held AS MATERIALIZED (
  SELECT t.id FROM ${ctx.tables.task} t WHERE t.id = $1 AND ${fenceSql('$2', '$3', '$4', 't.')} AND ${liveLeaseSql('now()', 't.')} FOR UPDATE
),
recorded AS (
  INSERT INTO ${ctx.tables.step} (task_id, cycle, name, seq, result_json, attempt, worker_id, recorded_at)
  SELECT h.id, ${CURRENT_CYCLE}, $5, ${nextStepSeqSql(ctx.tables.step, 'h.id')}, $6, $3, $2, clock_timestamp() FROM held h
  ON CONFLICT (task_id, cycle, name) DO NOTHING
)
SELECT count(*)::integer AS n FROM held`,
  );
  const result = await run<{ n: number }>(
    ctx.leasePool,
    'recording a step',
    text,
    [uuidKey(lease.taskId), lease.workerId, lease.attempt, lease.token, name, resultJson],
    statementName(ctx, 'step'),
  );
  return (result.rows[0]?.n ?? 0) === 1;
}
