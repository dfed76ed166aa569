/**
 * Control-plane operations on PostgreSQL: dead-letter replay and archive,
 * policies, cleanup, the worker registry and analysis data. Each is one
 * statement; multi-row changes lock in id order like every other writer.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import { isTaskStatus, type TaskStatus } from '../../core/status.js';
import { emptyStatusCounts, policyFromRow, workerFromRow, type Row } from '../rows.js';
import type { Actor, AnalysisData, Policy, PolicyInput, PurgeParams, PurgeResult, ReplayResult, WorkerRecord, WorkerRegistration } from '../types.js';
import { reopenCallSql } from './flows.js';
import { MAX_RATE_PERIOD_MS } from '../rules/rates.js';
import { run, type PgContext } from './connection.js';
import { checkStorableText, decodePostgres, MAX_TASK_TYPE_BYTES, uuidKeys } from './encode.js';
import { WAKE_ALL_PAYLOAD } from './wakeups.js';
import {
  ACTION_COLUMNS,
  CURRENT_CYCLE,
  deadLetterActionStatusSql,
  endStepCycleSql,
  LEASED_SQL,
  literal,
  REPLAYABLE_STATUS,
  replayAssignments,
  STATUS_SQL,
  TERMINAL_SQL,
} from '../rules/index.js';

/** A dead letter's replay or archive as action rows, from a CTE of (id, original_task_id); $a and $a+1 are the actor's id and name (null: none). */
function deadLetterActionsSql(ctx: PgContext, kind: 'REPLAY' | 'ARCHIVE', letters: string, actorParam: number): string {
  const { from, to } = deadLetterActionStatusSql(kind);
  return `INSERT INTO ${ctx.tables.action} ${ACTION_COLUMNS}
  SELECT l.original_task_id, ${literal(kind)}, ${from}, ${to}, $${actorParam}::text, $${actorParam + 1}::text, l.id, now() FROM ${letters} l
  WHERE $${actorParam}::text IS NOT NULL`;
}

/** A new attempt cycle began for the tasks of CTE `changed` (columns id, attempt_count): their steps end the old cycle (rules/steps.ts). */
export function endStepCycleCte(ctx: PgContext, changed: string): string {
  return `UPDATE ${ctx.tables.step} s SET ${endStepCycleSql('c.attempt_count')} FROM ${changed} c WHERE s.task_id = c.id AND s.cycle = ${CURRENT_CYCLE}`;
}

export async function replayDeadLetters(ctx: PgContext, ids: readonly string[], scope: Scope, actor: Actor | undefined): Promise<ReplayResult[]> {
  const { task, deadLetter } = ctx.tables;
  const owner = scopeOwner(scope);
  const sql = `
WITH input AS (SELECT * FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, ord)),
letters AS MATERIALIZED (
  SELECT d.* FROM ${deadLetter} d WHERE d.id = ANY ($1::uuid[]) AND ($2::text IS NULL OR d.owner = $2)
  ORDER BY d.id FOR UPDATE
),
eligible AS (
  -- one letter per task (the first asked for): a second letter of the same task finds it queued already
  SELECT DISTINCT ON (l.original_task_id) l.id, l.original_task_id FROM letters l JOIN input i ON i.id = l.id
  WHERE l.replayed_at IS NULL AND l.archived_at IS NULL ORDER BY l.original_task_id, i.ord
),
requeued AS (
  UPDATE ${task} t SET ${replayAssignments('now()', 't.').join(', ')}
  WHERE t.id = ANY (ARRAY(SELECT original_task_id FROM eligible)) AND t.status = ${REPLAYABLE_STATUS}
  RETURNING t.id, t.attempt_count
),
marked AS (
  UPDATE ${deadLetter} d SET replayed_at = now(), replay_task_id = d.original_task_id
  WHERE d.id = ANY (ARRAY(SELECT e.id FROM eligible e JOIN requeued r ON r.id = e.original_task_id))
  RETURNING d.id, d.original_task_id
),
stepped AS (${endStepCycleCte(ctx, 'requeued')}),
acted AS (${deadLetterActionsSql(ctx, 'REPLAY', 'marked', 4)}),
notified AS (SELECT pg_notify($3, '${WAKE_ALL_PAYLOAD}') FROM marked HAVING count(*) > 0),
reopened AS (SELECT ${reopenCallSql(ctx, 'ARRAY(SELECT original_task_id FROM marked)')})
SELECT
  CASE WHEN l.id IS NULL THEN 'NOT_FOUND'
       WHEN l.replayed_at IS NOT NULL THEN 'ALREADY_REPLAYED'
       WHEN l.archived_at IS NOT NULL THEN 'ARCHIVED'
       WHEN m.id IS NOT NULL THEN 'REPLAYED'
       WHEN t.id IS NOT NULL THEN 'TASK_NOT_FAILED'
       ELSE 'TASK_MISSING' END AS outcome,
  CASE WHEN l.id IS NULL THEN NULL
       WHEN l.replayed_at IS NOT NULL THEN l.replay_task_id
       WHEN l.archived_at IS NOT NULL THEN NULL
       ELSE l.original_task_id END AS task_id,
  note.n AS notified
FROM input i
LEFT JOIN letters l ON l.id = i.id
LEFT JOIN marked m ON m.id = i.id
LEFT JOIN ${task} t ON t.id = l.original_task_id
CROSS JOIN (SELECT count(*) AS n FROM notified) AS note
CROSS JOIN (SELECT count(*) FROM reopened) AS flowed
ORDER BY i.ord`;
  // One row per id asked for, in order; an id that is not a UUID is a null key, found nowhere, and answered as given.
  const result = await run<{ outcome: ReplayResult['outcome']; task_id: string | null }>(ctx.pool, 'replaying dead letters', sql, [
    uuidKeys(ids),
    owner,
    ctx.channel,
    actor?.id ?? null,
    actor?.name ?? null,
  ]);
  return result.rows.map((row, i) => ({ id: ids[i]!, outcome: row.outcome, taskId: row.task_id }));
}

