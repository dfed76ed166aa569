/**
 * The recovery sweep, three statements, each taking at most `batchSize` rows
 * with FOR UPDATE SKIP LOCKED so that sweeps in several workers share the
 * work instead of queueing. Under READ COMMITTED, FOR UPDATE re-checks its
 * WHERE against the newest row version, so a lease renewed after our
 * snapshot (lease_until now in the future) is skipped: a live lease is never
 * touched. Deadlines run before due retries: an overdue RETRY_WAIT task fails
 * rather than being queued again.
 */
import {
  DEADLINE_EXCEEDED_SQL,
  DEADLINE_MESSAGE,
  expiredLeaseAssignments,
  expiredLeaseStatusSql,
  LEASE_EXPIRED_MESSAGE,
  LEASE_EXPIRED_OUTCOME_SQL,
  LEASE_EXPIRED_SQL,
  LEASED_SQL,
  OVERDUE_SQL,
  STATUS_SQL,
} from '../rules/index.js';
import type { RecoveryResult } from '../types.js';
import { run, sql, type PgContext } from './connection.js';
import { settleCallSql } from './flows.js';

export async function recover(ctx: PgContext, batchSize: number): Promise<RecoveryResult> {
  const expired = await run<{ requeued: number; failed: number; cancelled: number }>(
    ctx.pool,
    'recovering expired leases',
    sql(ctx, 'recover-expired', expiredLeasesSql),
    [batchSize, LEASE_EXPIRED_MESSAGE],
  );
  const overdue = await run<{ n: number }>(ctx.pool, 'failing overdue tasks', sql(ctx, 'recover-deadline', deadlineSql), [batchSize, DEADLINE_MESSAGE]);
  const due = await run(
    ctx.pool,
    'queueing due retries',
    `WITH due AS MATERIALIZED (
       SELECT id FROM ${ctx.tables.task} WHERE status = ${STATUS_SQL.RETRY_WAIT} AND available_at <= now()
       ORDER BY available_at LIMIT $1 FOR UPDATE SKIP LOCKED
     )
     UPDATE ${ctx.tables.task} t SET status = ${STATUS_SQL.QUEUED}, update_time = now() WHERE t.id = ANY (ARRAY(SELECT id FROM due))`,
    [batchSize],
  );
  const counts = expired.rows[0];
  return {
    requeued: counts?.requeued ?? 0,
    failed: counts?.failed ?? 0,
    cancelled: counts?.cancelled ?? 0,
    retriesDue: due.rowCount ?? 0,
    deadlineExpired: overdue.rows[0]?.n ?? 0,
  };
}

