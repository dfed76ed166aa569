/**
 * Control-plane operations on MySQL/MariaDB: dead-letter replay and archive,
 * policies, cleanup, the worker registry and analysis data. The writes run
 * inside a transaction the store opens; rows are locked in id order.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { emptyStatusCounts, policyFromRow, workerFromRow } from '../rows.js';
import type { Actor, AnalysisData, Policy, PolicyInput, PurgeParams, PurgeResult, ReplayResult, WorkerRecord, WorkerRegistration } from '../types.js';
import { reopen, stepsOn } from './flows.js';
import {
  ACTION_COLUMNS,
  CURRENT_CYCLE,
  deadLetterAction,
  endStepCycleSql,
  LEASED_SQL,
  REPLAYABLE_STATUS,
  replayAssignments,
  STATUS_SQL,
  TERMINAL_SQL,
} from '../rules/index.js';
import { MAX_RATE_PERIOD_MS } from '../rules/rates.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { checkText, decode, sqlTime } from './encode.js';
import { sortedIds } from './sql.js';

/** Operator action rows (rules/actions.ts) in one statement, inside the transaction of the change they record. */
export async function recordActions(db: MysqlDatabase, conn: Conn, rows: readonly unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  const placeholders = rows.map(() => '(?, ?, ?, ?, ?, ?, ?, NOW(3))').join(', ');
  await db.exec(conn, `INSERT INTO system_async_task_action ${ACTION_COLUMNS} VALUES ${placeholders}`, rows.flat());
}

/** A new attempt cycle began for `taskIds` (their rows are written already): their steps so far belong to the cycle that ended (rules/steps.ts). */
export async function endStepCycle(db: MysqlDatabase, conn: Conn, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length === 0) return;
  await db.exec(
    conn,
    `UPDATE system_async_task_step s JOIN system_async_task t ON t.id = s.task_id SET s.${endStepCycleSql('t.attempt_count')}
     WHERE s.task_id IN (?) AND s.cycle = ${CURRENT_CYCLE}`,
    [taskIds],
  );
}

export async function replayDeadLetters(
  db: MysqlDatabase,
  conn: Conn,
  ids: readonly string[],
  scope: Scope,
  actor: Actor | undefined,
): Promise<ReplayResult[]> {
  const owner = scopeOwner(scope);
  const letters = await db.rows(
    conn,
    `SELECT * FROM system_async_task_dead_letter WHERE id IN (?) ${owner === null ? '' : 'AND owner = ?'} ORDER BY id FOR UPDATE`,
    owner === null ? [sortedIds(ids)] : [sortedIds(ids), owner],
  );
  const byId = new Map(letters.map((row) => [String(row.id), row]));
  const results: ReplayResult[] = [];
  for (const id of ids) {
    const letter = byId.get(id);
    if (!letter) results.push({ id, outcome: 'NOT_FOUND', taskId: null });
    else if (letter.replayed_at !== null) results.push({ id, outcome: 'ALREADY_REPLAYED', taskId: String(letter.replay_task_id) });
    else if (letter.archived_at !== null) results.push({ id, outcome: 'ARCHIVED', taskId: null });
    else {
      const taskId = String(letter.original_task_id);
      const requeued = await db.exec(
        conn,
        `UPDATE system_async_task SET ${replayAssignments('NOW(3)').join(', ')} WHERE id = ? AND status = ${REPLAYABLE_STATUS}`,
        [taskId],
      );
      if (requeued.affectedRows === 1) {
        await db.exec(conn, 'UPDATE system_async_task_dead_letter SET replayed_at = NOW(3), replay_task_id = ? WHERE id = ?', [taskId, id]);
        await reopen(stepsOn(db, conn), [taskId]);
        await endStepCycle(db, conn, [taskId]);
        if (actor) await recordActions(db, conn, [deadLetterAction('REPLAY', actor, taskId, id)]);
        letter.replayed_at = 'now';
        letter.replay_task_id = taskId;
        results.push({ id, outcome: 'REPLAYED', taskId });
      } else {
        const exists = await db.rows(conn, 'SELECT 1 FROM system_async_task WHERE id = ?', [taskId]);
        results.push({ id, outcome: exists.length > 0 ? 'TASK_NOT_FAILED' : 'TASK_MISSING', taskId });
      }
    }
  }
  return results;
}

