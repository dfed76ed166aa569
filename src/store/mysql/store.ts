/**
 * The MySQL 8 / MariaDB 10.6+ store, on a mysql2 promise pool.
 *
 * Each method is one short transaction (or one statement); none is held open
 * across a handler's run. insertTasks and finishAttempts may instead join a
 * caller's transaction (transactional submit, ctx.complete(tx)). Deadlocks (1213) and lock-wait timeouts (1205) are
 * retried inside the store with jitter, a bounded number of times, and so
 * never reach a handler as its task's failure; an unreachable server is a
 * StoreError with the driver's error as cause. There is no LISTEN/NOTIFY:
 * `subscribe` hears the submits of this process at once (LocalBus) and those
 * of other processes through the wake-up counters (wakeups.ts).
 */
import * as flows from './flows.js';
import * as sequences from './sequences.js';
import type { SequenceOnDeadLetter, SequenceSummary } from '../rules/sequences.js';
import type { Connection, PoolConnection } from 'mysql2/promise';
import type { Connection as CallbackConnection, PoolConnection as CallbackPoolConnection } from 'mysql2';
import { InvalidOptionsError } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import { guardStore, LEASE_METHODS, StoreBase, type StoreMethod } from '../base.js';
import type { LocalBus } from '../local-bus.js';
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
  PayloadLimit,
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
import { claim, workLeft, type CapCache } from './claim.js';
import { explainClaim } from './explain.js';
import { JoinedTransaction, MysqlDatabase, mysqlPoolStats, type Conn, type RunOptions } from './connection.js';
import * as control from './control.js';
import * as events from './events.js';
import { decode } from './encode.js';
import { finishAttempts } from './finish.js';
import { finishAndClaim } from './finish-claim.js';
import { insertTasks, payloadLimit } from './insert.js';
import { recordStep, releaseTasks, renewLeases, saveProgress } from './leases.js';
import * as logs from './logs.js';
import { migrate, schemaVersion } from './migrate.js';
import { MYSQL_MIGRATIONS } from './migrations.js';
import { lockName, resolveMysqlOptions, type MysqlStoreOptions } from './options.js';
import * as reads from './reads.js';
import { recoverExpired } from './recover.js';
import { changeStatus, editTask } from './status.js';
import { bumpWakeup, wakeupBus, WakeupPoller } from './wakeups.js';
import { SubmitWakeups } from '../submit-wakeups.js';
import type { PoolStats } from '../pool-stats.js';

export type { MysqlStoreOptions } from './options.js';

/** A caller's transaction: a mysql2 connection (promise or callback API) inside START TRANSACTION. */
export type MysqlTransaction = Connection | PoolConnection | CallbackConnection | CallbackPoolConnection;

export class MysqlStore extends StoreBase implements Store<MysqlTransaction> {
  readonly dialect = 'mysql' as const;
  readonly capabilities = { finishAndClaim: true, transactionalSubmit: true, transactionalComplete: true } as const;
  readonly expectedSchemaVersion = MYSQL_MIGRATIONS[MYSQL_MIGRATIONS.length - 1]!.version;
  readonly db: MysqlDatabase;
  /** The worker's heartbeats, lease checks, progress and outcome writes: a pool no handler can take a connection from. */
  readonly leaseDb: MysqlDatabase;
  protected readonly bus: LocalBus;
  private claimLock: string | null = null;
  private readonly claimCaps: CapCache = new Map();
  private readonly wakeups: WakeupPoller;
  /** Submits made in our own transactions bump the counters after their commit (holding a counter's row lock through the commit made them commit one at a time). */
  private readonly submits = new SubmitWakeups(() => this.db.run((conn) => bumpWakeup(this.db, conn)));
  /** When the last claim that filled its limit or left work behind began (monotonic ms): the workers will claim again anyway. */
  private lastFullClaimAt = -Infinity;

  constructor(options: MysqlStoreOptions) {
    super();
    const resolved = resolveMysqlOptions(options);
    const server = { name: resolved.identity, connectTimeoutMs: resolved.connectTimeoutMs };
    this.db = new MysqlDatabase(resolved.pool, resolved.ownsPool, resolved.database, server, resolved.statementTimeoutMs);
    this.leaseDb = new MysqlDatabase(resolved.leasePool, resolved.ownsLeasePool, resolved.database, server, resolved.statementTimeoutMs);
    this.bus = wakeupBus(resolved.identity);
    const period = resolved.wakeupPollMs;
    this.wakeups = new WakeupPoller(
      this.db,
      period,
      () => this.bus.publish({ kind: 'submitted', taskTypes: [] }),
      () => performance.now() - this.lastFullClaimAt < period,
    );
  }

