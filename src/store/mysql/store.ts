/**
 * The MySQL 8 / MariaDB 10.6+ store, on a mysql2 promise pool.
 *
 * Each method is one short transaction (or one statement); none is held open
 * across a handler's run. Deadlocks (1213) and lock-wait timeouts (1205) are
 * retried inside the store with jitter, a bounded number of times, and so
 * never reach a handler as its task's failure; an unreachable server is a
 * StoreError with the driver's error as cause. There is no LISTEN/NOTIFY:
 * `subscribe` hears the submits of this process only (LocalBus), and workers
 * in other processes find new tasks by polling.
 */
import type { Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import { InvalidOptionsError } from '../../core/errors.js';
import { LocalBus } from '../local-bus.js';
import type {
  AnalysisData, Policy, PolicyInput, PurgeResult, ReplayResult, WorkerRecord, WorkerRegistration,
  AttemptOutcome, AttemptRecord, ChangeStatusParams, ChangeStatusResult, ClaimParams, DeadLetter, FailureRow,
  InsertTaskResult, ListDeadLettersParams, ListTasksParams, RecoveryResult, RenewResult, Store, StoreListener, TaskPage,
} from '../types.js';
import { claim, type CapCache } from './claim.js';
import * as control from './control.js';
import { decode, MysqlDatabase, type Conn } from './connection.js';
import { finishAttempts } from './finish.js';
import { insertTasks } from './insert.js';
import { releaseTasks, renewLeases, saveProgress } from './leases.js';
import { migrate, schemaVersion } from './migrate.js';
import { MYSQL_MIGRATIONS } from './migrations.js';
import { lockName, resolveMysqlOptions, type MysqlStoreOptions } from './options.js';
import * as reads from './reads.js';
import { recoverExpired } from './recover.js';
import { changeStatus } from './status.js';
import { mysqlPoolStats, type PoolStats } from '../pool-stats.js';

export type { MysqlStoreOptions } from './options.js';

export class MysqlStore implements Store {
  readonly dialect = 'mysql' as const;
  readonly expectedSchemaVersion = MYSQL_MIGRATIONS[MYSQL_MIGRATIONS.length - 1]!.version;
  readonly db: MysqlDatabase;
  private readonly bus: LocalBus;
  private claimLock: string | null = null;
  private readonly claimCaps: CapCache = new Map();

  constructor(options: MysqlStoreOptions) {
    const resolved = resolveMysqlOptions(options);
    this.db = new MysqlDatabase(resolved.pool, resolved.ownsPool, resolved.database);
    this.bus = LocalBus.for(`mysql:${resolved.identity}`);
  }

  migrate(): Promise<void> {
    return migrate(this.db);
  }

  schemaVersion(): Promise<number> {
    return schemaVersion(this.db);
  }

  /** The pool's connection counts, read at scrape time by the metrics (read-only). */
  poolStats(): PoolStats | null {
    return mysqlPoolStats(this.db.pool);
  }

  close(): Promise<void> {
    return this.db.close();
  }

  async now(): Promise<Date> {
    const rows = await this.db.run((conn) => this.db.rows(conn, 'SELECT NOW(3) AS now'));
    return decode.time(rows[0]!.now);
  }

  subscribe(listener: StoreListener): () => void {
    return this.bus.subscribe(listener);
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: unknown }): Promise<InsertTaskResult[]> {
    if (params.tasks.length === 0) return [];
    const results =
      params.transaction === undefined || params.transaction === null
        ? await this.db.transaction((conn) => insertTasks(this.db, conn, params.tasks))
        : await this.db.onCallerConnection(callerConnection(params.transaction), (conn) => insertTasks(this.db, conn, params.tasks));
    // Inside a caller's transaction the rows are not visible yet; an early wake-up only costs the worker one empty claim.
    const created = [...new Set(results.filter((r) => r.created).map((r) => r.task.taskType))];
    if (created.length > 0) this.bus.publish({ kind: 'submitted', taskTypes: created });
    return results;
  }

  getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    return this.db.run((conn) => reads.getTask(this.db, conn, params.id, params.scope));
  }

  listTasks(params: ListTasksParams): Promise<TaskPage> {
    return this.db.run((conn) => reads.listTasks(this.db, conn, params));
  }

  countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    return this.db.run((conn) => reads.countByStatus(this.db, conn, params.scope, params.taskType));
  }

  async changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    const results = await this.db.transaction((conn) => changeStatus(this.db, conn, params));
    const cancelled = results.filter((r) => r.applied && r.status === 'CANCEL_REQUESTED').map((r) => r.id);
    if (cancelled.length > 0) this.bus.publish({ kind: 'cancelRequested', taskIds: cancelled });
    if (results.some((r) => r.applied && r.status === 'QUEUED')) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return results;
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    if (params.limit <= 0 || params.taskTypes.length === 0) return [];
    this.claimLock ??= lockName('claim', await this.db.databaseName());
    return this.db.batchedTransaction((tx) => claim(tx, params, this.claimCaps), { lockName: this.claimLock, lockTimeoutSeconds: 5 });
  }

  async renewLeases(params: { leases: readonly Lease[]; leaseMs: number }): Promise<RenewResult> {
    if (params.leases.length === 0) return { renewed: [], cancelRequested: [], lost: [] };
    return this.db.transaction((conn) => renewLeases(this.db, conn, params.leases, params.leaseMs));
  }

  saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    return this.db.run((conn) => saveProgress(this.db, conn, params.lease, params.progress));
  }

  async finishAttempts(params: { outcomes: readonly AttemptOutcome[] }): Promise<boolean[]> {
    if (params.outcomes.length === 0) return [];
    return this.db.batchedTransaction((tx) => finishAttempts(tx, params.outcomes));
  }

  async releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    if (params.leases.length === 0) return 0;
    const released = await this.db.transaction((conn) => releaseTasks(this.db, conn, params.leases));
    if (released > 0) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return released;
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    if (!Number.isInteger(params.batchSize) || params.batchSize < 1) {
      throw new InvalidOptionsError('MysqlStore.recover', 'batchSize', `must be an integer ≥ 1, got ${String(params.batchSize)}`);
    }
    const result = await recoverExpired(this.db, params.batchSize);
    if (result.requeued + result.retriesDue > 0) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return result;
  }

  // ---- history -------------------------------------------------------------

  listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    return this.db.run((conn) => reads.listAttempts(this.db, conn, params.taskId));
  }

  listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    return this.db.run((conn) => reads.listFailures(this.db, conn, params.taskId, params.limit));
  }

  countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    return this.db.run((conn) => reads.countDeadLetters(this.db, conn, params.scope, params.taskType));
  }

  listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    return this.db.run((conn) => reads.listDeadLetters(this.db, conn, params));
  }

  // ---- control plane -------------------------------------------------------

  async replayDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<ReplayResult[]> {
    if (params.ids.length === 0) return [];
    const results = await this.db.transaction((conn) => control.replayDeadLetters(this.db, conn, params.ids, params.scope));
    if (results.some((r) => r.outcome === 'REPLAYED')) this.bus.publish({ kind: 'submitted', taskTypes: [] });
    return results;
  }

  archiveDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<number> {
    return this.db.transaction((conn) => control.archiveDeadLetters(this.db, conn, params.ids, params.scope));
  }

  savePolicy(params: { policy: PolicyInput }): Promise<Policy> {
    return this.db.transaction((conn) => control.savePolicy(this.db, conn, params.policy));
  }

  listPolicies(): Promise<Policy[]> {
    return this.db.run((conn) => control.listPolicies(this.db, conn));
  }

  async deletePolicy(params: { policyKey: string }): Promise<boolean> {
    const result = await this.db.run((conn) => this.db.exec(conn, 'DELETE FROM system_async_task_policy WHERE policy_key = ?', [params.policyKey]));
    return result.affectedRows === 1;
  }

  purgeTerminalTasks(params: { finishedBefore: Date; batchSize: number }): Promise<PurgeResult> {
    return this.db.transaction((conn) => control.purgeTerminalTasks(this.db, conn, params.finishedBefore, params.batchSize));
  }

  registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    return this.db.run((conn) => control.registerWorker(this.db, conn, params.worker));
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    await this.db.run((conn) => this.db.exec(conn, 'DELETE FROM system_async_task_worker WHERE worker_id = ?', [params.workerId]));
  }

  listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    return this.db.run((conn) => control.listWorkers(this.db, conn, params.seenWithinMs));
  }

  leasedCounts(): Promise<Record<string, number>> {
    return this.db.run((conn) => control.leasedCounts(this.db, conn));
  }

  analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    return this.db.run((conn) => control.analysisData(this.db, conn, params.taskType, params.since, params.sampleLimit));
  }
}

/** A caller's transaction: a mysql2 promise connection, or a callback one (we take its promise() face). */
function callerConnection(transaction: unknown): Conn {
  const candidate = transaction as { query?: unknown; promise?: () => unknown } | null;
  if (candidate && typeof candidate.promise === 'function' && !isPromiseConnection(candidate)) return candidate.promise() as Conn;
  if (candidate && typeof candidate.query === 'function') return candidate as Conn;
  throw new InvalidOptionsError('MysqlStore.insertTasks', 'transaction', 'must be a mysql2 connection inside a transaction');
}

function isPromiseConnection(value: object): boolean {
  return value.constructor?.name?.startsWith('Promise') ?? false;
}
