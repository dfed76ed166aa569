/**
 * Read-only queries of the MySQL store: tasks, counts and history. Scope is
 * always a WHERE term, so a task outside it answers exactly like a missing one.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Task } from '../../core/task.js';
import { actionFromRow, attemptFromRow, deadLetterFromRow, emptyStatusCounts, failureFromRow, stepFromRow, taskFromRow } from '../rows.js';
import { CURRENT_CYCLE, jsonPathLiteral, LIKE_ESCAPE, likePrefix, STEP_ORDER_SQL, type PayloadCondition } from '../rules/index.js';
import type {
  AttemptRecord,
  ClaimPlan,
  DeadLetter,
  FailureRow,
  ListDeadLettersParams,
  ListTasksParams,
  TaskFilterParams,
  RateWindow,
  StepRecord,
  TaskActionRecord,
  TaskPage,
} from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { decode, sqlTime } from './encode.js';

class Where {
  readonly terms: string[] = [];
  readonly values: unknown[] = [];
  add(term: string, ...values: unknown[]): this {
    this.terms.push(term);
    this.values.push(...values);
    return this;
  }
  scope(scope: Scope): this {
    const owner = scopeOwner(scope);
    return owner === null ? this : this.add('owner = ?', owner);
  }
  get sql(): string {
    return this.terms.length === 0 ? '' : `WHERE ${this.terms.join(' AND ')}`;
  }
}

export async function getTask(db: MysqlDatabase, conn: Conn, id: string, scope: Scope): Promise<Task | null> {
  const where = new Where().add('id = ?', id).scope(scope);
  const rows = await db.rows(conn, `SELECT * FROM system_async_task ${where.sql}`, where.values);
  return rows[0] ? taskFromRow(rows[0], decode) : null;
}

export async function listTasks(db: MysqlDatabase, conn: Conn, params: ListTasksParams): Promise<TaskPage> {
  const { sql, values, limit } = listSql(params);
  const rows = await db.rows(conn, sql, values);
  const tasks = rows.slice(0, limit).map((row) => taskFromRow(row, decode));
  return { tasks, nextCursor: rows.length > limit && tasks.length > 0 ? tasks[tasks.length - 1]!.id : null };
}

/** The listing's plan (EXPLAIN, rows as JSON): shows whether an operator's indexed generated column serves a payload filter. */
export async function explainListTasks(db: MysqlDatabase, conn: Conn, params: ListTasksParams): Promise<ClaimPlan> {
  const { sql, values } = listSql(params);
  return { plan: JSON.stringify(await db.rows(conn, `EXPLAIN ${sql}`, values)) };
}

/** A task filter's WHERE terms (a listing's, a count's). */
function filterWhere(params: TaskFilterParams): Where {
  const where = new Where().scope(params.scope);
  if (params.owner != null) where.add('owner = ?', params.owner);
  if (params.taskType != null) where.add('task_type = ?', params.taskType);
  if (params.idempotencyKey != null) where.add('idempotency_key = ?', params.idempotencyKey);
  if (params.status && params.status.length > 0) where.add('status IN (?)', [...params.status]);
  if (params.ids) where.add('id IN (?)', params.ids.length > 0 ? [...params.ids] : [null]);
  if (params.idAtLeast != null) where.add('id >= ?', params.idAtLeast);
  if (params.idBelow != null) where.add('id < ?', params.idBelow);
  if (params.errorCode != null) where.add('last_error_code = ?', params.errorCode);
  if (params.idempotencyKeyPrefix != null) where.add(`idempotency_key LIKE ? ${LIKE_ESCAPE}`, likePrefix(params.idempotencyKeyPrefix));
  for (const condition of params.payload ?? []) payloadTerm(where, condition);
  return where;
}

export async function countTasks(db: MysqlDatabase, conn: Conn, params: TaskFilterParams): Promise<number> {
  const where = filterWhere(params);
  const rows = await db.rows(conn, `SELECT COUNT(*) AS n FROM system_async_task ${where.sql}`, where.values);
  return Number(rows[0]!.n);
}

function listSql(params: ListTasksParams): { sql: string; values: unknown[]; limit: number } {
  const where = filterWhere(params);
  if (params.cursor != null) where.add('id < ?', params.cursor);
  const limit = Math.max(0, Math.floor(params.limit));
  return { sql: `SELECT * FROM system_async_task ${where.sql} ORDER BY id DESC LIMIT ?`, values: [...where.values, limit + 1], limit };
}

/**
 * A payload filter. JSON_TYPE keeps equality typed (42 never matches "42",
 * true never 1); strings compare unquoted under a binary collation
 * (case-sensitive, like the other stores). The expression
 * `JSON_EXTRACT(payload_json, '$."a"."b"')` is the one an operator's generated
 * column repeats (docs/store.md).
 */
function payloadTerm(where: Where, condition: PayloadCondition): void {
  const value = `JSON_EXTRACT(payload_json, ${jsonPathLiteral(condition.segments)})`;
  const text = `JSON_UNQUOTE(${value}) COLLATE utf8mb4_bin`;
  if (condition.op === 'prefix') {
    where.add(`JSON_TYPE(${value}) = 'STRING' AND ${text} LIKE ? ${LIKE_ESCAPE}`, likePrefix(String(condition.value)));
  } else if (typeof condition.value === 'boolean') {
    where.add(`JSON_TYPE(${value}) = 'BOOLEAN' AND ${text} = ?`, condition.value ? 'true' : 'false');
  } else if (typeof condition.value === 'number') {
    where.add(`JSON_TYPE(${value}) IN ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') AND ${value} = ?`, condition.value);
  } else {
    where.add(`JSON_TYPE(${value}) = 'STRING' AND ${text} = ?`, condition.value);
  }
}