  override subscribe(listener: StoreListener): () => void {
    const unsubscribe = super.subscribe(listener);
    this.wakeups.retain();
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      unsubscribe();
      this.wakeups.release();
    };
  }

  /** Other processes hear a requeue (status change, release, recovery, replay) through the counters too; submits bump them after their commit. */
  protected override async wake(method: StoreMethod, events: readonly StoreEvent[]): Promise<void> {
    await super.wake(method, events);
    if (method === 'insertTasks' || !events.some((event) => event.kind === 'submitted')) return;
    const db = LEASE_METHODS.has(method) ? this.leaseDb : this.db;
    await db.run((conn) => bumpWakeup(db, conn)).catch(() => undefined); // a lost wake-up costs a poll period, not the write
  }

  /** The connection layer maps driver errors (errors.ts) where it can still tell retries apart. */
  protected mapError(error: unknown): Error {
    return error as Error;
  }

  async migrate(): Promise<void> {
    await migrate(this.db);
    // Read at start, so that a server (or CLI) can warn when maxPayloadBytes exceeds it.
    await this.payloadLimit();
  }

  override payloadLimit(): Promise<PayloadLimit> {
    return this.db.run((conn) => payloadLimit(this.db, conn));
  }

  schemaVersion(): Promise<number> {
    return schemaVersion(this.db);
  }

  /** The pool's connection counts, read at scrape time by the metrics (read-only). */
  poolStats(): PoolStats | null {
    return mysqlPoolStats(this.db.pool);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wakeups.stop();
    await this.submits.settled();
    await Promise.all([this.db.close(), this.leaseDb.close()]);
  }

  async explainClaim(params: { taskType: string }): Promise<ClaimPlan> {
    return explainClaim(this.db, params.taskType);
  }

  async now(): Promise<Date> {
    const rows = await this.db.run((conn) => this.db.rows(conn, 'SELECT NOW(3) AS now'));
    return decode.time(rows[0]!.now);
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: MysqlTransaction }): Promise<InsertTaskResult[]> {
    // Inside a caller's transaction the rows are not visible yet; an early wake-up only costs the worker one empty claim.
    if (params.transaction === undefined || params.transaction === null) {
      // One task without a unique option is one INSERT: atomic on its own, no transaction around it.
      const single = params.tasks.length === 1 && !params.tasks[0]!.unique && !params.tasks[0]!.sequenceKey;
      const insert = (conn: Conn) => insertTasks(this.db, conn, params.tasks);
      const results = single ? await this.db.run(insert) : await this.db.transaction(insert);
      this.submits.created(results);
      return results;
    }
    // Not in a caller's transaction: its row lock would be held until the caller commits, blocking other submits.
    // Other processes see these tasks at their next poll.
    return this.db.onCallerConnection(callerConnection(params.transaction, 'insertTasks'), (conn) => insertTasks(this.db, conn, params.tasks));
  }

  insertFlow(params: { tasks: readonly NewTask[]; edges: readonly DependencyEdge[]; transaction?: MysqlTransaction }): Promise<InsertTaskResult[]> {
    // The wake-up of what it queued goes through the counters after the commit (see wakeUp above).
    if (params.transaction === undefined || params.transaction === null) {
      return this.db.transaction((conn) => flows.insertFlow(this.db, conn, params.tasks, params.edges));
    }
    return this.db.onCallerConnection(callerConnection(params.transaction, 'insertFlow'), (conn) =>
      flows.insertFlow(this.db, conn, params.tasks, params.edges),
    );
  }

  listDependencies(params: { taskId: string; scope: Scope }): Promise<TaskDependencies> {
    return this.db.run((conn) => flows.listDependencies(this.db, conn, params.taskId, params.scope));
  }

  getFlow(params: { flowId: string; scope: Scope; limit: number }): Promise<FlowGraph> {
    return this.db.run((conn) => flows.getFlow(this.db, conn, params.flowId, params.scope, params.limit));
  }

  async awaitChildren(params: { lease: Lease; children: readonly NewTask[]; onFailure: OnParentFailure }): Promise<AwaitChildrenResult> {
    return this.db.transaction((conn) => flows.awaitChildren(this.db, conn, params.lease, params.children, params.onFailure));
  }

  /** Its own transaction (retried whole on a deadlock), or the caller's; wake-ups as for a submit (base.ts, wake()). */
  publishEvent(params: PublishEventParams<MysqlTransaction>): Promise<PublishEventResult> {
    const publish = (conn: Conn) => events.publishEvent(this.db, conn, params.event, params.build);
    if (params.transaction === undefined || params.transaction === null) return this.db.transaction(publish);
    return this.db.onCallerConnection(callerConnection(params.transaction, 'publishEvent'), publish);
  }

  getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    return this.db.run((conn) => reads.getTask(this.db, conn, params.id, params.scope));
  }

  listTasks(params: ListTasksParams): Promise<TaskPage> {
    return this.db.run((conn) => reads.listTasks(this.db, conn, params));
  }

  explainListTasks(params: ListTasksParams): Promise<ClaimPlan> {
    return this.db.run((conn) => reads.explainListTasks(this.db, conn, params));
  }

  countTasks(params: TaskFilterParams): Promise<number> {
    return this.db.run((conn) => reads.countTasks(this.db, conn, params));
  }

  countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    return this.db.run((conn) => reads.countByStatus(this.db, conn, params.scope, params.taskType));
  }

  changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    return this.db.transaction((conn) => changeStatus(this.db, conn, params));
  }

  editTask(params: EditTaskParams): Promise<ChangeStatusResult> {
    return this.db.transaction((conn) => editTask(this.db, conn, params));
  }

  listSequences(params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): Promise<SequenceSummary[]> {
    return this.db.run((conn) => sequences.listSequences(this.db, conn, params));
  }

  skipSequenceHead(params: { key: string }): Promise<{ skipped: string | null; released: string[] }> {
    return this.db.transaction((conn) => sequences.skipSequenceHead(flows.stepsOn(this.db, conn), params.key));
  }

  releaseSequences(params: { keys: readonly string[] }): Promise<{ released: string[] }> {
    return this.db.transaction(async (conn) => ({ released: await sequences.releaseKeys(flows.stepsOn(this.db, conn), params.keys) }));
  }

  setSequencePolicy(params: { key: string; onDeadLetter: SequenceOnDeadLetter }): Promise<{ found: boolean; released: string[] }> {
    return this.db.transaction((conn) => sequences.setSequencePolicy(flows.stepsOn(this.db, conn), params.key, params.onDeadLetter));
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    const sentAt = performance.now();
    const lock = await this.claimLockOptions(params);
    const tasks = await this.db.batchedTransaction((tx) => claim(tx, params, this.claimCaps), lock);
    this.claimed(tasks, params, sentAt);
    return tasks;
  }

  /** Outcomes and the next claim in one transaction (finish-claim.ts), on the lease pool. */
  override async finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult> {
    if (params.outcomes.length === 0) return { applied: [], deadLetters: [], claimed: await this.claimTasks(params.claim) };
    const sentAt = performance.now();
    const lock = await this.claimLockOptions(params.claim);
    const result = await this.leaseDb.batchedTransaction((tx) => finishAndClaim(tx, params.outcomes, params.claim, this.claimCaps), lock);
    this.claimed(result.claimed, params.claim, sentAt);
    return result;
  }

  private async claimLockOptions(claim: ClaimParams): Promise<RunOptions> {
    this.claimLock ??= lockName('claim', await this.db.databaseName());
    return { lockName: this.claimLock, lockTimeoutSeconds: 5, onSent: claim.onSent };
  }

  private claimed(tasks: readonly Task[], params: ClaimParams, sentAt: number): void {
    // A short claim means the queue is empty, or limits bind: then the wake-up poller must keep reading unless the
    // claim left work behind (its workers claim again along with their next outcomes; every claim covers every type).
    if (tasks.length >= params.limit || (tasks.length > 0 && workLeft(this.claimCaps))) this.lastFullClaimAt = sentAt;
  }

  renewLeases(params: RenewParams): Promise<RenewResult> {
    // `durable` (ctx.fence) asks nothing more here: an InnoDB commit is on disk when it answers, the claim's too
    // (innodb_flush_log_at_trx_commit = 1, the default; with 0 or 2 a crash of the machine may lose the last second).
    return this.leaseDb.transaction((conn) => renewLeases(this.leaseDb, conn, params.leases, params.leaseMs), { onSent: params.onSent });
  }

  saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    return this.leaseDb.run((conn) => saveProgress(this.leaseDb, conn, params.lease, params.progress));
  }

  recordStep(params: { lease: Lease; name: string; resultJson: string | null }): Promise<boolean> {
    return this.leaseDb.transaction((conn) => recordStep(this.leaseDb, conn, params.lease, params.name, params.resultJson));
  }

  async appendTaskLogs(params: AppendTaskLogsParams): Promise<boolean> {
    return this.leaseDb.transaction((conn) => logs.appendTaskLogs(this.leaseDb, conn, params));
  }

  async listTaskLogs(params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number }): Promise<TaskLogRecord[]> {
    return this.db.run((conn) => logs.listTaskLogs(this.db, conn, params));
  }

  listSteps(params: { taskId: string; currentCycleOnly?: boolean }): Promise<StepRecord[]> {
    return this.db.run((conn) => reads.listSteps(this.db, conn, params.taskId, params.currentCycleOnly));
  }

  listRateStarts(params: { withinMs: number }): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }> {
    return this.db.run((conn) => reads.listRateStarts(this.db, conn, params.withinMs));
  }

  rateWindows(params: { scopes: readonly { scopeKey: string; periodMs: number }[] }): Promise<RateWindow[]> {
    return this.db.run((conn) => reads.rateWindows(this.db, conn, params.scopes));
  }

  finishAttempts(params: { outcomes: readonly AttemptOutcome[]; transaction?: MysqlTransaction }): Promise<FinishResult> {
    if (!params.transaction) return this.leaseDb.batchedTransaction((tx) => finishAttempts(tx, params.outcomes));
    const caller = callerConnection(params.transaction, 'finishAttempts');
    return this.db.onCallerConnection(caller, (conn) => finishAttempts(new JoinedTransaction(this.db, conn), params.outcomes));
  }

  releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    return this.leaseDb.transaction((conn) => releaseTasks(this.leaseDb, conn, params.leases));
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    if (!Number.isInteger(params.batchSize) || params.batchSize < 1) {
      throw new InvalidOptionsError('MysqlStore.recover', 'batchSize', `must be an integer ≥ 1, got ${String(params.batchSize)}`);
    }
    return recoverExpired(this.db, params.batchSize);
  }

  registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    return this.db.run((conn) => control.registerWorker(this.db, conn, params.worker));
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    await this.db.run((conn) => this.db.exec(conn, 'DELETE FROM system_async_task_worker WHERE worker_id = ?', [params.workerId]));
  }

  // ---- control plane and history -------------------------------------------

  listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    return this.db.run((conn) => reads.listAttempts(this.db, conn, params.taskId));
  }

  listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    return this.db.run((conn) => reads.listFailures(this.db, conn, params.taskId, params.limit));
  }

  listTaskActions(params: { taskId: string; limit?: number }): Promise<TaskActionRecord[]> {
    return this.db.run((conn) => reads.listTaskActions(this.db, conn, params.taskId, params.limit));
  }

  countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    return this.db.run((conn) => reads.countDeadLetters(this.db, conn, params.scope, params.taskType));
  }

  listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    return this.db.run((conn) => reads.listDeadLetters(this.db, conn, params));
  }

  replayDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<ReplayResult[]> {
    return this.db.transaction((conn) => control.replayDeadLetters(this.db, conn, params.ids, params.scope, params.actor));
  }

  archiveDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<number> {
    return this.db.transaction((conn) => control.archiveDeadLetters(this.db, conn, params.ids, params.scope, params.actor));
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

  purgeTerminalTasks(params: PurgeParams): Promise<PurgeResult> {
    return this.db.transaction((conn) => control.purgeTerminalTasks(this.db, conn, params));
  }

  purgeDeadLetters(params: { archivedBefore: Date; batchSize: number }): Promise<number> {
    return this.db.run((conn) => control.purgeDeadLetters(this.db, conn, params.archivedBefore, params.batchSize));
  }

  listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    return this.db.run((conn) => control.listWorkers(this.db, conn, params.seenWithinMs));
  }

  leasedCounts(): Promise<Record<string, number>> {
    return this.db.run((conn) => control.leasedCounts(this.db, conn));
  }

  saveSubscription(params: { subscription: SubscriptionInput }): Promise<Subscription> {
    return this.db.transaction((conn) => events.saveSubscription(this.db, conn, params.subscription));
  }

  deleteSubscription(params: { event: string; taskType: string }): Promise<boolean> {
    return this.db.run((conn) => events.deleteSubscription(this.db, conn, params.event, params.taskType));
  }

  listSubscriptions(params: { event?: string | null; taskType?: string | null }): Promise<Subscription[]> {
    return this.db.run((conn) => events.listSubscriptions(this.db, conn, params.event ?? null, params.taskType ?? null));
  }

  analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    return this.db.run((conn) => control.analysisData(this.db, conn, params.taskType, params.since, params.sampleLimit));
  }
}

guardStore(MysqlStore);

/** A caller's transaction: a mysql2 promise connection, or a callback one (we take its promise() face). */
function callerConnection(transaction: MysqlTransaction, method: string): Conn {
  const candidate = transaction as { query?: unknown; promise?: () => unknown } | null;
  if (candidate && typeof candidate.promise === 'function' && !isPromiseConnection(candidate)) return candidate.promise() as Conn;
  if (candidate && typeof candidate.query === 'function') return candidate as Conn;
  throw new InvalidOptionsError(`MysqlStore.${method}`, 'transaction', 'must be a mysql2 connection inside a transaction');
}

function isPromiseConnection(value: object): boolean {
  return value.constructor?.name?.startsWith('Promise') ?? false;
}