export async function archiveDeadLetters(ctx: PgContext, ids: readonly string[], scope: Scope, actor: Actor | undefined): Promise<number> {
  const result = await run<{ n: number }>(
    ctx.pool,
    'archiving dead letters',
    `WITH archived AS (
       UPDATE ${ctx.tables.deadLetter} SET archived_at = now()
       WHERE id = ANY ($1::uuid[]) AND archived_at IS NULL AND ($2::text IS NULL OR owner = $2) RETURNING id, original_task_id
     ),
     acted AS (${deadLetterActionsSql(ctx, 'ARCHIVE', 'archived', 3)})
     SELECT count(*)::integer AS n FROM archived`,
    [uuidKeys(ids), scopeOwner(scope), actor?.id ?? null, actor?.name ?? null],
  );
  return result.rows[0]?.n ?? 0;
}

export async function savePolicy(ctx: PgContext, policy: PolicyInput): Promise<Policy> {
  checkStorableText('policyKey', policy.policyKey, MAX_TASK_TYPE_BYTES + 5);
  if (policy.taskType !== null) checkStorableText('taskType', policy.taskType, MAX_TASK_TYPE_BYTES);
  const result = await run<Row>(
    ctx.pool,
    'saving a policy',
    `INSERT INTO ${ctx.tables.policy} (policy_key, task_type, max_concurrency, max_attempts, retry_base_delay_ms, enabled, update_time,
       rate_limit, rate_period_ms)
     VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8)
     ON CONFLICT (policy_key) DO UPDATE SET task_type = excluded.task_type, max_concurrency = excluded.max_concurrency,
       max_attempts = excluded.max_attempts, retry_base_delay_ms = excluded.retry_base_delay_ms, enabled = excluded.enabled,
       update_time = excluded.update_time, rate_limit = excluded.rate_limit, rate_period_ms = excluded.rate_period_ms
     RETURNING *`,
    [
      policy.policyKey,
      policy.taskType,
      policy.maxConcurrency,
      policy.maxAttempts,
      policy.retryBaseDelayMs,
      policy.enabled,
      policy.rateLimit ?? null,
      policy.ratePeriodMs ?? null,
    ],
  );
  return policyFromRow(result.rows[0]!, decodePostgres);
}

export async function listPolicies(ctx: PgContext): Promise<Policy[]> {
  const result = await run<Row>(ctx.pool, 'listing policies', `SELECT * FROM ${ctx.tables.policy} ORDER BY policy_key COLLATE "C"`);
  return result.rows.map((row) => policyFromRow(row, decodePostgres));
}

