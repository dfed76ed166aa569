/**
 * Outcomes of many attempts in ONE statement: the outcomes arrive as
 * parallel arrays (unnest), the task rows are locked in id order under the
 * fence, updated by kind, and in the same statement their attempt rows are
 * closed, failure rows written (RETRY, FAILED) and dead letters made (FAILED).
 * An outcome whose fence no longer holds (the lease was lost) changes
 * nothing and answers false; one that made a dead letter answers its id.
 *
 * A task whose cancellation was requested cannot go back to waiting (the
 * transition table allows CANCEL_REQUESTED → CANCELLED, SUCCESS,
 * PARTIAL_SUCCESS only), so RETRY, FAILED, RELEASED and SNOOZED outcomes for
 * it end it as CANCELLED; the failure is still recorded. RELEASED and SNOOZED
 * spend no attempt (rules/: attempt_base + 1).
 */
import type { TaskProgress } from '../../core/task.js';
import { progressValues, taskFromRow, type Row } from '../rows.js';
import type { AttemptOutcome, ClaimParams, DeadLetterRef, FinishAndClaimResult, FinishResult } from '../types.js';
import { CLAIM_ARG_COUNT, claimArgs, claimTasks } from './claim.js';
import { run, sql, type PgContext, type Queryable, statementName } from './connection.js';
import { attemptRowsSql, fencedLookup } from './leases.js';
import { settleCallSql } from './flows.js';
import { decodePostgres, storableMessage, uuidKey } from './encode.js';
import { MAX_NOTIFY_BYTES, WAKE_WAITERS_PAYLOAD } from './wakeups.js';
import {
  attemptBaseAfterSql,
  attemptOutcomeSql,
  currentKindSql,
  DELAYED_KINDS_SQL,
  delayOf,
  FAILURE_KINDS_SQL,
  hasFailure,
  lastErrorCodeSql,
  isSuccess,
  STATUS_SQL,
  statusAfterOutcomeSql,
  SUCCESS_KINDS_SQL,
  TERMINAL_SQL,
} from '../rules/index.js';

/**
 * The statement, installed by migrate() as a function, so that one round
 * trip can write outcomes and then claim (finishAndClaimSql): a VOLATILE
 * function's queries see what the functions called before them in the same
 * statement wrote, so the claim counts the slots the outcomes freed.
 * It answers one row per applied outcome: its ordinal, and the id of the
 * dead letter it made (null unless the task ended FAILED: the id is drawn
 * in the UPDATE's RETURNING, so the common path pays nothing for it).
 * Named after what it returns: tasklease_finish (ordinals only) stays for
 * processes of the previous release during a rolling upgrade.
 */