export async function archiveDeadLetters(db: MysqlDatabase, conn: Conn, ids: readonly string[], scope: Scope, actor: Actor | undefined): Promise<number> {
  if (ids.length === 0) return 0;
  const owner = scopeOwner(scope);
  const scoped = owner === null ? [sortedIds(ids)] : [sortedIds(ids), owner];
  const ownerSql = owner === null ? '' : 'AND owner = ?';
  // Locked first: the letters this call archives are the ones whose tasks get an ARCHIVE action.
  const letters = actor
    ? await db.rows(
        conn,
        `SELECT id, original_task_id FROM system_async_task_dead_letter WHERE id IN (?) AND archived_at IS NULL ${ownerSql} ORDER BY id FOR UPDATE`,
        scoped,
      )
    : [];
  const result = await db.exec(
    conn,
    `UPDATE system_async_task_dead_letter SET archived_at = NOW(3) WHERE id IN (?) AND archived_at IS NULL ${ownerSql}`,
    scoped,
  );
  if (actor)
    await recordActions(
      db,
      conn,
      letters.map((l) => deadLetterAction('ARCHIVE', actor, String(l.original_task_id), String(l.id))),
    );
  return result.affectedRows;
}

export async function savePolicy(db: MysqlDatabase, conn: Conn, policy: PolicyInput): Promise<Policy> {
  checkText(policy.policyKey, 'policy.policyKey', 300, false);
  checkText(policy.taskType, 'policy.taskType', 255, true);
  await db.exec(
    conn,
    `INSERT INTO system_async_task_policy (policy_key, task_type, max_concurrency, max_attempts, retry_base_delay_ms, enabled, update_time,
       rate_limit, rate_period_ms)
     VALUES (?, ?, ?, ?, ?, ?, NOW(3), ?, ?)
     ON DUPLICATE KEY UPDATE task_type = VALUES(task_type), max_concurrency = VALUES(max_concurrency), max_attempts = VALUES(max_attempts),
       retry_base_delay_ms = VALUES(retry_base_delay_ms), enabled = VALUES(enabled), update_time = VALUES(update_time),
       rate_limit = VALUES(rate_limit), rate_period_ms = VALUES(rate_period_ms)`,
    [
      policy.policyKey,
      policy.taskType,
      policy.maxConcurrency,
      policy.maxAttempts,
      policy.retryBaseDelayMs,
      policy.enabled ? 1 : 0,
      policy.rateLimit ?? null,
      policy.ratePeriodMs ?? null,
    ],
  );
  const rows = await db.rows(conn, 'SELECT update_time FROM system_async_task_policy WHERE policy_key = ?', [policy.policyKey]);
  return { ...policy, rateLimit: policy.rateLimit ?? null, ratePeriodMs: policy.ratePeriodMs ?? null, updatedAt: decode.time(rows[0]!.update_time) };
}

export async function listPolicies(db: MysqlDatabase, conn: Conn): Promise<Policy[]> {
  const rows = await db.rows(conn, 'SELECT * FROM system_async_task_policy ORDER BY policy_key');
  return rows.map((row) => policyFromRow(row, decode));
}