export async function deletePolicy(ctx: PgContext, policyKey: string): Promise<boolean> {
  const result = await run(ctx.pool, 'deleting a policy', `DELETE FROM ${ctx.tables.policy} WHERE policy_key = $1`, [policyKey]);
  return result.rowCount === 1;
}

/**
 * One batch of cleanup. FOR UPDATE SKIP LOCKED re-checks status and
 * finish_time on the newest row version, so a task an operator retried
 * since the snapshot is left alone; dead letters are archived, not deleted.
 */
/** Start log rows older than the longest rate period serve no window (rules/rates.ts): keys that start no more, removed policies. */
export async function pruneRateStarts(ctx: PgContext): Promise<void> {
  await run(ctx.pool, 'pruning the rate start log', `DELETE FROM ${ctx.tables.rateStart} WHERE started_at <= now() - $1 * interval '1 millisecond'`, [
    MAX_RATE_PERIOD_MS,
  ]);
}

export async function purgeTerminalTasks(ctx: PgContext, params: PurgeParams): Promise<PurgeResult> {
  const { task, attempt, failure, deadLetter, action, step, log } = ctx.tables;
  const owner = params.scope ? scopeOwner(params.scope) : null;
  const sql = `
WITH doomed AS MATERIALIZED (
  SELECT id FROM ${task} WHERE finish_time IS NOT NULL AND finish_time < $1 AND status IN ${TERMINAL_SQL}
    AND ($3::uuid[] IS NULL OR id = ANY($3::uuid[])) AND ($4::text IS NULL OR owner = $4)
  ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
),
deleted AS (DELETE FROM ${task} t WHERE t.id = ANY (ARRAY(SELECT id FROM doomed)) RETURNING t.id),
archived AS (
  UPDATE ${deadLetter} d SET archived_at = now()
  WHERE d.original_task_id = ANY (ARRAY(SELECT id FROM deleted)) AND d.archived_at IS NULL RETURNING 1
),
attempts AS (DELETE FROM ${attempt} a WHERE a.task_id = ANY (ARRAY(SELECT id FROM deleted)) RETURNING 1),
failures AS (DELETE FROM ${failure} f WHERE f.task_id = ANY (ARRAY(SELECT id FROM deleted)) RETURNING 1),
actions AS (DELETE FROM ${action} x WHERE x.task_id = ANY (ARRAY(SELECT id FROM deleted))),
-- a purged child's edges go with it; a purged parent's stay (resolved) for children still kept
edges AS (DELETE FROM ${ctx.tables.dependency} e WHERE e.child_id = ANY (ARRAY(SELECT id FROM deleted))),
steps AS (DELETE FROM ${step} s WHERE s.task_id = ANY (ARRAY(SELECT id FROM deleted))),
logs AS (DELETE FROM ${log} l WHERE l.task_id = ANY (ARRAY(SELECT id FROM deleted)))
SELECT (SELECT count(*) FROM deleted)::integer AS tasks, (SELECT count(*) FROM attempts)::integer AS attempts,
       (SELECT count(*) FROM failures)::integer AS failures, (SELECT count(*) FROM archived)::integer AS archived`;
  const result = await run<{ tasks: number; attempts: number; failures: number; archived: number }>(ctx.pool, 'purging finished tasks', sql, [
    params.finishedBefore,
    params.batchSize,
    params.ids ? uuidKeys(params.ids) : null,
    owner,
  ]);
  const row = result.rows[0]!;
  return { tasks: row.tasks, attempts: row.attempts, failures: row.failures, deadLettersArchived: row.archived };
}

/** One batch of dead-letter cleanup; SKIP LOCKED lets two cleaners share the work. */
export async function purgeDeadLetters(ctx: PgContext, archivedBefore: Date, batchSize: number): Promise<number> {
  const { deadLetter } = ctx.tables;
  const result = await run(
    ctx.pool,
    'purging archived dead letters',
    `WITH doomed AS MATERIALIZED (
       SELECT id FROM ${deadLetter} WHERE archived_at IS NOT NULL AND archived_at < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED
     )
     DELETE FROM ${deadLetter} d WHERE d.id = ANY (ARRAY(SELECT id FROM doomed))`,
    [archivedBefore, batchSize],
  );
  return result.rowCount ?? 0;
}