export function finishFunctionSql(ctx: PgContext): string {
  const { task, attempt, failure, deadLetter } = ctx.tables;
  const uuid = `${ctx.schema}.tasklease_uuid_v7()`;
  return `
CREATE OR REPLACE FUNCTION ${ctx.schema}.${FINISH_FUNCTION}(
  text[], text[], integer[], text[], text[], text[], boolean[], bigint[], bigint[], bigint[], bigint[], bigint[], text[],
  text[], text[], text[], boolean[], double precision[], text[]
) RETURNS TABLE (ord bigint, dead_letter_id text) LANGUAGE plpgsql VOLATILE
-- The plan mode is this function's own (see SMALL_BATCH): set here, a change inside ends with the call.
SET plan_cache_mode = auto AS $finish$
BEGIN
IF cardinality($1) <= ${SMALL_BATCH} THEN PERFORM set_config('plan_cache_mode', 'force_generic_plan', true); END IF;
RETURN QUERY
WITH input AS MATERIALIZED (
  -- u.-qualified: ord is also the name of an output column (a PL/pgSQL variable).
  -- Ids arrive as text (the signature predates migration 16's uuid columns).
  SELECT u.task_id::uuid AS task_id, u.worker_id, u.attempt, u.lease_token, ${currentKindSql('u.kind')} AS kind, u.artifact_id, u.result_json, u.has_progress,
    u.p_total, u.p_processed, u.p_succeeded, u.p_failed, u.p_skipped, u.p_message, u.error_code, u.error_message, u.trace_id,
    u.retryable, u.delay_ms, u.ord
  FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::boolean[],
    $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[],
    $14::text[], $15::text[], $16::text[], $17::boolean[], $18::double precision[], $19::text[])
  WITH ORDINALITY AS u(task_id, worker_id, attempt, kind, artifact_id, result_json, has_progress,
    p_total, p_processed, p_succeeded, p_failed, p_skipped, p_message,
    error_code, error_message, trace_id, retryable, delay_ms, lease_token, ord)
),
locked AS MATERIALIZED (
  SELECT i.*, t.id,
    ${statusAfterOutcomeSql('i.kind', 't.status')} AS new_status
  FROM input i CROSS JOIN LATERAL (${fencedLookup(ctx, 'i')}) t
),
updated AS (
  UPDATE ${task} t SET
    status = l.new_status,
    lease_owner = NULL,
    lease_until = NULL,
    available_at = CASE WHEN l.kind IN ${DELAYED_KINDS_SQL} AND l.new_status <> ${STATUS_SQL.CANCELLED}
      THEN now() + l.delay_ms * interval '1 millisecond' ELSE t.available_at END,
    attempt_base = ${attemptBaseAfterSql('l.kind', 't.attempt_base')},
    finish_time = CASE WHEN l.new_status IN ${TERMINAL_SQL} THEN now() ELSE t.finish_time END,
    artifact_id = CASE WHEN l.kind IN ${SUCCESS_KINDS_SQL} THEN l.artifact_id ELSE t.artifact_id END,
    result_json = CASE WHEN l.kind IN ${SUCCESS_KINDS_SQL} THEN l.result_json ELSE t.result_json END,
    last_error_code = ${lastErrorCodeSql('l.kind', 'l.error_code', 't.last_error_code')},
    progress_total = CASE WHEN l.has_progress THEN l.p_total ELSE t.progress_total END,
    progress_processed = CASE WHEN l.has_progress THEN l.p_processed ELSE t.progress_processed END,
    progress_succeeded = CASE WHEN l.has_progress THEN l.p_succeeded ELSE t.progress_succeeded END,
    progress_failed = CASE WHEN l.has_progress THEN l.p_failed ELSE t.progress_failed END,
    progress_skipped = CASE WHEN l.has_progress THEN l.p_skipped ELSE t.progress_skipped END,
    progress_message = CASE WHEN l.has_progress THEN l.p_message ELSE t.progress_message END,
    update_time = now()
  -- A plain join on the key: the planner probes the primary key per locked row. (Adding
  -- "AND t.id = ANY(ARRAY(…))" looks safer but re-sorts the whole array on every probe: quadratic.)
  FROM locked l WHERE t.id = l.id
  -- The payload only where a dead letter needs it: copying every payload through the CTE costs as much as it weighs.
  RETURNING t.id, t.status, t.attempt_count, t.task_type, t.owner, CASE WHEN t.status = ${STATUS_SQL.FAILED} THEN t.payload_json END AS payload_json,
    t.trace_id AS task_trace_id, CASE WHEN t.status = ${STATUS_SQL.FAILED} THEN ${uuid} END AS dead_letter_id,
    l.kind, l.ord, l.error_code, l.error_message, l.trace_id, l.retryable
),
attempts AS (
  UPDATE ${attempt} a SET finished_at = now(),
    outcome = ${attemptOutcomeSql('u.kind')},
    error_code = CASE WHEN u.kind IN ${FAILURE_KINDS_SQL} THEN u.error_code END
  FROM (${attemptRowsSql(ctx, 'updated', 'attempt_count')}) u WHERE a.ctid = u.attempt_ctid
),
failures AS (
  INSERT INTO ${failure} (id, task_id, attempt, error_code, error_message, trace_id, retryable, failed_at)
  SELECT ${uuid}, u.id, u.attempt_count, u.error_code, u.error_message, u.trace_id, u.retryable, now()
  FROM updated u WHERE u.kind IN ${FAILURE_KINDS_SQL}
),
dead AS (
  INSERT INTO ${deadLetter} (id, original_task_id, task_type, owner, payload_json, error_code, error_message, trace_id, attempt_count, moved_at)
  SELECT u.dead_letter_id, u.id, u.task_type, u.owner, u.payload_json, u.error_code, u.error_message, COALESCE(u.trace_id, u.task_trace_id),
    u.attempt_count, now()
  FROM updated u WHERE u.status = ${STATUS_SQL.FAILED}
)
SELECT updated.ord, updated.dead_letter_id::text FROM updated;
${awaitedNotifySql(ctx)}
${settleAfterFinishSql(ctx)}
END
$finish$;`;
}

