/**
 * The PostgreSQL store: the production engine. Each concern lives in its own
 * module (insert, claim, finish, leases, recover, reads, status, control,
 * migrate, wakeups); this class validates options, owns the pool and the
 * listener, and maps the contract onto them. What every store does alike
 * (closed check, empty input, wake-ups, errors) is base.ts's.
 *
 * Connections: every method runs short statements on the pool and never
 * holds one client while waiting for another, so it cannot deadlock on the
 * pool; 1 connection works. A worker's lease and outcome statements run on
 * a lease pool of their own (ctx.leasePool), so handlers that hold the main
 * pool's clients never starve a heartbeat. LISTEN uses its own connection,
 * never a pool client. Transactions are always one statement (autocommit, READ
 * COMMITTED), except migrate() and a caller's own transaction in insertTasks
 * and finishAttempts — and, behind a transaction pooler with a statement
 * timeout, the BEGIN / SET LOCAL / COMMIT around each statement
 * (connection.ts).
 */
import pg from 'pg';
import { ErrorCode, StoreConnectTimeoutError, StoreError, ValidationError } from '../../core/errors.js';
import * as flows from './flows.js';
import * as sequences from './sequences.js';
import type { SequenceOnDeadLetter, SequenceSummary } from '../rules/sequences.js';
import type { Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import { guardStore, LEASE_METHODS, StoreBase, type StoreMethod } from '../base.js';
import { LocalBus } from '../local-bus.js';
import { watchLocal } from '../outcome-watch.js';
import type {
  Actor,
  AwaitChildrenResult,
  DependencyEdge,
  FlowGraph,
  OnParentFailure,
  TaskDependencies,
  ClaimPlan,
  AnalysisData,
  AttemptOutcome,
  AttemptRecord,
  ChangeStatusParams,
  EditTaskParams,
  ChangeStatusResult,
  ClaimParams,
  DeadLetter,
  FailureRow,
  FinishAndClaimResult,
  FinishResult,
  InsertTaskResult,
  ListDeadLettersParams,
  ListTasksParams,
  Policy,
  PolicyInput,
  PublishEventParams,
  PublishEventResult,
  PurgeResult,
  RecoveryResult,
  RenewParams,
  RenewResult,
  ReplayResult,
  StepRecord,
  AppendTaskLogsParams,
  TaskLogRecord,
  Store,
  StoreEvent,
  StoreListener,
  Subscription,
  SubscriptionInput,
  TaskActionRecord,
  TaskPage,
  WorkerRecord,
  WorkerRegistration,
  RateWindow,
  PurgeParams,
  TaskFilterParams,
} from '../types.js';
import { claimTasks } from './claim.js';
import { explainClaim } from './explain.js';
import { createContext, limitEachTransaction, pgPoolStats, run, type PgContext, type Queryable } from './connection.js';
import * as control from './control.js';
import * as events from './events.js';
import { dropAndMove } from './history.js';
import { isConnectTimeout } from './errors.js';
import { finishAndClaim, finishAttempts } from './finish.js';
import { insertTasks } from './insert.js';
import { recordStep, releaseTasks, renewLeases, saveProgress } from './leases.js';
import * as logs from './logs.js';
import { migrate, schemaVersion } from './migrate.js';
import { PG_MIGRATIONS } from './migrations.js';
import { resolvePostgresOptions, type PostgresStoreOptions } from './options.js';
import * as reads from './reads.js';
import { recover } from './recover.js';
import { changeStatus, editTask } from './status.js';
import { markAwaited, MAX_NOTIFY_BYTES, notifyPayload, PgListener, WAKE_ALL_PAYLOAD, type WakeupState } from './wakeups.js';
import { SubmitWakeups } from '../submit-wakeups.js';
import type { PoolStats } from '../pool-stats.js';

/** A caller's transaction: a pg Client or PoolClient inside BEGIN. */
export type PostgresTransaction = pg.ClientBase;

/**
 * Writes that send their own NOTIFY (in their statement, transactional; a submit made beside others of this store right
 * after its commit, coalesced: insertTasks below); the others owe one after they commit.
 */
const NOTIFIED_IN_STATEMENT: ReadonlySet<StoreMethod> = new Set(['insertTasks', 'publishEvent', 'changeStatus', 'replayDeadLetters']);

export class PostgresStore extends StoreBase implements Store<PostgresTransaction> {
  readonly dialect = 'postgres' as const;
  readonly capabilities = { finishAndClaim: true, transactionalSubmit: true, transactionalComplete: true } as const;
  readonly expectedSchemaVersion = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;
  /** The pool the store runs its statements on (yours if you passed one). */
  readonly pool: pg.Pool;
  readonly schema: string;
  /** Used with pollOnly only: otherwise every process, this one too, hears wake-ups through LISTEN. */
  protected readonly bus = new LocalBus();
  private readonly ctx: PgContext;
  private readonly ownsPool: boolean;
  private readonly ownsLeasePool: boolean;
  private readonly listener: PgListener;
  /** Wake-ups of submits made in the store's own transactions, sent after their commits. */
  private readonly submits: SubmitWakeups;
  /** Submits in the store's own transactions now in flight. */
  private ownSubmits = 0;
  private readonly serverLabel: string;
  private readonly connectTimeoutMs: number;
  /** 'transaction': behind a transaction pooler (option pooler). */
  readonly pooler: 'session' | 'transaction';
  /** No LISTEN connection: workers and waiters poll (option pollOnly). */
  readonly pollOnly: boolean;
  /** Partitioned history: cleanup moves tasks finished this long ago (option historyMoveAfterMs); null: off. */
  readonly historyMoveAfterMs: number | null;

  constructor(options: PostgresStoreOptions = {}) {
    super();
    const resolved = resolvePostgresOptions(options);
    this.pool = resolved.pool;
    this.ownsPool = resolved.ownsPool;
    this.schema = resolved.schema;
    this.serverLabel = resolved.serverLabel;
    this.connectTimeoutMs = resolved.connectTimeoutMs;
    this.pooler = resolved.pooler;
    const transactionPooler = resolved.pooler === 'transaction';
    this.ctx = createContext(this.pool, resolved.leasePool, this.schema, transactionPooler);
    if (transactionPooler && this.ownsPool) limitEachTransaction(this.pool, resolved.statementTimeoutMs);
    if (transactionPooler && resolved.ownsLeasePool) limitEachTransaction(resolved.leasePool, resolved.statementTimeoutMs);
    this.pollOnly = resolved.pollOnly;
    this.historyMoveAfterMs = resolved.historyMoveAfterMs;
    // An idle pooled connection that dies (server restart, pg_terminate_backend)
    // is reported here; without a handler Node would crash the process. The
    // pool drops it and the next statement opens a fresh one.
    if (this.ownsPool) this.pool.on('error', () => undefined);
    if (resolved.ownsLeasePool) resolved.leasePool.on('error', () => undefined);
    this.ownsLeasePool = resolved.ownsLeasePool;
    // The probe goes the way producers' NOTIFYs go (the pool): what it proves is that those are heard.
    this.listener = new PgListener(resolved.clientConfig, this.ctx.channel, async (payload) => {
      await run(this.pool, 'probing wake-ups', 'SELECT pg_notify($1, $2)', [this.ctx.channel, payload]);
    });
    // A wake-up's own commit need not wait for its WAL flush: a lost one is made up by the workers' poll.
    this.submits = new SubmitWakeups(async (taskTypes) => {
      const payload = notifyPayload({ kind: 'submitted', taskTypes });
      await run(this.pool, 'notifying workers', "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)", [
        this.ctx.channel,
        Buffer.byteLength(payload) > MAX_NOTIFY_BYTES ? WAKE_ALL_PAYLOAD : payload,
      ]);
    });
  }

  /** True while the LISTEN connection is up (diagnostics; tests wait on it). */
  get listening(): boolean {
    return this.listener.listening;
  }

  /**
   * Whether wake-ups (LISTEN/NOTIFY) are known to arrive: 'listening' once
   * the listener's self-probe came back, 'deaf' when it did not (workers and
   * waiters are then woken on a short timer), 'pollOnly' with that option.
   * The control-plane health check reports it.
   */
  get wakeups(): WakeupState | 'pollOnly' {
    return this.pollOnly ? 'pollOnly' : this.listener.state;
  }

  protected mapError(error: unknown): Error {
    const cause = error instanceof StoreError && error.code === ErrorCode.STORE_UNAVAILABLE ? error.cause : error;
    if (!isConnectTimeout(cause)) return error as Error;
    // The pool's timer also fires when every connection stayed busy that long: that is not the server's fault.
    const busy = (pool: pg.Pool) => pool.totalCount >= (pool.options.max ?? 10) && pool.idleCount === 0;
    const exhausted = busy(this.pool) ? 'poolSize' : busy(this.ctx.leasePool) ? 'leasePoolSize' : null;
    if (exhausted) return new StoreError(`PostgresStore: no pooled connection became free within ${this.connectTimeoutMs} ms (${exhausted})`, { cause });
    return new StoreConnectTimeoutError(`PostgreSQL at ${this.serverLabel}`, this.connectTimeoutMs, { cause });
  }

  protected override async wake(method: StoreMethod, events: readonly StoreEvent[]): Promise<void> {
    // Poll-only: this process's workers still hear its own writes at once (other processes poll).
    if (this.pollOnly) for (const event of events) this.bus.publish(event);
    if (NOTIFIED_IN_STATEMENT.has(method)) return;
    for (const event of events) {
      // Best effort: idle workers poll anyway.
      const on = LEASE_METHODS.has(method) ? this.ctx.leasePool : this.pool;
      await run(on, 'notifying workers', 'SELECT pg_notify($1, $2)', [this.ctx.channel, notifyPayload(event)]).catch(() => undefined);
    }
  }

  async migrate(): Promise<void> {
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
    await this.submits.settled();
    await this.listener.close();
    if (this.ownsLeasePool) await this.ctx.leasePool.end().catch(() => undefined);
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }

  async explainClaim(params: { taskType: string }): Promise<ClaimPlan> {
    return explainClaim(this.ctx, params.taskType);
  }

  async now(): Promise<Date> {
    const result = await run<{ now: Date }>(this.pool, 'reading the database clock', 'SELECT clock_timestamp() AS now');
    return result.rows[0]!.now;
  }

  override subscribe(listener: StoreListener): () => void {
    if (this.pollOnly) return this.bus.subscribe(listener);
    return this.listener.subscribe(listener);
  }

  /** LISTEN first (its start pings: a NOTIFY sent before it was heard by nobody), then the mark the outcome function reads. */
  override async watchOutcome(params: { taskId: string; listener: () => void }): Promise<() => Promise<void>> {
    const { taskId, listener } = params;
    const offLocal = watchLocal(this.bus, listener);
    // Poll-only: this process's outcome writes, and the waiter's own timer.
    if (this.pollOnly) return async () => offLocal();
    const offNotify = this.listener.subscribeOutcomes((ids) => {
      if (ids.length === 0 || ids.includes(taskId)) listener();
    });
    try {
      const unmark = await markAwaited(this.ctx, taskId);
      return async () => {
        offLocal();
        offNotify();
        await unmark();
      };
    } catch (error) {
      offLocal();
      offNotify();
      throw error;
    }
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: PostgresTransaction }): Promise<InsertTaskResult[]> {
    // In a caller's transaction the NOTIFY must commit (or roll back) with it. In ours, a submit alone NOTIFYs in its
    // statement too (the wake-up leaves with the commit, no round trip after it); beside other submits of this store
    // it leaves the NOTIFY to after its commit, coalesced with theirs (see ../submit-wakeups.ts).
    const own = params.transaction === undefined;
    const after = own && this.ownSubmits > 0;
    if (own) this.ownSubmits += 1;
    try {
      const results = await insertTasks(this.ctx, params.tasks, this.executorFor(params.transaction), after ? null : this.ctx.channel);
      if (after) this.submits.created(results);
      return results;
    } finally {
      if (own) this.ownSubmits -= 1;
    }
  }

  /** Its own transaction on a pooled client, or the caller's; the insert NOTIFYs in its statement (sent on commit). */
  async publishEvent(params: PublishEventParams<PostgresTransaction>): Promise<PublishEventResult> {
    return events.publishEvent(this.ctx, params.event, params.build, this.executorFor(params.transaction));
  }

  async getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    return reads.getTask(this.ctx, params.id, params.scope);
  }

  async listTasks(params: ListTasksParams): Promise<TaskPage> {
    return reads.listTasks(this.ctx, params);
  }

  async explainListTasks(params: ListTasksParams): Promise<ClaimPlan> {
    return reads.explainListTasks(this.ctx, params);
  }

  async countTasks(params: TaskFilterParams): Promise<number> {
    return reads.countTasks(this.ctx, params);
  }

  async countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    return reads.countByStatus(this.ctx, params.scope, params.taskType);
  }

  async changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    return changeStatus(this.ctx, params);
  }

  async editTask(params: EditTaskParams): Promise<ChangeStatusResult> {
    return editTask(this.ctx, params);
  }

  async listSequences(params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): Promise<SequenceSummary[]> {
    return sequences.listSequences(this.ctx, params);
  }

  async skipSequenceHead(params: { key: string }): Promise<{ skipped: string | null; released: string[] }> {
    return sequences.skipSequenceHead(this.ctx, params.key);
  }

  async releaseSequences(params: { keys: readonly string[] }): Promise<{ released: string[] }> {
    return { released: await sequences.releaseSequences(this.ctx, params.keys) };
  }

  async setSequencePolicy(params: { key: string; onDeadLetter: SequenceOnDeadLetter }): Promise<{ found: boolean; released: string[] }> {
    return sequences.setSequencePolicy(this.ctx, params.key, params.onDeadLetter);
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    return claimTasks(this.ctx, params);
  }

  async renewLeases(params: RenewParams): Promise<RenewResult> {
    return renewLeases(this.ctx, params);
  }

  async saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    return saveProgress(this.ctx, params.lease, params.progress);
  }

  async insertFlow(params: { tasks: readonly NewTask[]; edges: readonly DependencyEdge[]; transaction?: PostgresTransaction }): Promise<InsertTaskResult[]> {
    return flows.insertFlow(this.ctx, params.tasks, params.edges, this.executorFor(params.transaction), this.ctx.channel);
  }

  async listDependencies(params: { taskId: string; scope: Scope }): Promise<TaskDependencies> {
    return flows.listDependencies(this.ctx, params.taskId, params.scope);
  }

  async getFlow(params: { flowId: string; scope: Scope; limit: number }): Promise<FlowGraph> {
    return flows.getFlow(this.ctx, params.flowId, params.scope, params.limit);
  }

  async awaitChildren(params: { lease: Lease; children: readonly NewTask[]; onFailure: OnParentFailure }): Promise<AwaitChildrenResult> {
    return flows.awaitChildren(this.ctx, this.pool, params.lease, params.children, params.onFailure);
  }

  async recordStep(params: { lease: Lease; name: string; resultJson: string | null }): Promise<boolean> {
    return recordStep(this.ctx, params.lease, params.name, params.resultJson);
  }

  async appendTaskLogs(params: AppendTaskLogsParams): Promise<boolean> {
    return logs.appendTaskLogs(this.ctx, params);
  }

  async listTaskLogs(params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number }): Promise<TaskLogRecord[]> {
    return logs.listTaskLogs(this.ctx, params);
  }

  async listSteps(params: { taskId: string; currentCycleOnly?: boolean }): Promise<StepRecord[]> {
    return reads.listSteps(this.ctx, params.taskId, params.currentCycleOnly);
  }

  async listRateStarts(params: { withinMs: number }): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }> {
    return reads.listRateStarts(this.ctx, params.withinMs);
  }

  async rateWindows(params: { scopes: readonly { scopeKey: string; periodMs: number }[] }): Promise<RateWindow[]> {
    return reads.rateWindows(this.ctx, params.scopes);
  }

  async finishAttempts(params: { outcomes: readonly AttemptOutcome[]; transaction?: PostgresTransaction }): Promise<FinishResult> {
    return finishAttempts(this.ctx, params.outcomes, params.transaction ? this.executorFor(params.transaction) : null);
  }

  override async finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult> {
    return finishAndClaim(this.ctx, params.outcomes, params.claim);
  }

  async releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    return releaseTasks(this.ctx, params.leases);
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    return recover(this.ctx, params.batchSize);
  }

  async registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    await control.registerWorker(this.ctx, params.worker);
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    await control.unregisterWorker(this.ctx, params.workerId);
  }

  // ---- control plane and history -------------------------------------------

  async listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    return reads.listAttempts(this.ctx, params.taskId);
  }

  async listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    return reads.listFailures(this.ctx, params.taskId, params.limit);
  }

  async listTaskActions(params: { taskId: string; limit?: number }): Promise<TaskActionRecord[]> {
    return reads.listTaskActions(this.ctx, params.taskId, params.limit);
  }

  async listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    return reads.listDeadLetters(this.ctx, params);
  }

  async countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    return reads.countDeadLetters(this.ctx, params.scope, params.taskType);
  }

  async replayDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<ReplayResult[]> {
    return control.replayDeadLetters(this.ctx, params.ids, params.scope, params.actor);
  }

  async archiveDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<number> {
    return control.archiveDeadLetters(this.ctx, params.ids, params.scope, params.actor);
  }

  async savePolicy(params: { policy: PolicyInput }): Promise<Policy> {
    return control.savePolicy(this.ctx, params.policy);
  }

  async listPolicies(): Promise<Policy[]> {
    return control.listPolicies(this.ctx);
  }

  async deletePolicy(params: { policyKey: string }): Promise<boolean> {
    return control.deletePolicy(this.ctx, params.policyKey);
  }

  async purgeTerminalTasks(params: PurgeParams): Promise<PurgeResult> {
    await control.pruneRateStarts(this.ctx);
    // A bulk delete (ids) removes live rows only: moved history goes by its days.
    if (this.historyMoveAfterMs !== null && !params.ids) return dropAndMove(this.ctx, params.finishedBefore, this.historyMoveAfterMs, params.batchSize);
    return control.purgeTerminalTasks(this.ctx, params);
  }

  async purgeDeadLetters(params: { archivedBefore: Date; batchSize: number }): Promise<number> {
    return control.purgeDeadLetters(this.ctx, params.archivedBefore, params.batchSize);
  }

  async listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    return control.listWorkers(this.ctx, params.seenWithinMs);
  }

  async leasedCounts(): Promise<Record<string, number>> {
    return control.leasedCounts(this.ctx);
  }

  async saveSubscription(params: { subscription: SubscriptionInput }): Promise<Subscription> {
    return events.saveSubscription(this.ctx, params.subscription);
  }

  async deleteSubscription(params: { event: string; taskType: string }): Promise<boolean> {
    return events.deleteSubscription(this.ctx, params.event, params.taskType);
  }

  async listSubscriptions(params: { event?: string | null; taskType?: string | null }): Promise<Subscription[]> {
    return events.listSubscriptions(this.ctx, params.event ?? null, params.taskType ?? null);
  }

  async analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    return control.analysisData(this.ctx, params.taskType, params.since, params.sampleLimit);
  }

  /** The caller's client inside BEGIN (the statement joins their transaction), or the pool. */
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
}

guardStore(PostgresStore);
