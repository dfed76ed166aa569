/**
 * The embedded store: one SQLite file, WAL, shared by any number of worker
 * processes on one machine. better-sqlite3 is synchronous, so each method is
 * one short transaction; claims and the sweep run under BEGIN IMMEDIATE,
 * which takes SQLite's single write lock first and so serializes counting
 * RUNNING rows with claiming them (limits hold as invariants).
 */
import Database from 'better-sqlite3';
import { resolve } from 'node:path';
import { InvalidOptionsError, StoreError } from '../../core/errors.js';
import { scopeOwner, type Scope } from '../../core/scope.js';
import { isTaskStatus, type TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import { checkInteger, checkKnownKeys, checkString } from '../../core/validate.js';
import {
  attemptFromRow, deadLetterFromRow, emptyStatusCounts, failureFromRow, progressValues, taskFromRow,
  type Row,
} from '../rows.js';
import { LocalBus } from '../local-bus.js';
import { WalWatcher } from './wal-watch.js';
import { Where } from '../where.js';
import type {
  AttemptOutcome, AttemptRecord, ChangeStatusParams, ChangeStatusResult, ClaimParams, DeadLetter, FailureRow,
  InsertTaskResult, ListDeadLettersParams, ListTasksParams, RecoveryResult, RenewResult, Store, StoreListener, TaskPage,
  AnalysisData, Policy, PolicyInput, PurgeResult, ReplayResult, WorkerRecord, WorkerRegistration,
} from '../types.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { statement } from './statements.js';
import { decodeSqlite, toSqliteTime } from './time.js';
import { claim, leasedByType } from './claim.js';
import * as control from './control.js';
import { finishOutcome, recoverExpired } from './outcomes.js';

export interface SqliteStoreOptions {
  /** Database file; ':memory:' only for single-process use. */
  path: string;
  /** Milliseconds to wait for another process's write lock. Default 5000. */
  busyTimeoutMs?: number;
  /** The clock this store judges time by (all processes on one file share the machine's clock). Default Date.now. */
  clock?: () => number;
}

const LEASED = `('RUNNING','CANCEL_REQUESTED')`;

export class SqliteStore implements Store {
  readonly dialect = 'sqlite' as const;
  readonly db: Database.Database;
  private readonly clock: () => number;
  private readonly bus: LocalBus;
  private readonly walWatcher: WalWatcher | null;
  private closed = false;
  private seenDataVersion = -1;

  constructor(options: SqliteStoreOptions) {
    checkString('SqliteStore', 'path', options?.path, { minLength: 1 });
    checkKnownKeys('SqliteStore', options, ['path', 'busyTimeoutMs', 'clock']);
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    checkInteger('SqliteStore', 'busyTimeoutMs', busyTimeoutMs, { min: 0 });
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new InvalidOptionsError('SqliteStore', 'clock', 'must be a function returning milliseconds');
    }
    this.clock = options.clock ?? Date.now;
    try {
      this.db = new Database(options.path);
      this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
    } catch (error) {
      throw new StoreError(`cannot open SQLite database ${options.path}`, { cause: error });
    }
    this.bus = LocalBus.for(options.path === ':memory:' ? this : `sqlite:${resolve(options.path)}`);
    this.walWatcher = options.path === ':memory:' ? null : new WalWatcher(resolve(options.path), () => this.walChanged());
  }

  /**
   * The -wal file changed. PRAGMA data_version moves only for commits of other
   * connections: when it stands still, the change was this store's own commit
   * (a claim or an outcome), which must not wake its worker into an empty claim.
   */
  private walChanged(): void {
    if (this.closed) return;
    const version = this.db.pragma('data_version', { simple: true }) as number;
    if (version === this.seenDataVersion) return;
    this.seenDataVersion = version;
    this.bus.publish({ kind: 'submitted', taskTypes: [] });
  }

  nowText(): string {
    return toSqliteTime(this.clock());
  }

  async migrate(): Promise<void> {
    this.db.exec('CREATE TABLE IF NOT EXISTS tasklease_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
    // IMMEDIATE: a second process starting at the same moment waits here, then sees the versions applied.
    this.db.transaction(() => {
      const row = statement(this.db, 'SELECT MAX(version) AS v FROM tasklease_migrations').get() as { v: number | null };
      const current = row.v ?? 0;
      for (const migration of SQLITE_MIGRATIONS) {
        if (migration.version <= current) continue;
        this.db.exec(migration.sql);
        statement(this.db, 'INSERT INTO tasklease_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, this.nowText());
      }
    }).immediate();
  }

  readonly expectedSchemaVersion = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;

  async schemaVersion(): Promise<number> {
    const row = statement(this.db, 'SELECT MAX(version) AS v FROM tasklease_migrations').get() as { v: number | null };
    return row.v ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.walWatcher?.stop();
    this.db.close();
  }

  async now(): Promise<Date> {
    return new Date(this.clock());
  }

  subscribe(listener: StoreListener): () => void {
    this.walWatcher?.start();
    return this.bus.subscribe(listener);
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: unknown }): Promise<InsertTaskResult[]> {
    if (params.transaction !== undefined) throw new InvalidOptionsError('SqliteStore.insertTasks', 'transaction', 'is not supported on SQLite');
    // One clock reading per batch: a delayed task becomes available exactly delayMs after its create_time.
    const nowMs = this.clock();
    const now = toSqliteTime(nowMs);
    const findExisting = statement(this.db, 
      `SELECT * FROM system_async_task WHERE task_type = ? AND COALESCE(owner, '') = COALESCE(?, '') AND idempotency_key = ?`,
    );
    const insert = statement(this.db, 
      `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, deadline_at,
         attempt_count, attempt_base, max_attempts, owner, idempotency_key, trace_id, create_time, update_time)
       VALUES (?, ?, 'QUEUED', ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?) RETURNING *`,
    );
    const results = this.db.transaction(() =>
      params.tasks.map((task): InsertTaskResult => {
        if (task.idempotencyKey !== null) {
          const existing = findExisting.get(task.taskType, task.owner, task.idempotencyKey) as Row | undefined;
          if (existing) return { task: taskFromRow(existing, decodeSqlite), created: false };
        }
        const availableAt = task.availableAt ? toSqliteTime(task.availableAt.getTime()) : toSqliteTime(nowMs + task.delayMs);
        const row = insert.get(
          task.id, task.taskType, task.priority, task.payloadJson, availableAt,
          task.deadlineAt ? toSqliteTime(task.deadlineAt.getTime()) : null,
          task.maxAttempts, task.owner, task.idempotencyKey, task.traceId, now, now,
        ) as Row;
        return { task: taskFromRow(row, decodeSqlite), created: true };
      }),
    ).immediate();
    const created = [...new Set(results.filter((r) => r.created).map((r) => r.task.taskType))];
    if (created.length > 0) this.bus.publish({ kind: 'submitted', taskTypes: created });
    return results;
  }

  async getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    const owner = scopeOwner(params.scope);
    const row = statement(this.db, `SELECT * FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`)
      .get(...(owner === null ? [params.id] : [params.id, owner])) as Row | undefined;
    return row ? taskFromRow(row, decodeSqlite) : null;
  }

  async listTasks(params: ListTasksParams): Promise<TaskPage> {
    const where = new Where()
      .optional('owner = ?', scopeOwner(params.scope))
      .optional('owner = ?', params.owner)
      .optional('task_type = ?', params.taskType)
      .optional('id < ?', params.cursor);
    if (params.status && params.status.length > 0) where.in('status', params.status);
    const rows = statement(this.db, `SELECT * FROM system_async_task ${where} ORDER BY id DESC LIMIT ?`)
      .all(...where.values, params.limit + 1) as Row[];
    const tasks = rows.slice(0, params.limit).map((row) => taskFromRow(row, decodeSqlite));
    return { tasks, nextCursor: rows.length > params.limit ? tasks[tasks.length - 1]!.id : null };
  }

  async countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    const where = new Where().optional('owner = ?', scopeOwner(params.scope)).optional('task_type = ?', params.taskType);
    const rows = statement(this.db, `SELECT status, COUNT(*) AS n FROM system_async_task ${where} GROUP BY status`)
      .all(...where.values) as { status: TaskStatus; n: number }[];
    const counts = emptyStatusCounts();
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  }

  async changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    const owner = scopeOwner(params.scope);
    const now = this.nowText();
    const select = statement(this.db, `SELECT status FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`);
    const update = statement(this.db, changeStatusSql(params));
    const results = this.db.transaction(() =>
      params.ids.map((id): ChangeStatusResult => {
        const row = select.get(...(owner === null ? [id] : [id, owner])) as { status: TaskStatus } | undefined;
        if (!row) return { id, applied: false, status: null };
        if (!params.from.includes(row.status)) return { id, applied: false, status: row.status };
        update.run(params.availableAt ? { id, now, availableAt: toSqliteTime(params.availableAt.getTime()) } : { id, now });
        return { id, applied: true, status: params.to };
      }),
    ).immediate();
    const cancelled = results.filter((r) => r.applied && r.status === 'CANCEL_REQUESTED').map((r) => r.id);
    if (cancelled.length > 0) this.bus.publish({ kind: 'cancelRequested', taskIds: cancelled });
    const queued = results.some((r) => r.applied && r.status === 'QUEUED');
    if (queued) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return results;
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    if (params.limit <= 0 || params.taskTypes.length === 0) return [];
    return this.db.transaction(() => claim(this.db, params, this.clock())).immediate();
  }

  async renewLeases(params: { leases: readonly Lease[]; leaseMs: number }): Promise<RenewResult> {
    const result: RenewResult = { renewed: [], cancelRequested: [], lost: [] };
    if (params.leases.length === 0) return result;
    // One statement for every lease: the leases travel as one JSON array.
    const rows = statement(this.db,
      `UPDATE system_async_task AS t SET lease_until = ?, update_time = ?
       FROM (SELECT json_extract(value, '$[0]') AS lease_id, json_extract(value, '$[1]') AS lease_worker,
               json_extract(value, '$[2]') AS lease_attempt FROM json_each(?)) AS l
       WHERE t.id = l.lease_id AND t.lease_owner = l.lease_worker AND t.attempt_count = l.lease_attempt AND t.status IN ${LEASED}
       RETURNING id, lease_owner AS owner, attempt_count AS attempt, status`,
    ).all(
      toSqliteTime(this.clock() + params.leaseMs), this.nowText(),
      JSON.stringify(params.leases.map((lease) => [lease.taskId, lease.workerId, lease.attempt])),
    ) as { id: string; owner: string; attempt: number; status: TaskStatus }[];
    const key = (id: string, owner: string, attempt: number): string => JSON.stringify([id, owner, attempt]);
    const held = new Map(rows.map((row) => [key(row.id, row.owner, row.attempt), row.status]));
    for (const lease of params.leases) {
      const status = held.get(key(lease.taskId, lease.workerId, lease.attempt));
      if (status === undefined) result.lost.push(lease.taskId);
      else if (status === 'CANCEL_REQUESTED') result.cancelRequested.push(lease.taskId);
      else result.renewed.push(lease.taskId);
    }
    return result;
  }

  async saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    const { lease, progress } = params;
    const info = statement(this.db, 
        `UPDATE system_async_task SET progress_total = ?, progress_processed = ?, progress_succeeded = ?, progress_failed = ?,
           progress_skipped = ?, progress_message = ?, update_time = ?
         WHERE id = ? AND lease_owner = ? AND attempt_count = ? AND status IN ${LEASED}`,
      )
      .run(...progressValues(progress), this.nowText(), lease.taskId, lease.workerId, lease.attempt);
    return info.changes === 1;
  }

  async finishAttempts(params: { outcomes: readonly AttemptOutcome[] }): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    const now = this.nowText();
    return this.db.transaction(() => params.outcomes.map((outcome) => finishOutcome(this.db, outcome, now, this.clock()))).immediate();
  }

  async releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    const now = this.nowText();
    const release = statement(this.db, 
      `UPDATE system_async_task SET
         status = CASE status WHEN 'CANCEL_REQUESTED' THEN 'CANCELLED' ELSE 'QUEUED' END,
         finish_time = CASE status WHEN 'CANCEL_REQUESTED' THEN @now ELSE NULL END,
         lease_owner = NULL, lease_until = NULL, attempt_count = attempt_count - 1,
         start_time = CASE WHEN attempt_count - 1 = attempt_base THEN NULL ELSE start_time END, update_time = @now
       WHERE id = @id AND lease_owner = @worker AND attempt_count = @attempt AND status IN ${LEASED}`,
    );
    const dropAttempt = statement(this.db, 'DELETE FROM system_async_task_attempt WHERE task_id = ? AND attempt = ?');
    return this.db.transaction(() => {
      let released = 0;
      for (const lease of params.leases) {
        const info = release.run({ now, id: lease.taskId, worker: lease.workerId, attempt: lease.attempt });
        if (info.changes === 1) {
          dropAttempt.run(lease.taskId, lease.attempt);
          released += 1;
        }
      }
      return released;
    }).immediate();
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    const result = this.db.transaction(() => recoverExpired(this.db, params.batchSize, this.clock())).immediate();
    if (result.requeued + result.retriesDue > 0) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return result;
  }

  // ---- history -------------------------------------------------------------

  async listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    const rows = statement(this.db, 'SELECT * FROM system_async_task_attempt WHERE task_id = ? ORDER BY attempt').all(params.taskId) as Row[];
    return rows.map((row) => attemptFromRow(row, decodeSqlite));
  }

  async listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    const rows = statement(this.db, 'SELECT * FROM system_async_task_failure WHERE task_id = ? ORDER BY failed_at DESC, attempt DESC LIMIT ?')
      .all(params.taskId, params.limit ?? 100) as Row[];
    return rows.map((row) => failureFromRow(row, decodeSqlite));
  }

  async countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    const where = new Where()
      .add('replayed_at IS NULL AND archived_at IS NULL')
      .optional('owner = ?', scopeOwner(params.scope))
      .optional('task_type = ?', params.taskType);
    const row = statement(this.db, `SELECT COUNT(*) AS n FROM system_async_task_dead_letter ${where}`).get(...where.values) as { n: number };
    return row.n;
  }

  async replayDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<ReplayResult[]> {
    const results = this.db.transaction(() => control.replayDeadLetters(this.db, params.ids, params.scope, this.nowText())).immediate();
    if (results.some((r) => r.outcome === 'REPLAYED')) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return results;
  }

  async archiveDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<number> {
    return this.db.transaction(() => control.archiveDeadLetters(this.db, params.ids, params.scope, this.nowText())).immediate();
  }

  async savePolicy(params: { policy: PolicyInput }): Promise<Policy> {
    return control.savePolicy(this.db, params.policy, this.nowText());
  }

  async listPolicies(): Promise<Policy[]> {
    return control.listPolicies(this.db);
  }

  async deletePolicy(params: { policyKey: string }): Promise<boolean> {
    return statement(this.db, 'DELETE FROM system_async_task_policy WHERE policy_key = ?').run(params.policyKey).changes === 1;
  }

  async purgeTerminalTasks(params: { finishedBefore: Date; batchSize: number }): Promise<PurgeResult> {
    return this.db.transaction(() => control.purgeTerminalTasks(this.db, params.finishedBefore, params.batchSize, this.nowText())).immediate();
  }

  async registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    control.registerWorker(this.db, params.worker, this.nowText());
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    statement(this.db, 'DELETE FROM system_async_task_worker WHERE worker_id = ?').run(params.workerId);
  }

  async listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    return control.listWorkers(this.db, toSqliteTime(this.clock() - params.seenWithinMs));
  }

  async leasedCounts(): Promise<Record<string, number>> {
    return Object.fromEntries(leasedByType(this.db));
  }

  async analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    return control.analysisData(this.db, params.taskType, params.since, params.sampleLimit);
  }

  async listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    const where = new Where()
      .optional('owner = ?', scopeOwner(params.scope))
      .optional('task_type = ?', params.taskType)
      .optional('moved_at >= ?', params.movedAfter ? toSqliteTime(params.movedAfter.getTime()) : null)
      .optional('moved_at < ?', params.movedBefore ? toSqliteTime(params.movedBefore.getTime()) : null)
      .optional('id < ?', params.cursor);
    const rows = statement(this.db, `SELECT * FROM system_async_task_dead_letter ${where} ORDER BY id DESC LIMIT ?`)
      .all(...where.values, params.limit) as Row[];
    return rows.map((row) => deadLetterFromRow(row, decodeSqlite));
  }
}

/** Column rules of a status change by target (see Store.changeStatus). */
function changeStatusSql(params: ChangeStatusParams): string {
  if (!isTaskStatus(params.to)) throw new InvalidOptionsError('changeStatus', 'to', `is not a status: ${String(params.to)}`);
  const sets = [`status = '${params.to}'`, 'update_time = @now'];
  if (params.to === 'QUEUED' || params.to === 'CANCELLED') sets.push('lease_owner = NULL', 'lease_until = NULL');
  if (params.to === 'QUEUED') sets.push('finish_time = NULL');
  if (params.to === 'CANCELLED') sets.push('finish_time = @now');
  if (params.newCycle) sets.push('attempt_base = attempt_count');
  if (params.availableAt) sets.push('available_at = @availableAt');
  return `UPDATE system_async_task SET ${sets.join(', ')} WHERE id = @id`;
}