export async function countByStatus(db: MysqlDatabase, conn: Conn, scope: Scope, taskType: string | null | undefined): Promise<Record<TaskStatus, number>> {
  const where = new Where().scope(scope);
  if (taskType != null) where.add('task_type = ?', taskType);
  const rows = await db.rows(conn, `SELECT status, COUNT(*) AS n FROM system_async_task ${where.sql} GROUP BY status`, where.values);
  const counts = emptyStatusCounts();
  for (const row of rows) counts[String(row.status) as TaskStatus] = Number(row.n);
  return counts;
}

export async function listAttempts(db: MysqlDatabase, conn: Conn, taskId: string): Promise<AttemptRecord[]> {
  const rows = await db.rows(conn, 'SELECT * FROM system_async_task_attempt WHERE task_id = ? ORDER BY attempt', [taskId]);
  return rows.map((row) => attemptFromRow(row, decode));
}

export async function listFailures(db: MysqlDatabase, conn: Conn, taskId: string, limit: number | undefined): Promise<FailureRow[]> {
  const rows = await db.rows(conn, 'SELECT * FROM system_async_task_failure WHERE task_id = ? ORDER BY failed_at DESC, attempt DESC, id DESC LIMIT ?', [
    taskId,
    Math.max(0, Math.floor(limit ?? 100)),
  ]);
  return rows.map((row) => failureFromRow(row, decode));
}

export async function listTaskActions(db: MysqlDatabase, conn: Conn, taskId: string, limit: number | undefined): Promise<TaskActionRecord[]> {
  const rows = await db.rows(conn, 'SELECT * FROM system_async_task_action WHERE task_id = ? ORDER BY acted_at DESC, id DESC LIMIT ?', [
    taskId,
    Math.max(0, Math.floor(limit ?? 100)),
  ]);
  return rows.map((row) => actionFromRow(row, decode));
}

export async function rateWindows(db: MysqlDatabase, conn: Conn, scopes: readonly { scopeKey: string; periodMs: number }[]): Promise<RateWindow[]> {
  const windows: RateWindow[] = [];
  for (const { scopeKey, periodMs } of scopes) {
    const [row] = await db.rows(
      conn,
      `SELECT COUNT(*) AS n, MIN(started_at) AS oldest, NOW(3) AS now FROM system_async_task_rate_start
       WHERE scope_key = ? AND started_at > NOW(3) - INTERVAL ? MICROSECOND`,
      [scopeKey, Math.round(periodMs) * 1000],
    );
    windows.push({ scopeKey, used: Number(row!.n), oldestStartAt: row!.oldest === null ? null : decode.time(row!.oldest), now: decode.time(row!.now) });
  }
  return windows;
}

export async function listRateStarts(db: MysqlDatabase, conn: Conn, withinMs: number): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }> {
  const [clock] = await db.rows(conn, 'SELECT NOW(3) AS now');
  const now = String(clock!.now);
  const rows = await db.rows(conn, 'SELECT scope_key, started_at FROM system_async_task_rate_start WHERE started_at > ?', [
    sqlTime(new Date(decode.time(now).getTime() - withinMs)),
  ]);
  return { now: decode.time(now), starts: rows.map((row) => ({ scopeKey: String(row.scope_key), startedAt: decode.time(row.started_at) })) };
}

export async function listSteps(db: MysqlDatabase, conn: Conn, taskId: string, currentCycleOnly: boolean | undefined): Promise<StepRecord[]> {
  const cycle = currentCycleOnly ? ` AND cycle = ${CURRENT_CYCLE}` : '';
  const rows = await db.rows(conn, `SELECT * FROM system_async_task_step WHERE task_id = ?${cycle} ORDER BY ${STEP_ORDER_SQL}`, [taskId]);
  return rows.map((row) => stepFromRow(row, decode));
}

/** Dead letters neither replayed nor archived. */
export async function countDeadLetters(db: MysqlDatabase, conn: Conn, scope: Scope, taskType: string | null | undefined): Promise<number> {
  const where = new Where().add('replayed_at IS NULL AND archived_at IS NULL').scope(scope);
  if (taskType != null) where.add('task_type = ?', taskType);
  const rows = await db.rows(conn, `SELECT COUNT(*) AS n FROM system_async_task_dead_letter ${where.sql}`, where.values);
  return Number(rows[0]?.n ?? 0);
}

export async function listDeadLetters(db: MysqlDatabase, conn: Conn, params: ListDeadLettersParams): Promise<DeadLetter[]> {
  const where = new Where().scope(params.scope);
  if (params.taskType != null) where.add('task_type = ?', params.taskType);
  if (params.movedAfter != null) where.add('moved_at >= ?', sqlTime(params.movedAfter));
  if (params.movedBefore != null) where.add('moved_at < ?', sqlTime(params.movedBefore));
  if (params.taskIds) where.add('original_task_id IN (?)', params.taskIds.length > 0 ? [...params.taskIds] : [null]);
  if (params.pendingOnly) where.add('replayed_at IS NULL AND archived_at IS NULL');
  if (params.cursor != null) where.add('id < ?', params.cursor);
  const rows = await db.rows(conn, `SELECT * FROM system_async_task_dead_letter ${where.sql} ORDER BY id DESC LIMIT ?`, [
    ...where.values,
    Math.max(0, Math.floor(params.limit)),
  ]);
  return rows.map((row) => deadLetterFromRow(row, decode));
}
