/**
 * The PostgreSQL store: the production engine. Each operation lives in its
 * own module (claim.ts, finish.ts, leases.ts, recover.ts, insert.ts,
 * queries.ts, listener.ts); this class validates options, owns the pool and
 * the listener, and maps every call onto them.
 *
 * Connections: every method runs short statements on the pool and never
 * holds one client while waiting for another, so it cannot deadlock on the
 * pool; 1 connection works, 2 or more keep heartbeats from queueing behind a
 * claim that waits for the claim lock. LISTEN uses its own connection, never
 * a pool client. Transactions are always one statement (autocommit, READ
 * COMMITTED), except migrate() and a caller's own transaction in insertTasks.
 */
import pg from 'pg';
import { StoreError, ValidationError } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import type {
  AnalysisData, AttemptOutcome, AttemptRecord, ChangeStatusParams, ChangeStatusResult, ClaimParams, DeadLetter, FailureRow, FinishAndClaimResult,
  InsertTaskResult, ListDeadLettersParams, ListTasksParams, Policy, PolicyInput, PurgeResult, RecoveryResult, RenewResult,
  ReplayResult, Store, StoreListener, TaskPage, WorkerRecord, WorkerRegistration,
} from '../types.js';
import * as control from './control.js';
import { PG_MIGRATIONS } from './schema.js';
import { claimTasks } from './claim.js';
import { createContext, run, type PgContext, type Queryable } from './context.js';
import { finishAndClaim, finishAttempts } from './finish.js';
import { insertTasks } from './insert.js';
import { releaseTasks, renewLeases, saveProgress } from './leases.js';
import { PgListener, WAKE_ALL_PAYLOAD } from './listener.js';
import { migrate, schemaVersion } from './migrations.js';
import { resolvePostgresOptions, type PostgresStoreOptions } from './options.js';
import * as queries from './queries.js';
import { recover } from './recover.js';
import { pgPoolStats, type PoolStats } from '../pool-stats.js';

export class PostgresStore implements Store {
  readonly dialect = 'postgres' as const;
  readonly expectedSchemaVersion = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;
  /** The pool the store runs its statements on (yours if you passed one). */
  readonly pool: pg.Pool;
  readonly schema: string;
  private readonly ctx: PgContext;
  private readonly ownsPool: boolean;
  private readonly listener: PgListener;
  private closed = false;

  constructor(options: PostgresStoreOptions = {}) {
    const resolved = resolvePostgresOptions(options);
    this.pool = resolved.pool;
    this.ownsPool = resolved.ownsPool;
    this.schema = resolved.schema;
    this.ctx = createContext(this.pool, this.schema);
    // An idle pooled connection that dies (server restart, pg_terminate_backend)
    // is reported here; without a handler Node would crash the process. The
    // pool drops it and the next statement opens a fresh one.
    if (this.ownsPool) this.pool.on('error', () => undefined);
    this.listener = new PgListener(resolved.clientConfig, this.ctx.channel);
  }

  /** True while the LISTEN connection is up (diagnostics; tests wait on it). */
  get listening(): boolean {
    return this.listener.listening;
  }

  async migrate(): Promise<void> {
    this.assertOpen();
    await migrate(this.ctx);
  }

  /** The highest migration applied to the schema (0: none). */
  async schemaVersion(): Promise<number> {
    return schemaVersion(this.ctx);
  }

  /** The pool's connection counts, read at scrape time by the metrics (read-only). */
  poolStats(): PoolStats {
    return pgPoolStats(this.pool);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener.close();
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }

  async now(): Promise<Date> {
    this.assertOpen();
    const result = await run<{ now: Date }>(this.pool, 'reading the database clock', 'SELECT clock_timestamp() AS now');
    return result.rows[0]!.now;
  }

