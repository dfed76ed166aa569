/**
 * Read-only queries on SQLite: tasks, counts and history. Scope is always a
 * WHERE term, so a task outside it answers exactly like a missing one.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Task } from '../../core/task.js';
import { actionFromRow, attemptFromRow, deadLetterFromRow, emptyStatusCounts, failureFromRow, stepFromRow, taskFromRow, type Row } from '../rows.js';
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
import { Where } from '../where.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite, toSqliteTime } from './encode.js';

export function getTask(db: Db, id: string, scope: Scope): Task | null {
  const owner = scopeOwner(scope);
  const row = statement(db, `SELECT * FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`).get(
    ...(owner === null ? [id] : [id, owner]),
  ) as Row | undefined;
  return row ? taskFromRow(row, decodeSqlite) : null;
}

export function listTasks(db: Db, params: ListTasksParams): TaskPage {
  const { sql, values } = listSql(params);
  const rows = statement(db, sql).all(...values) as Row[];
  const tasks = rows.slice(0, params.limit).map((row) => taskFromRow(row, decodeSqlite));
  return { tasks, nextCursor: rows.length > params.limit ? tasks[tasks.length - 1]!.id : null };
}

/** The listing's plan (EXPLAIN QUERY PLAN): shows whether an operator's expression index serves a payload filter. */
export function explainListTasks(db: Db, params: ListTasksParams): ClaimPlan {
  // EXPLAIN QUERY PLAN never checks the schema cookie: a read first loads an index created since (and its statistics).
  db.prepare('SELECT count(*) FROM sqlite_master').get();
  const { sql, values } = listSql(params);
  const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as { detail: string }[];
  return { plan: rows.map((row) => row.detail).join('\n') };
}

/** A task filter's WHERE terms (a listing's, a count's). */
function filterWhere(params: TaskFilterParams): Where {
  const where = new Where()
    .optional('owner = ?', scopeOwner(params.scope))
    .optional('owner = ?', params.owner)
    .optional('task_type = ?', params.taskType)
    .optional('idempotency_key = ?', params.idempotencyKey)
    .optional('id >= ?', params.idAtLeast)
    .optional('id < ?', params.idBelow)
    .optional('last_error_code = ?', params.errorCode);
  if (params.status && params.status.length > 0) where.in('status', params.status);
  if (params.ids) where.in('id', params.ids.length > 0 ? params.ids : [null]);
  if (params.idempotencyKeyPrefix != null) {
    // LIKE is case-insensitive on SQLite: the substr term keeps the prefix exact.
    const prefix = params.idempotencyKeyPrefix;
    where.add(`idempotency_key LIKE ? ${LIKE_ESCAPE} AND substr(idempotency_key, 1, length(?)) = ?`, likePrefix(prefix), prefix, prefix);
  }
  for (const condition of params.payload ?? []) payloadTerm(where, condition);
  return where;
}

export function countTasks(db: Db, params: TaskFilterParams): number {
  const where = filterWhere(params);
  return (statement(db, `SELECT COUNT(*) AS n FROM system_async_task ${where}`).get(...where.values) as { n: number }).n;
}

function listSql(params: ListTasksParams): { sql: string; values: unknown[] } {
  const where = filterWhere(params).optional('id < ?', params.cursor);
  return { sql: `SELECT * FROM system_async_task ${where} ORDER BY id DESC LIMIT ?`, values: [...where.values, params.limit + 1] };
}

/**
 * A payload filter. json_extract answers SQL values (TEXT for a JSON string,
 * INTEGER/REAL for a number, 1/0 for true/false): the bound value's storage
 * class keeps 42 from matching "42"; json_type keeps true from matching 1.
 * The expression is `json_extract(payload_json, '$."a"."b"')`, the one an
 * operator's expression index names (docs/store.md).
 */
function payloadTerm(where: Where, condition: PayloadCondition): void {
  const path = jsonPathLiteral(condition.segments);
  const value = `json_extract(payload_json, ${path})`;
  const type = `json_type(payload_json, ${path})`;
  if (condition.op === 'prefix') {
    const prefix = String(condition.value);
    where.add(`${type} = 'text' AND ${value} LIKE ? ${LIKE_ESCAPE} AND substr(${value}, 1, length(?)) = ?`, likePrefix(prefix), prefix, prefix);
  } else if (typeof condition.value === 'boolean') {
    where.add(`${type} = ?`, condition.value ? 'true' : 'false');
  } else if (typeof condition.value === 'number') {
    where.add(`${value} = ? AND ${type} IN ('integer', 'real')`, condition.value);
  } else {
    where.add(`${value} = ? AND ${type} = 'text'`, condition.value);
  }
}