/**
 * After the outcomes: a NOTIFY naming the written tasks someone waits for
 * (client.waitFor, awaited.ts), in the same transaction, so it is heard at
 * commit. The EXISTS on the (usually empty) table keeps the common drain at
 * one probe; a long id list falls back to "re-read, all of you".
 */
function awaitedNotifySql(ctx: PgContext): string {
  const { awaited } = ctx.tables;
  return `IF EXISTS (SELECT 1 FROM ${awaited}) THEN
  -- A uuid is 36 characters as text, 39 with its quotes and comma.
  PERFORM pg_notify('${ctx.channel}', CASE WHEN 39 * count(DISTINCT w.task_id) > ${MAX_NOTIFY_BYTES - 100} THEN '${WAKE_WAITERS_PAYLOAD}'
    ELSE json_build_object('k', 'f', 'i', array_agg(DISTINCT w.task_id))::text END)
  FROM ${awaited} w WHERE w.task_id = ANY($1::uuid[]) HAVING count(*) > 0;
END IF;`;
}

/**
 * After the outcomes, in their transaction: the flow children of the tasks
 * they ended settle, and the keys of the sequenced ones go on (flows.ts,
 * sequences.ts). The probes of the edges' and the tasks' primary keys keep
 * the common drain, which has neither, at two index lookups per outcome.
 */
function settleAfterFinishSql(ctx: PgContext): string {
  return `IF EXISTS (SELECT 1 FROM ${ctx.tables.dependency} d WHERE d.parent_id = ANY ($1::uuid[]) AND d.resolved IS NULL)
  OR EXISTS (SELECT 1 FROM ${ctx.tables.task} t WHERE t.id = ANY ($1::uuid[]) AND t.sequence_key IS NOT NULL) THEN
  PERFORM ${settleCallSql(ctx, '$1::uuid[]')};
END IF;`;
}

const FINISH_FUNCTION = 'tasklease_finish_outcomes';
/**
 * Batches up to this many outcomes run the statement's generic plan. Left to
 * itself (plan_cache_mode auto) PostgreSQL plans this statement anew on
 * every call, about 0.6 ms: half of a 2-outcome write (bench/pg-steps-probe.ts).
 * Large batches keep their custom plans: for 500 outcomes the generic plan ran 10–20 % slower
 * (bench/pg-backlog-probe.ts with PGOPTIONS='-c plan_cache_mode=force_generic_plan').
 */
const SMALL_BATCH = 64;
const FINISH_ARG_COUNT = 19;
const FINISH_ARGS = Array.from({ length: FINISH_ARG_COUNT }, (_, i) => `$${i + 1}`).join(', ');
/** The claim's arguments after the outcome columns; the limit's gets a dependency on the finish (see below). */
const CLAIM_AFTER_FINISH = Array.from({ length: CLAIM_ARG_COUNT }, (_, i) =>
  i === 2 ? `$${FINISH_ARG_COUNT + 3} + 0 * COALESCE(cardinality(f.applied), 0)` : `$${FINISH_ARG_COUNT + i + 1}`,
).join(', ');

/**
 * Outcomes, then a claim, in one statement: the claim's arguments name the
 * finish's result, so it runs after it (LATERAL), and sees its writes (both
 * are VOLATILE functions). One row per claimed task, or one row of NULL task
 * columns when none was claimed; every row carries the applied ordinals.
 */
function finishAndClaimSql(ctx: PgContext): string {
  return `SELECT f.applied, f.dead_letters, c.* FROM (
  SELECT array_agg(o.ord) AS applied, array_agg(o.ord || ':' || o.dead_letter_id) FILTER (WHERE o.dead_letter_id IS NOT NULL) AS dead_letters
  FROM ${ctx.schema}.${FINISH_FUNCTION}(${FINISH_ARGS}) AS o) f
LEFT JOIN LATERAL ${ctx.schema}.tasklease_claim(${CLAIM_AFTER_FINISH}) c ON true`;
}

