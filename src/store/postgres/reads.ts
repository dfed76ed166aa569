/**
 * Read-only queries (tasks, counts, history). Filters are added as SQL text
 * only for their shape ("owner = $n"); every value is a parameter. Scope is
 * always a WHERE term, so a task outside it answers exactly like a missing one.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import { isTaskStatus, isTerminal, type TaskStatus } from '../../core/status.js';
import type { Task } from '../../core/task.js';
import { actionFromRow, attemptFromRow, deadLetterFromRow, emptyStatusCounts, failureFromRow, stepFromRow, taskFromRow, type Row } from '../rows.js';
import { CURRENT_CYCLE, LIKE_ESCAPE, likePrefix, pgPathLiteral, STEP_ORDER_SQL, type PayloadCondition } from '../rules/index.js';
import type {
  AttemptRecord,
  ClaimPlan,
  DeadLetter,
  FailureRow,
  ListDeadLettersParams,
  ListTasksParams,
  RateWindow,
  StepRecord,
  TaskActionRecord,
  TaskFilterParams,
  TaskPage,
} from '../types.js';
import { run, type PgContext } from './connection.js';
import { decodePostgres, uuidKey } from './encode.js';

/** The partitioned history beside a table (migration 18; history.ts): empty unless the store moves tasks there. */
function historyOf(table: string): string {
  return `${table}_history`;
}

/**
 * A task's attempts, failures or actions, wherever they are: the history
 * tables have the same columns in the same order, then the task's finish time.
 */
function withHistory(table: string, where: string): string {
  return `SELECT *, NULL::timestamptz AS task_finish_time FROM ${table} ${where} UNION ALL SELECT * FROM ${historyOf(table)} ${where}`;
}