export function countByStatus(db: Db, scope: Scope, taskType: string | null | undefined): Record<TaskStatus, number> {
  const where = new Where().optional('owner = ?', scopeOwner(scope)).optional('task_type = ?', taskType);
  const rows = statement(db, `SELECT status, COUNT(*) AS n FROM system_async_task ${where} GROUP BY status`).all(...where.values) as {
    status: TaskStatus;
    n: number;
  }[];
  const counts = emptyStatusCounts();
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

export function listAttempts(db: Db, taskId: string): AttemptRecord[] {
  const rows = statement(db, 'SELECT * FROM system_async_task_attempt WHERE task_id = ? ORDER BY attempt').all(taskId) as Row[];
  return rows.map((row) => attemptFromRow(row, decodeSqlite));
}

export function listFailures(db: Db, taskId: string, limit: number | undefined): FailureRow[] {
  const rows = statement(db, 'SELECT * FROM system_async_task_failure WHERE task_id = ? ORDER BY failed_at DESC, attempt DESC LIMIT ?').all(
    taskId,
    limit ?? 100,
  ) as Row[];
  return rows.map((row) => failureFromRow(row, decodeSqlite));
}

export function listTaskActions(db: Db, taskId: string, limit: number | undefined): TaskActionRecord[] {
  const rows = statement(db, 'SELECT * FROM system_async_task_action WHERE task_id = ? ORDER BY acted_at DESC, id DESC LIMIT ?').all(
    taskId,
    limit ?? 100,
  ) as Row[];
  return rows.map((row) => actionFromRow(row, decodeSqlite));
}

export function rateWindows(db: Db, scopes: readonly { scopeKey: string; periodMs: number }[], nowMs: number): RateWindow[] {
  const read = statement(db, 'SELECT COUNT(*) AS n, MIN(started_at) AS oldest FROM system_async_task_rate_start WHERE scope_key = ? AND started_at > ?');
  return scopes.map(({ scopeKey, periodMs }) => {
    const row = read.get(scopeKey, toSqliteTime(nowMs - periodMs)) as { n: number; oldest: string | null };
    return { scopeKey, used: Number(row.n), oldestStartAt: row.oldest === null ? null : decodeSqlite.time(row.oldest), now: new Date(nowMs) };
  });
}

export function listRateStarts(db: Db, withinMs: number, nowMs: number): { now: Date; starts: { scopeKey: string; startedAt: Date }[] } {
  const rows = statement(db, 'SELECT scope_key, started_at FROM system_async_task_rate_start WHERE started_at > ?').all(
    toSqliteTime(nowMs - withinMs),
  ) as Row[];
  return { now: new Date(nowMs), starts: rows.map((row) => ({ scopeKey: String(row.scope_key), startedAt: decodeSqlite.time(row.started_at) })) };
}

export function listSteps(db: Db, taskId: string, currentCycleOnly: boolean | undefined): StepRecord[] {
  const cycle = currentCycleOnly ? ` AND cycle = ${CURRENT_CYCLE}` : '';
  const rows = statement(db, `SELECT * FROM system_async_task_step WHERE task_id = ?${cycle} ORDER BY ${STEP_ORDER_SQL}`).all(taskId) as Row[];
  return rows.map((row) => stepFromRow(row, decodeSqlite));
}

/** Dead letters neither replayed nor archived. */
export function countDeadLetters(db: Db, scope: Scope, taskType: string | null | undefined): number {
  const where = new Where().add('replayed_at IS NULL AND archived_at IS NULL').optional('owner = ?', scopeOwner(scope)).optional('task_type = ?', taskType);
  return (statement(db, `SELECT COUNT(*) AS n FROM system_async_task_dead_letter ${where}`).get(...where.values) as { n: number }).n;
}

export function listDeadLetters(db: Db, params: ListDeadLettersParams): DeadLetter[] {
  const where = new Where()
    .optional('owner = ?', scopeOwner(params.scope))
    .optional('task_type = ?', params.taskType)
    .optional('moved_at >= ?', params.movedAfter ? toSqliteTime(params.movedAfter.getTime()) : null)
    .optional('moved_at < ?', params.movedBefore ? toSqliteTime(params.movedBefore.getTime()) : null)
    .optional('id < ?', params.cursor);
  if (params.taskIds) where.in('original_task_id', params.taskIds.length > 0 ? params.taskIds : [null]);
  if (params.pendingOnly) where.add('replayed_at IS NULL AND archived_at IS NULL');
  const rows = statement(db, `SELECT * FROM system_async_task_dead_letter ${where} ORDER BY id DESC LIMIT ?`).all(...where.values, params.limit) as Row[];
  return rows.map((row) => deadLetterFromRow(row, decodeSqlite));
}