  subscribe(listener: StoreListener): () => void {
    if (this.closed) return () => undefined;
    return this.listener.subscribe(listener);
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: unknown }): Promise<InsertTaskResult[]> {
    this.assertOpen();
    if (params.tasks.length === 0) return [];
    return insertTasks(this.ctx, params.tasks, this.executorFor(params.transaction));
  }

  async getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    this.assertOpen();
    return queries.getTask(this.ctx, params.id, params.scope);
  }

  async listTasks(params: ListTasksParams): Promise<TaskPage> {
    this.assertOpen();
    return queries.listTasks(this.ctx, params);
  }

  async countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    this.assertOpen();
    return queries.countByStatus(this.ctx, params.scope, params.taskType);
  }

  async changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    this.assertOpen();
    return queries.changeStatus(this.ctx, params);
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    this.assertOpen();
    return claimTasks(this.ctx, params);
  }

  async renewLeases(params: { leases: readonly Lease[]; leaseMs: number }): Promise<RenewResult> {
    this.assertOpen();
    return renewLeases(this.ctx, params.leases, params.leaseMs);
  }

  async saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    this.assertOpen();
    return saveProgress(this.ctx, params.lease, params.progress);
  }

  async finishAttempts(params: { outcomes: readonly AttemptOutcome[] }): Promise<boolean[]> {
    this.assertOpen();
    return finishAttempts(this.ctx, params.outcomes);
  }

  async finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult> {
    this.assertOpen();
    return finishAndClaim(this.ctx, params.outcomes, params.claim);
  }

  async releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    this.assertOpen();
    return releaseTasks(this.ctx, params.leases);
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    this.assertOpen();
    const result = await recover(this.ctx, params.batchSize);
    if (result.requeued + result.retriesDue > 0) {
      // Requeued work: wake idle workers of every type (best effort; they poll anyway).
      await run(this.pool, 'notifying workers', 'SELECT pg_notify($1, $2)', [this.ctx.channel, WAKE_ALL_PAYLOAD]).catch(() => undefined);
    }
    return result;
  }

  // ---- history -------------------------------------------------------------

  async listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    this.assertOpen();
    return queries.listAttempts(this.ctx, params.taskId);
  }

  async listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    this.assertOpen();
    return queries.listFailures(this.ctx, params.taskId, params.limit);
  }

  async listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    this.assertOpen();
    return queries.listDeadLetters(this.ctx, params);
  }

  // ---- control plane -------------------------------------------------------

  async countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    this.assertOpen();
    return queries.countDeadLetters(this.ctx, params.scope, params.taskType);
  }

  async replayDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<ReplayResult[]> {
    this.assertOpen();
    return control.replayDeadLetters(this.ctx, params.ids, params.scope);
  }

  async archiveDeadLetters(params: { ids: readonly string[]; scope: Scope }): Promise<number> {
    this.assertOpen();
    return control.archiveDeadLetters(this.ctx, params.ids, params.scope);
  }

  async savePolicy(params: { policy: PolicyInput }): Promise<Policy> {
    this.assertOpen();
    return control.savePolicy(this.ctx, params.policy);
  }

  async listPolicies(): Promise<Policy[]> {
    this.assertOpen();
    return control.listPolicies(this.ctx);
  }

  async deletePolicy(params: { policyKey: string }): Promise<boolean> {
    this.assertOpen();
    return control.deletePolicy(this.ctx, params.policyKey);
  }

  async purgeTerminalTasks(params: { finishedBefore: Date; batchSize: number }): Promise<PurgeResult> {
    this.assertOpen();
    return control.purgeTerminalTasks(this.ctx, params.finishedBefore, params.batchSize);
  }

  async registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    this.assertOpen();
    await control.registerWorker(this.ctx, params.worker);
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    this.assertOpen();
    await control.unregisterWorker(this.ctx, params.workerId);
  }

  async listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    this.assertOpen();
    return control.listWorkers(this.ctx, params.seenWithinMs);
  }

  async leasedCounts(): Promise<Record<string, number>> {
    this.assertOpen();
    return control.leasedCounts(this.ctx);
  }

  async analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    this.assertOpen();
    return control.analysisData(this.ctx, params.taskType, params.since, params.sampleLimit);
  }

  // ---- internals -----------------------------------------------------------

  /** The caller's client inside BEGIN (the insert joins their transaction), or the pool. */
  private executorFor(transaction: unknown): Queryable {
    if (transaction === undefined || transaction === null) return this.pool;
    if (transaction instanceof pg.Pool) {
      throw new ValidationError('transaction must be a client inside BEGIN (pool.connect()), not a pool: a pool runs each statement on its own', 'transaction');
    }
    if (typeof (transaction as { query?: unknown }).query !== 'function') {
      throw new ValidationError('transaction must be a pg Client or PoolClient inside BEGIN', 'transaction');
    }
    return transaction as Queryable;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreError('PostgresStore is closed');
  }
}