/** `caller`: a caller's client inside BEGIN (ctx.complete(tx)): the write joins that transaction and leaves no prepared statement on it. */
export async function finishAttempts(ctx: PgContext, outcomes: readonly AttemptOutcome[], caller: Queryable | null = null): Promise<FinishResult> {
  if (outcomes.length === 0) return { applied: [], deadLetters: [] };
  const { order, columns } = outcomeColumns(outcomes);
  const text = sql(ctx, 'finish', () => `SELECT o.ord, o.dead_letter_id FROM ${ctx.schema}.${FINISH_FUNCTION}(${FINISH_ARGS}) AS o`);
  const name = caller === null ? statementName(ctx, 'finish') : undefined;
  const result = await run<{ ord: string; dead_letter_id: string | null }>(caller ?? ctx.leasePool, 'writing outcomes', text, columns, name);
  const deadLetters = result.rows.flatMap((row) => (row.dead_letter_id === null ? [] : [deadLetterOf(outcomes, order, row.ord, row.dead_letter_id)]));
  return {
    applied: appliedByInput(
      outcomes,
      order,
      result.rows.map((row) => row.ord),
    ),
    deadLetters,
  };
}

export async function finishAndClaim(ctx: PgContext, outcomes: readonly AttemptOutcome[], claim: ClaimParams): Promise<FinishAndClaimResult> {
  if (outcomes.length === 0) return { applied: [], deadLetters: [], claimed: await claimTasks(ctx, claim) };
  const { order, columns } = outcomeColumns(outcomes);
  // The claim commits with the outcomes: synchronously.
  const params = [...columns, ...claimArgs(claim, false)];
  const result = await run<Row>(
    ctx.leasePool,
    'writing outcomes and claiming',
    sql(ctx, 'finish_claim', finishAndClaimSql),
    params,
    statementName(ctx, 'finish_claim'),
    claim.onSent,
  );
  const ords = (result.rows[0]?.applied as string[] | null | undefined) ?? [];
  const letters = (result.rows[0]?.dead_letters as string[] | null | undefined) ?? [];
  return {
    applied: appliedByInput(outcomes, order, ords),
    deadLetters: letters.map((entry) => {
      const colon = entry.indexOf(':');
      return deadLetterOf(outcomes, order, entry.slice(0, colon), entry.slice(colon + 1));
    }),
    claimed: result.rows.filter((row) => row.id !== null).map((row) => taskFromRow(row, decodePostgres)),
  };
}

/** The outcomes as finishSql's columns, rows sorted by task id; `order[k]` is the input index of row k. */
function outcomeColumns(outcomes: readonly AttemptOutcome[]): { order: number[]; columns: unknown[][] } {
  // Rows are locked in input order (see leases.ts): sorted by task id, every writer locks in one order.
  const order = outcomes.map((_, index) => index).sort((a, b) => compareText(outcomes[a]!.lease.taskId, outcomes[b]!.lease.taskId));
  const columns: unknown[][] = Array.from({ length: FINISH_ARG_COUNT }, () => []);
  for (const index of order) outcomeRow(outcomes[index]!).forEach((value, i) => columns[i]!.push(value));
  return { order, columns };
}

function appliedByInput(outcomes: readonly AttemptOutcome[], order: number[], ords: readonly (string | number)[]): boolean[] {
  const applied = new Set(ords.map((ord) => order[Number(ord) - 1]));
  return outcomes.map((_, index) => applied.has(index));
}

/** The dead letter of the outcome at ordinal `ord` (1-based, in the sorted order). */
function deadLetterOf(outcomes: readonly AttemptOutcome[], order: number[], ord: string | number, deadLetterId: string): DeadLetterRef {
  return { taskId: outcomes[order[Number(ord) - 1]!]!.lease.taskId, deadLetterId };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One outcome as the column values of finishSql's unnest, in order. */
function outcomeRow(outcome: AttemptOutcome): unknown[] {
  const { lease } = outcome;
  const success = isSuccess(outcome);
  const failure = hasFailure(outcome) ? outcome.failure : null;
  return [
    uuidKey(lease.taskId),
    lease.workerId,
    lease.attempt,
    outcome.kind,
    success ? storableMessage(outcome.artifactId) : null,
    success ? outcome.resultJson : null,
    outcome.progress !== null,
    ...progressColumns(outcome.progress),
    failure ? storableMessage(failure.errorCode) : null,
    failure ? storableMessage(failure.message ?? '') : null,
    failure ? storableMessage(failure.traceId) : null,
    failure ? failure.retryable : null,
    delayOf(outcome) ?? 0,
    lease.token,
  ];
}

function progressColumns(progress: TaskProgress | null): unknown[] {
  if (progress === null) return [null, null, null, null, null, null];
  const values = progressValues(progress);
  values[5] = storableMessage(values[5]);
  return values;
}