export async function purgeTerminalTasks(db: MysqlDatabase, conn: Conn, params: PurgeParams): Promise<PurgeResult> {
  const cutoff = sqlTime(params.finishedBefore);
  const owner = params.scope ? scopeOwner(params.scope) : null;
  const result: PurgeResult = { tasks: 0, attempts: 0, failures: 0, deadLettersArchived: 0 };
  // Start log rows older than the longest rate period serve no window (rules/rates.ts): keys that start no more, removed policies.
  await db.exec(conn, 'DELETE FROM system_async_task_rate_start WHERE started_at <= NOW(3) - INTERVAL ? MICROSECOND', [MAX_RATE_PERIOD_MS * 1000]);
  // Locked and re-checked in one step: an operator's retry of a selected task waits, then finds it gone or kept.
  const rows = params.ids
    ? await db.rows(
        conn,
        `SELECT id FROM system_async_task WHERE id IN (?) AND finish_time IS NOT NULL AND finish_time < ? AND status IN ${TERMINAL_SQL}
         ${owner === null ? '' : 'AND owner = ?'} ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
        [params.ids.length > 0 ? [...params.ids] : [null], cutoff, ...(owner === null ? [] : [owner]), params.batchSize],
      )
    : await db.rows(
        conn,
        `SELECT id FROM system_async_task FORCE INDEX (ix_system_async_task_finished)
         WHERE finish_time IS NOT NULL AND finish_time < ? AND status IN ${TERMINAL_SQL} ORDER BY finish_time LIMIT ? FOR UPDATE SKIP LOCKED`,
        [cutoff, params.batchSize],
      );
  const ids = rows.map((row) => String(row.id));
  if (ids.length === 0) return result;
  result.deadLettersArchived = (
    await db.exec(conn, 'UPDATE system_async_task_dead_letter SET archived_at = NOW(3) WHERE original_task_id IN (?) AND archived_at IS NULL', [ids])
  ).affectedRows;
  result.attempts = (await db.exec(conn, 'DELETE FROM system_async_task_attempt WHERE task_id IN (?)', [ids])).affectedRows;
  result.failures = (await db.exec(conn, 'DELETE FROM system_async_task_failure WHERE task_id IN (?)', [ids])).affectedRows;
  await db.exec(conn, 'DELETE FROM system_async_task_action WHERE task_id IN (?)', [ids]);
  // A purged child's edges go with it; a purged parent's stay (resolved) for children still kept.
  await db.exec(conn, 'DELETE FROM system_async_task_dependency WHERE child_id IN (?)', [ids]);
  await db.exec(conn, 'DELETE FROM system_async_task_step WHERE task_id IN (?)', [ids]);
  await db.exec(conn, 'DELETE FROM system_async_task_log WHERE task_id IN (?)', [ids]);
  result.tasks = (await db.exec(conn, 'DELETE FROM system_async_task WHERE id IN (?)', [ids])).affectedRows;
  return result;
}

/** One batch of dead-letter cleanup: a single-table DELETE with ORDER BY and LIMIT. */
export async function purgeDeadLetters(db: MysqlDatabase, conn: Conn, archivedBefore: Date, batchSize: number): Promise<number> {
  const result = await db.exec(conn, 'DELETE FROM system_async_task_dead_letter WHERE archived_at IS NOT NULL AND archived_at < ? ORDER BY id LIMIT ?', [
    sqlTime(archivedBefore),
    batchSize,
  ]);
  return result.affectedRows;
}

export async function registerWorker(db: MysqlDatabase, conn: Conn, worker: WorkerRegistration): Promise<void> {
  await db.exec(
    conn,
    `INSERT INTO system_async_task_worker (worker_id, host, pid, task_types, concurrency, started_at, last_seen_at)
     VALUES (?, ?, ?, ?, ?, NOW(3), NOW(3))
     ON DUPLICATE KEY UPDATE task_types = VALUES(task_types), concurrency = VALUES(concurrency), last_seen_at = VALUES(last_seen_at)`,
    [worker.workerId, worker.host, worker.pid, JSON.stringify(worker.taskTypes), worker.concurrency],
  );
}

export async function listWorkers(db: MysqlDatabase, conn: Conn, seenWithinMs: number): Promise<WorkerRecord[]> {
  const rows = await db.rows(conn, 'SELECT * FROM system_async_task_worker WHERE last_seen_at >= NOW(3) - INTERVAL ? MICROSECOND ORDER BY worker_id', [
    Math.max(0, Math.round(seenWithinMs)) * 1000,
  ]);
  return rows.map((row) => workerFromRow(row, decode));
}

export async function leasedCounts(db: MysqlDatabase, conn: Conn): Promise<Record<string, number>> {
  const rows = await db.rows(conn, `SELECT task_type, COUNT(*) AS n FROM system_async_task WHERE status IN ${LEASED_SQL} GROUP BY task_type`);
  return Object.fromEntries(rows.map((row) => [String(row.task_type), Number(row.n)]));
}

export async function analysisData(db: MysqlDatabase, conn: Conn, taskType: string, since: Date, sampleLimit: number): Promise<AnalysisData> {
  const from = sqlTime(since);
  const statusCounts = emptyStatusCounts();
  const counts = await db.rows(conn, 'SELECT status, COUNT(*) AS n FROM system_async_task WHERE task_type = ? AND create_time > ? GROUP BY status', [
    taskType,
    from,
  ]);
  for (const row of counts) statusCounts[String(row.status) as TaskStatus] = Number(row.n);
  const attemptRows = await db.rows(
    conn,
    `SELECT a.started_at, a.finished_at, a.attempt, t.create_time, t.available_at FROM system_async_task_attempt a
     JOIN system_async_task t ON a.task_id = t.id
     WHERE t.task_type = ? AND a.started_at > ? AND a.finished_at IS NOT NULL ORDER BY a.started_at DESC LIMIT ?`,
    [taskType, from, Math.max(0, Math.floor(sampleLimit))],
  );
  const attempts = attemptRows.map((row) => ({
    startedAt: decode.time(row.started_at),
    finishedAt: decode.time(row.finished_at),
    taskCreatedAt: decode.time(row.create_time),
    taskAvailableAt: decode.time(row.available_at),
    attempt: Number(row.attempt),
  }));
  const failureRows = await db.rows(
    conn,
    `SELECT f.error_code, COUNT(*) AS n FROM system_async_task_failure f JOIN system_async_task t ON f.task_id = t.id
     WHERE t.task_type = ? AND f.failed_at > ? GROUP BY f.error_code ORDER BY n DESC, f.error_code LIMIT 10`,
    [taskType, from],
  );
  const [oldest] = await db.rows(
    conn,
    `SELECT MIN(available_at) AS since FROM system_async_task WHERE task_type = ? AND status = ${STATUS_SQL.QUEUED} AND available_at <= NOW(3)`,
    [taskType],
  );
  return {
    statusCounts,
    attempts,
    failureCounts: failureRows.map((row) => ({ errorCode: String(row.error_code), count: Number(row.n) })),
    oldestWaitingSince: oldest?.since == null ? null : decode.time(oldest.since),
  };
}