/** Expired RUNNING → QUEUED (attempts left) or FAILED + dead letter; expired CANCEL_REQUESTED → CANCELLED. */
function expiredLeasesSql(ctx: PgContext): string {
  const { task, attempt, failure, deadLetter } = ctx.tables;
  const uuid = `${ctx.schema}.tasklease_uuid_v7()`;
  return `
WITH expired AS MATERIALIZED (
  SELECT id FROM ${task} WHERE status IN ${LEASED_SQL} AND lease_until < now()
  ORDER BY lease_until LIMIT $1 FOR UPDATE SKIP LOCKED
),
changed AS (
  UPDATE ${task} t SET
    status = ${expiredLeaseStatusSql('t.')},
    last_error_code = CASE WHEN t.status = ${STATUS_SQL.CANCEL_REQUESTED} THEN t.last_error_code ELSE ${LEASE_EXPIRED_SQL} END,
    finish_time = CASE WHEN (${expiredLeaseStatusSql('t.')}) = ${STATUS_SQL.QUEUED} THEN NULL ELSE now() END,
    ${expiredLeaseAssignments('t.').join(', ')},
    lease_owner = NULL, lease_until = NULL, update_time = now()
  WHERE t.id = ANY (ARRAY(SELECT id FROM expired))
  RETURNING t.id, t.status, t.attempt_count, t.task_type, t.owner, t.payload_json, t.trace_id
),
attempts AS (
  UPDATE ${attempt} a SET finished_at = now(),
    outcome = CASE c.status WHEN ${STATUS_SQL.CANCELLED} THEN ${STATUS_SQL.CANCELLED} ELSE ${LEASE_EXPIRED_OUTCOME_SQL} END,
    error_code = CASE c.status WHEN ${STATUS_SQL.CANCELLED} THEN NULL ELSE ${LEASE_EXPIRED_SQL} END
  FROM changed c WHERE a.task_id = c.id AND a.attempt = c.attempt_count AND a.task_id = ANY (ARRAY(SELECT id FROM changed))
),
failures AS (
  INSERT INTO ${failure} (id, task_id, attempt, error_code, error_message, trace_id, retryable, failed_at)
  SELECT ${uuid}, c.id, c.attempt_count, ${LEASE_EXPIRED_SQL}, $2, NULL, c.status = ${STATUS_SQL.QUEUED}, now()
  FROM changed c WHERE c.status <> ${STATUS_SQL.CANCELLED}
),
dead AS (
  INSERT INTO ${deadLetter} (id, original_task_id, task_type, owner, payload_json, error_code, error_message, trace_id, attempt_count, moved_at)
  SELECT ${uuid}, c.id, c.task_type, c.owner, c.payload_json, ${LEASE_EXPIRED_SQL}, $2, c.trace_id, c.attempt_count, now()
  FROM changed c WHERE c.status = ${STATUS_SQL.FAILED}
)
SELECT count(*) FILTER (WHERE status = ${STATUS_SQL.QUEUED})::integer AS requeued,
       count(*) FILTER (WHERE status = ${STATUS_SQL.FAILED})::integer AS failed,
       count(*) FILTER (WHERE status = ${STATUS_SQL.CANCELLED})::integer AS cancelled,
       -- the flow children of the tasks this ended, in the same statement (flows.ts)
       ${settleCallSql(ctx, `ARRAY(SELECT id FROM changed WHERE status <> ${STATUS_SQL.QUEUED})`)} AS released
FROM changed`;
}

/** Waiting or paused tasks past their deadline → FAILED (the deadline failure) + dead letter. */
function deadlineSql(ctx: PgContext): string {
  const { task, failure, deadLetter } = ctx.tables;
  const uuid = `${ctx.schema}.tasklease_uuid_v7()`;
  return `
WITH overdue AS MATERIALIZED (
  SELECT id FROM ${task} WHERE status IN ${OVERDUE_SQL} AND deadline_at IS NOT NULL AND deadline_at <= now()
  ORDER BY deadline_at LIMIT $1 FOR UPDATE SKIP LOCKED
),
changed AS (
  UPDATE ${task} t SET status = ${STATUS_SQL.FAILED}, last_error_code = ${DEADLINE_EXCEEDED_SQL}, finish_time = now(), update_time = now()
  WHERE t.id = ANY (ARRAY(SELECT id FROM overdue))
  RETURNING t.id, t.attempt_count, t.task_type, t.owner, t.payload_json, t.trace_id
),
failures AS (
  INSERT INTO ${failure} (id, task_id, attempt, error_code, error_message, trace_id, retryable, failed_at)
  SELECT ${uuid}, c.id, c.attempt_count, ${DEADLINE_EXCEEDED_SQL}, $2, NULL, false, now() FROM changed c
),
dead AS (
  INSERT INTO ${deadLetter} (id, original_task_id, task_type, owner, payload_json, error_code, error_message, trace_id, attempt_count, moved_at)
  SELECT ${uuid}, c.id, c.task_type, c.owner, c.payload_json, ${DEADLINE_EXCEEDED_SQL}, $2, c.trace_id, c.attempt_count, now() FROM changed c
)
SELECT count(*)::integer AS n, ${settleCallSql(ctx, 'ARRAY(SELECT id FROM changed)')} AS released FROM changed`;
}