export async function registerWorker(ctx: PgContext, worker: WorkerRegistration): Promise<void> {
  checkStorableText('workerId', worker.workerId, 1000);
  checkStorableText('host', worker.host, 1000);
  await run(
    ctx.pool,
    'registering a worker',
    `INSERT INTO ${ctx.tables.worker} (worker_id, host, pid, task_types, concurrency, started_at, last_seen_at)
     VALUES ($1, $2, $3, $4, $5, now(), now())
     ON CONFLICT (worker_id) DO UPDATE SET task_types = excluded.task_types, concurrency = excluded.concurrency,
       last_seen_at = excluded.last_seen_at`,
    [worker.workerId, worker.host, worker.pid, JSON.stringify(worker.taskTypes), worker.concurrency],
  );
}

export async function unregisterWorker(ctx: PgContext, workerId: string): Promise<void> {
  await run(ctx.pool, 'unregistering a worker', `DELETE FROM ${ctx.tables.worker} WHERE worker_id = $1`, [workerId]);
}

export async function listWorkers(ctx: PgContext, seenWithinMs: number): Promise<WorkerRecord[]> {
  const result = await run<Row>(
    ctx.pool,
    'listing workers',
    `SELECT * FROM ${ctx.tables.worker} WHERE last_seen_at >= now() - $1 * interval '1 millisecond' ORDER BY worker_id COLLATE "C"`,
    [seenWithinMs],
  );
  return result.rows.map((row) => workerFromRow(row, decodePostgres));
}

export async function leasedCounts(ctx: PgContext): Promise<Record<string, number>> {
  const result = await run<{ task_type: string; n: number }>(
    ctx.pool,
    'counting leases',
    `SELECT task_type, count(*)::integer AS n FROM ${ctx.tables.task} WHERE status IN ${LEASED_SQL} GROUP BY task_type`,
  );
  return Object.fromEntries(result.rows.map((row) => [row.task_type, row.n]));
}

export async function analysisData(ctx: PgContext, taskType: string, since: Date, sampleLimit: number): Promise<AnalysisData> {
  const { task, attempt, failure } = ctx.tables;
  const counts = await run<{ status: TaskStatus; n: number }>(
    ctx.pool,
    'analysing tasks',
    `SELECT status, count(*)::integer AS n FROM ${task} WHERE task_type = $1 AND create_time > $2 GROUP BY status`,
    [taskType, since],
  );
  const statusCounts = emptyStatusCounts();
  for (const row of counts.rows) if (isTaskStatus(row.status)) statusCounts[row.status] = row.n;
  const attempts = await run<Row>(
    ctx.pool,
    'analysing attempts',
    `SELECT a.started_at, a.finished_at, a.attempt, t.create_time, t.available_at FROM ${attempt} a JOIN ${task} t ON a.task_id = t.id
     WHERE t.task_type = $1 AND a.started_at > $2 AND a.finished_at IS NOT NULL ORDER BY a.started_at DESC LIMIT $3`,
    [taskType, since, sampleLimit],
  );
  const failures = await run<{ error_code: string; n: number }>(
    ctx.pool,
    'analysing failures',
    `SELECT f.error_code, count(*)::integer AS n FROM ${failure} f JOIN ${task} t ON f.task_id = t.id
     WHERE t.task_type = $1 AND f.failed_at > $2 GROUP BY f.error_code ORDER BY n DESC, f.error_code COLLATE "C" LIMIT 10`,
    [taskType, since],
  );
  const oldest = await run<{ since: Date | null }>(
    ctx.pool,
    'analysing the queue',
    `SELECT min(available_at) AS since FROM ${task} WHERE task_type = $1 AND status = ${STATUS_SQL.QUEUED} AND available_at <= now()`,
    [taskType],
  );
  const oldestSince = oldest.rows[0]?.since ?? null;
  return {
    statusCounts,
    oldestWaitingSince: oldestSince === null ? null : decodePostgres.time(oldestSince),
    attempts: attempts.rows.map((row) => ({
      startedAt: decodePostgres.time(row.started_at),
      finishedAt: decodePostgres.time(row.finished_at),
      taskCreatedAt: decodePostgres.time(row.create_time),
      taskAvailableAt: decodePostgres.time(row.available_at),
      attempt: Number(row.attempt),
    })),
    failureCounts: failures.rows.map((row) => ({ errorCode: row.error_code, count: row.n })),
  };
}