/** Collects WHERE conditions and their parameters. */
class Where {
  readonly conditions: string[] = [];
  readonly values: unknown[] = [];
  add(condition: (placeholder: string) => string, value: unknown): this {
    this.values.push(value);
    this.conditions.push(condition(`$${this.values.length}`));
    return this;
  }
  scope(scope: Scope, column = 'owner'): this {
    const owner = scopeOwner(scope);
    return owner === null ? this : this.add((p) => `${column} = ${p}`, owner);
  }
  get sql(): string {
    return this.conditions.length > 0 ? `WHERE ${this.conditions.join(' AND ')}` : '';
  }
  next(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export async function getTask(ctx: PgContext, id: string, scope: Scope): Promise<Task | null> {
  const where = new Where().add((p) => `id = ${p}`, uuidKey(id)).scope(scope);
  const result = await run<Row>(
    ctx.pool,
    'reading a task',
    `SELECT * FROM ${ctx.tables.task} ${where.sql} UNION ALL SELECT * FROM ${historyOf(ctx.tables.task)} ${where.sql} LIMIT 1`,
    where.values,
  );
  return result.rows[0] ? taskFromRow(result.rows[0], decodePostgres) : null;
}

export async function listTasks(ctx: PgContext, params: ListTasksParams): Promise<TaskPage> {
  const { sql, values } = listSql(ctx, params);
  const result = await run<Row>(ctx.pool, 'listing tasks', sql, values);
  const tasks = result.rows.slice(0, params.limit).map((row) => taskFromRow(row, decodePostgres));
  return { tasks, nextCursor: result.rows.length > params.limit ? tasks[tasks.length - 1]!.id : null };
}

/** The listing's plan (EXPLAIN): shows whether an operator's expression index serves a payload filter. */
export async function explainListTasks(ctx: PgContext, params: ListTasksParams): Promise<ClaimPlan> {
  const { sql, values } = listSql(ctx, params);
  const result = await run<{ 'QUERY PLAN': string }>(ctx.pool, 'explaining a listing', `EXPLAIN ${sql}`, values);
  return { plan: result.rows.map((row) => row['QUERY PLAN']).join('\n') };
}

/** A task filter's WHERE terms (a listing's, a count's). */
function filterWhere(params: TaskFilterParams): Where {
  const where = new Where().scope(params.scope);
  if (params.owner != null) where.add((p) => `owner = ${p}`, params.owner);
  if (params.taskType != null) where.add((p) => `task_type = ${p}`, params.taskType);
  if (params.idempotencyKey != null) where.add((p) => `idempotency_key = ${p}`, params.idempotencyKey);
  if (params.status && params.status.length > 0) where.add((p) => `status = ANY(${p}::text[])`, [...params.status]);
  if (params.ids) where.add((p) => `id = ANY(${p}::uuid[])`, params.ids.map(uuidKey));
  if (params.idAtLeast != null) where.add((p) => `id >= ${p}`, uuidKey(params.idAtLeast));
  if (params.idBelow != null) where.add((p) => `id < ${p}`, uuidKey(params.idBelow));
  if (params.errorCode != null) where.add((p) => `last_error_code = ${p}`, params.errorCode);
  if (params.idempotencyKeyPrefix != null) where.add((p) => `idempotency_key LIKE ${p} ${LIKE_ESCAPE}`, likePrefix(params.idempotencyKeyPrefix));
  for (const condition of params.payload ?? []) payloadTerm(where, condition);
  return where;
}

/** The history holds terminal tasks only: a filter without one (diagnose's RUNNING list) must not walk its millions of rows. */
const readsHistory = (params: TaskFilterParams): boolean => !params.status || params.status.length === 0 || params.status.some(isTerminal);

export async function countTasks(ctx: PgContext, params: TaskFilterParams): Promise<number> {
  const where = filterWhere(params);
  const history = readsHistory(params) ? ` + (SELECT count(*) FROM ${historyOf(ctx.tables.task)} ${where.sql})` : '';
  const result = await run<{ n: string }>(
    ctx.pool,
    'counting tasks',
    `SELECT ((SELECT count(*) FROM ${ctx.tables.task} ${where.sql})${history})::text AS n`,
    where.values,
  );
  return Number(result.rows[0]!.n);
}

function listSql(ctx: PgContext, params: ListTasksParams): { sql: string; values: unknown[] } {
  const where = filterWhere(params);
  if (params.cursor != null) where.add((p) => `id < ${p}`, uuidKey(params.cursor));
  const limit = where.next(params.limit + 1);
  const live = `SELECT * FROM ${ctx.tables.task} ${where.sql} ORDER BY id DESC LIMIT ${limit}`;
  const inHistory = readsHistory(params);
  return {
    sql: inHistory
      ? `(${live}) UNION ALL (SELECT * FROM ${historyOf(ctx.tables.task)} ${where.sql} ORDER BY id DESC LIMIT ${limit}) ORDER BY id DESC LIMIT ${limit}`
      : live,
    values: where.values,
  };
}

/**
 * payload_json (text, migrations.ts says why) as jsonb, or null for a payload
 * holding a \u0000 escape (a NUL in a string, which jsonb refuses): one such
 * task must not fail every search, nor an operator's index its submit.
 */
const PAYLOAD_JSONB = "(CASE WHEN strpos(payload_json, '\\u0000') = 0 THEN payload_json::jsonb END)";

/**
 * A payload filter: equality compares jsonb values (42 = 42.0, never "42" or
 * true), the expression `(PAYLOAD_JSONB #> '{a,b}')` being the one an
 * operator's expression index names (docs/store.md). A prefix reads the
 * field as text (#>>) and matches strings only.
 */
function payloadTerm(where: Where, condition: PayloadCondition): void {
  const path = pgPathLiteral(condition.segments);
  if (condition.op === 'prefix') {
    where.add(
      (p) => `jsonb_typeof(${PAYLOAD_JSONB} #> ${path}) = 'string' AND (${PAYLOAD_JSONB} #>> ${path}) LIKE ${p} ${LIKE_ESCAPE}`,
      likePrefix(String(condition.value)),
    );
  } else {
    where.add((p) => `(${PAYLOAD_JSONB} #> ${path}) = ${p}::jsonb`, JSON.stringify(condition.value));
  }
}

export async function countByStatus(ctx: PgContext, scope: Scope, taskType: string | null | undefined): Promise<Record<TaskStatus, number>> {
  const where = new Where().scope(scope);
  if (taskType != null) where.add((p) => `task_type = ${p}`, taskType);
  const result = await run<{ status: TaskStatus; n: number }>(
    ctx.pool,
    'counting tasks',
    `SELECT status, count(*)::integer AS n FROM ${ctx.tables.task} ${where.sql} GROUP BY status`,
    where.values,
  );
  const counts = emptyStatusCounts();
  for (const row of result.rows) if (isTaskStatus(row.status)) counts[row.status] = row.n;
  return counts;
}

/** Dead letters neither replayed nor archived. */
export async function countDeadLetters(ctx: PgContext, scope: Scope, taskType: string | null | undefined): Promise<number> {
  const where = new Where().scope(scope);
  if (taskType != null) where.add((p) => `task_type = ${p}`, taskType);
  where.conditions.push('replayed_at IS NULL AND archived_at IS NULL');
  const result = await run<{ n: number }>(
    ctx.pool,
    'counting dead letters',
    `SELECT count(*)::integer AS n FROM ${ctx.tables.deadLetter} ${where.sql}`,
    where.values,
  );
  return result.rows[0]?.n ?? 0;
}

export async function listAttempts(ctx: PgContext, taskId: string): Promise<AttemptRecord[]> {
  const result = await run<Row>(ctx.pool, 'listing attempts', `${withHistory(ctx.tables.attempt, 'WHERE task_id = $1')} ORDER BY attempt`, [uuidKey(taskId)]);
  return result.rows.map((row) => attemptFromRow(row, decodePostgres));
}

export async function listFailures(ctx: PgContext, taskId: string, limit: number | undefined): Promise<FailureRow[]> {
  const result = await run<Row>(
    ctx.pool,
    'listing failures',
    `${withHistory(ctx.tables.failure, 'WHERE task_id = $1')} ORDER BY failed_at DESC, attempt DESC, id DESC LIMIT $2`,
    [uuidKey(taskId), limit ?? 100],
  );
  return result.rows.map((row) => failureFromRow(row, decodePostgres));
}

export async function listTaskActions(ctx: PgContext, taskId: string, limit: number | undefined): Promise<TaskActionRecord[]> {
  const result = await run<Row>(
    ctx.pool,
    'listing task actions',
    `${withHistory(ctx.tables.action, 'WHERE task_id = $1')} ORDER BY acted_at DESC, id DESC LIMIT $2`,
    [uuidKey(taskId), limit ?? 100],
  );
  return result.rows.map((row) => actionFromRow(row, decodePostgres));
}

/** A task's steps (history.ts deletes them when it moves a task into the history: they are not looked for there). */
export async function rateWindows(ctx: PgContext, scopes: readonly { scopeKey: string; periodMs: number }[]): Promise<RateWindow[]> {
  if (scopes.length === 0) return [];
  const result = await run<Row>(
    ctx.pool,
    'reading rate windows',
    `SELECT u.scope_key, u.ord, count(s.started_at) AS n, min(s.started_at) AS oldest, min(c.now) AS now
     FROM unnest($1::text[], $2::double precision[]) WITH ORDINALITY AS u(scope_key, period_ms, ord)
     CROSS JOIN (SELECT clock_timestamp() AS now) c
     LEFT JOIN ${ctx.tables.rateStart} s ON s.scope_key = u.scope_key AND s.started_at > c.now - u.period_ms * interval '1 millisecond'
     GROUP BY u.scope_key, u.ord ORDER BY u.ord`,
    [scopes.map((s) => s.scopeKey), scopes.map((s) => s.periodMs)],
  );
  return result.rows.map((row) => ({
    scopeKey: String(row.scope_key),
    used: Number(row.n),
    oldestStartAt: row.oldest === null ? null : decodePostgres.time(row.oldest),
    now: decodePostgres.time(row.now),
  }));
}

export async function listRateStarts(ctx: PgContext, withinMs: number): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }> {
  const result = await run<Row>(
    ctx.pool,
    'reading the rate start log',
    `SELECT c.now, s.scope_key, s.started_at FROM (SELECT clock_timestamp() AS now) c
     LEFT JOIN ${ctx.tables.rateStart} s ON s.started_at > c.now - $1 * interval '1 millisecond'`,
    [withinMs],
  );
  return {
    now: decodePostgres.time(result.rows[0]!.now),
    starts: result.rows
      .filter((row) => row.scope_key !== null)
      .map((row) => ({ scopeKey: String(row.scope_key), startedAt: decodePostgres.time(row.started_at) })),
  };
}

export async function listSteps(ctx: PgContext, taskId: string, currentCycleOnly: boolean | undefined): Promise<StepRecord[]> {
  const cycle = currentCycleOnly ? ` AND cycle = ${CURRENT_CYCLE}` : '';
  const result = await run<Row>(ctx.pool, 'listing steps', `SELECT * FROM ${ctx.tables.step} WHERE task_id = $1${cycle} ORDER BY ${STEP_ORDER_SQL}`, [
    uuidKey(taskId),
  ]);
  return result.rows.map((row) => stepFromRow(row, decodePostgres));
}

export async function listDeadLetters(ctx: PgContext, params: ListDeadLettersParams): Promise<DeadLetter[]> {
  const where = new Where().scope(params.scope);
  if (params.taskType != null) where.add((p) => `task_type = ${p}`, params.taskType);
  if (params.movedAfter != null) where.add((p) => `moved_at >= ${p}`, params.movedAfter);
  if (params.movedBefore != null) where.add((p) => `moved_at < ${p}`, params.movedBefore);
  if (params.taskIds) where.add((p) => `original_task_id = ANY(${p}::uuid[])`, params.taskIds.map(uuidKey));
  if (params.pendingOnly) where.conditions.push('replayed_at IS NULL AND archived_at IS NULL');
  if (params.cursor != null) where.add((p) => `id < ${p}`, uuidKey(params.cursor));
  const limit = where.next(params.limit);
  const result = await run<Row>(
    ctx.pool,
    'listing dead letters',
    `SELECT * FROM ${ctx.tables.deadLetter} ${where.sql} ORDER BY id DESC LIMIT ${limit}`,
    where.values,
  );
  return result.rows.map((row) => deadLetterFromRow(row, decodePostgres));
}
