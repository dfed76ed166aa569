/**
 * Control-plane operations on SQLite: dead-letter replay and archive,
 * policies, cleanup, the worker registry and analysis data. Each function
 * runs inside a transaction the store opens.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { emptyStatusCounts, policyFromRow, workerFromRow, type Row } from '../rows.js';
import type { Actor, AnalysisData, Policy, PolicyInput, PurgeParams, PurgeResult, ReplayResult, WorkerRecord, WorkerRegistration } from '../types.js';
import { Where } from '../where.js';
import { reopen } from './flows.js';
import {
  ACTION_COLUMNS,
  CURRENT_CYCLE,
  deadLetterAction,
  DEPENDENCY_TABLE,
  endStepCycleSql,
  REPLAYABLE_STATUS,
  replayAssignments,
  STATUS_SQL,
  TERMINAL_SQL,
} from '../rules/index.js';
import { MAX_RATE_PERIOD_MS } from '../rules/rates.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite, fromSqliteTime, toSqliteTime } from './encode.js';

/** Operator action rows (rules/actions.ts), inside the transaction of the change they record. */
export function recordActions(db: Db, rows: readonly unknown[][], now: string): void {
  if (rows.length === 0) return;
  const insert = statement(db, `INSERT INTO system_async_task_action ${ACTION_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  for (const row of rows) insert.run(...row, now);
}

/** A new attempt cycle of `taskId` began (its row is written already): its steps so far belong to the cycle that ended (rules/steps.ts). */
export function endStepCycle(db: Db, taskId: string): void {
  statement(
    db,
    `UPDATE system_async_task_step SET ${endStepCycleSql('(SELECT attempt_count FROM system_async_task WHERE id = ?)')} WHERE task_id = ? AND cycle = ${CURRENT_CYCLE}`,
  ).run(taskId, taskId);
}

export function replayDeadLetters(db: Db, ids: readonly string[], scope: Scope, now: string, actor: Actor | undefined): ReplayResult[] {
  const owner = scopeOwner(scope);
  const find = statement(db, `SELECT * FROM system_async_task_dead_letter WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`);
  const requeue = statement(db, `UPDATE system_async_task SET ${replayAssignments('@now').join(', ')} WHERE id = @id AND status = ${REPLAYABLE_STATUS}`);
  const exists = statement(db, 'SELECT status FROM system_async_task WHERE id = ?');
  const mark = statement(db, 'UPDATE system_async_task_dead_letter SET replayed_at = ?, replay_task_id = ? WHERE id = ?');
  return ids.map((id): ReplayResult => {
    const letter = find.get(...(owner === null ? [id] : [id, owner])) as Row | undefined;
    if (!letter) return { id, outcome: 'NOT_FOUND', taskId: null };
    if (letter.replayed_at !== null) return { id, outcome: 'ALREADY_REPLAYED', taskId: letter.replay_task_id as string };
    if (letter.archived_at !== null) return { id, outcome: 'ARCHIVED', taskId: null };
    const taskId = String(letter.original_task_id);
    if (requeue.run({ now, id: taskId }).changes === 1) {
      mark.run(now, taskId, id);
      reopen(db, [taskId], now);
      endStepCycle(db, taskId);
      if (actor) recordActions(db, [deadLetterAction('REPLAY', actor, taskId, id)], now);
      return { id, outcome: 'REPLAYED', taskId };
    }
    return { id, outcome: exists.get(taskId) ? 'TASK_NOT_FAILED' : 'TASK_MISSING', taskId };
  });
}

export function archiveDeadLetters(db: Db, ids: readonly string[], scope: Scope, now: string, actor: Actor | undefined): number {
  const owner = scopeOwner(scope);
  const archive = statement(
    db,
    `UPDATE system_async_task_dead_letter SET archived_at = ? WHERE id = ? AND archived_at IS NULL ${owner === null ? '' : 'AND owner = ?'}
     RETURNING original_task_id`,
  );
  let archived = 0;
  for (const id of ids) {
    const letter = archive.get(...(owner === null ? [now, id] : [now, id, owner])) as { original_task_id: string } | undefined;
    if (!letter) continue;
    archived += 1;
    if (actor) recordActions(db, [deadLetterAction('ARCHIVE', actor, letter.original_task_id, id)], now);
  }
  return archived;
}

export function savePolicy(db: Db, policy: PolicyInput, now: string): Policy {
  statement(
    db,
    `INSERT INTO system_async_task_policy (policy_key, task_type, max_concurrency, max_attempts, retry_base_delay_ms, enabled, update_time,
       rate_limit, rate_period_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (policy_key) DO UPDATE SET task_type = excluded.task_type, max_concurrency = excluded.max_concurrency,
       max_attempts = excluded.max_attempts, retry_base_delay_ms = excluded.retry_base_delay_ms, enabled = excluded.enabled,
       update_time = excluded.update_time, rate_limit = excluded.rate_limit, rate_period_ms = excluded.rate_period_ms`,
  ).run(
    policy.policyKey,
    policy.taskType,
    policy.maxConcurrency,
    policy.maxAttempts,
    policy.retryBaseDelayMs,
    policy.enabled ? 1 : 0,
    now,
    policy.rateLimit ?? null,
    policy.ratePeriodMs ?? null,
  );
  return { ...policy, rateLimit: policy.rateLimit ?? null, ratePeriodMs: policy.ratePeriodMs ?? null, updatedAt: fromSqliteTime(now) };
}

export function listPolicies(db: Db): Policy[] {
  const rows = statement(db, 'SELECT * FROM system_async_task_policy ORDER BY policy_key').all() as Row[];
  return rows.map((row) => policyFromRow(row, decodeSqlite));
}

/** Start log rows older than the longest rate period serve no window (rules/rates.ts): keys that start no more, removed policies. */
function pruneRateStarts(db: Db, now: string): void {
  statement(db, 'DELETE FROM system_async_task_rate_start WHERE started_at <= ?').run(toSqliteTime(fromSqliteTime(now).getTime() - MAX_RATE_PERIOD_MS));
}

export function purgeTerminalTasks(db: Db, params: PurgeParams, now: string): PurgeResult {
  const cutoff = toSqliteTime(params.finishedBefore.getTime());
  pruneRateStarts(db, now);
  const only = new Where().optional('owner = ?', params.scope ? scopeOwner(params.scope) : null);
  if (params.ids) only.in('id', params.ids.length > 0 ? params.ids : [null]);
  const ids = (
    statement(
      db,
      `SELECT id FROM system_async_task WHERE finish_time IS NOT NULL AND finish_time < ? AND status IN ${TERMINAL_SQL}
       ${only.toString().replace(/^WHERE/, 'AND')} ORDER BY finish_time LIMIT ?`,
    ).all(cutoff, ...only.values, params.batchSize) as { id: string }[]
  ).map((row) => row.id);
  const result: PurgeResult = { tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0 };
  const archive = statement(db, 'UPDATE system_async_task_dead_letter SET archived_at = ? WHERE original_task_id = ? AND archived_at IS NULL');
  const attempts = statement(db, 'DELETE FROM system_async_task_attempt WHERE task_id = ?');
  const failures = statement(db, 'DELETE FROM system_async_task_failure WHERE task_id = ?');
  const actions = statement(db, 'DELETE FROM system_async_task_action WHERE task_id = ?');
  // A purged child's edges go with it; a purged parent's stay (resolved) for children still kept.
  const edges = statement(db, `DELETE FROM ${DEPENDENCY_TABLE} WHERE child_id = ?`);
  const steps = statement(db, 'DELETE FROM system_async_task_step WHERE task_id = ?');
  const logs = statement(db, 'DELETE FROM system_async_task_log WHERE task_id = ?');
  // Re-checked: an operator may have retried the task since it was selected.
  const task = statement(db, `DELETE FROM system_async_task WHERE id = ? AND finish_time < ? AND status IN ${TERMINAL_SQL}`);
  for (const id of ids) {
    if (task.run(id, cutoff).changes === 0) continue;
    result.tasks += 1;
    result.deadLettersArchived += archive.run(now, id).changes;
    result.attempts += attempts.run(id).changes;
    result.failures += failures.run(id).changes;
    actions.run(id);
    edges.run(id);
    steps.run(id);
    logs.run(id);
  }
  return result;
}

export function purgeDeadLetters(db: Db, archivedBefore: Date, batchSize: number): number {
  return statement(
    db,
    `DELETE FROM system_async_task_dead_letter WHERE id IN (
       SELECT id FROM system_async_task_dead_letter WHERE archived_at IS NOT NULL AND archived_at < ? ORDER BY archived_at LIMIT ?)`,
  ).run(toSqliteTime(archivedBefore.getTime()), batchSize).changes;
}

export function registerWorker(db: Db, worker: WorkerRegistration, now: string): void {
  statement(
    db,
    `INSERT INTO system_async_task_worker (worker_id, host, pid, task_types, concurrency, started_at, last_seen_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (worker_id) DO UPDATE SET task_types = excluded.task_types, concurrency = excluded.concurrency, last_seen_at = excluded.last_seen_at`,
  ).run(worker.workerId, worker.host, worker.pid, JSON.stringify(worker.taskTypes), worker.concurrency, now, now);
}

export function listWorkers(db: Db, seenAfter: string): WorkerRecord[] {
  const rows = statement(db, 'SELECT * FROM system_async_task_worker WHERE last_seen_at >= ? ORDER BY worker_id').all(seenAfter) as Row[];
  return rows.map((row) => workerFromRow(row, decodeSqlite));
}

export function analysisData(db: Db, taskType: string, since: Date, sampleLimit: number, now: string): AnalysisData {
  const from = toSqliteTime(since.getTime());
  const statusCounts = emptyStatusCounts();
  const counts = statement(db, 'SELECT status, COUNT(*) AS n FROM system_async_task WHERE task_type = ? AND create_time > ? GROUP BY status').all(
    taskType,
    from,
  ) as { status: TaskStatus; n: number }[];
  for (const row of counts) statusCounts[row.status] = row.n;
  const attempts = (
    statement(
      db,
      `SELECT a.started_at, a.finished_at, a.attempt, t.create_time, t.available_at FROM system_async_task_attempt a
     JOIN system_async_task t ON a.task_id = t.id
     WHERE t.task_type = ? AND a.started_at > ? AND a.finished_at IS NOT NULL ORDER BY a.started_at DESC LIMIT ?`,
    ).all(taskType, from, sampleLimit) as Row[]
  ).map((row) => ({
    startedAt: fromSqliteTime(row.started_at),
    finishedAt: fromSqliteTime(row.finished_at),
    taskCreatedAt: fromSqliteTime(row.create_time),
    taskAvailableAt: fromSqliteTime(row.available_at),
    attempt: Number(row.attempt),
  }));
  const where = new Where().add('t.task_type = ?', taskType).add('f.failed_at > ?', from);
  const failureCounts = (
    statement(
      db,
      `SELECT f.error_code, COUNT(*) AS n FROM system_async_task_failure f JOIN system_async_task t ON f.task_id = t.id
     ${where} GROUP BY f.error_code ORDER BY n DESC, f.error_code`,
    ).all(...where.values) as { error_code: string; n: number }[]
  ).map((row) => ({ errorCode: row.error_code, count: row.n }));
  const oldest = statement(
    db,
    `SELECT MIN(available_at) AS since FROM system_async_task WHERE task_type = ? AND status = ${STATUS_SQL.QUEUED} AND available_at <= ?`,
  ).get(taskType, now) as { since: string | null };
  return { statusCounts, attempts, failureCounts, oldestWaitingSince: oldest.since === null ? null : fromSqliteTime(oldest.since) };
}

export function deletePolicy(db: Db, policyKey: string): boolean {
  return statement(db, 'DELETE FROM system_async_task_policy WHERE policy_key = ?').run(policyKey).changes === 1;
}

export function unregisterWorker(db: Db, workerId: string): void {
  statement(db, 'DELETE FROM system_async_task_worker WHERE worker_id = ?').run(workerId);
}
