/**
 * The embedded store: one SQLite file, WAL, shared by any number of worker
 * processes on one machine. better-sqlite3 is synchronous, so each method is
 * one short transaction; writes run under BEGIN IMMEDIATE, which takes
 * SQLite's single write lock first and so serializes counting leased rows
 * with claiming them (limits hold as invariants). Each concern lives in its
 * own module (insert, claim, finish, leases, recover, reads, status, control,
 * migrate, wakeups); this class maps the contract onto them. What every store
 * does alike (closed check, empty input, wake-ups, errors) is base.ts's.
 */
import { resolve } from 'node:path';
import { InvalidOptionsError } from '../../core/errors.js';
import type { Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask, Task, TaskProgress } from '../../core/task.js';
import { guardStore, StoreBase } from '../base.js';
import { LocalBus } from '../local-bus.js';
import type {
  AwaitChildrenResult,
  ClaimPlan,
  DependencyEdge,
  FlowGraph,
  OnParentFailure,
  TaskDependencies,
  AnalysisData,
  AttemptOutcome,
  AttemptRecord,
  ChangeStatusParams,
  EditTaskParams,
  ChangeStatusResult,
  ClaimParams,
  DeadLetter,
  DeadLetterRef,
  FailureRow,
  FinishAndClaimResult,
  FinishResult,
  InsertTaskResult,
  ListDeadLettersParams,
  ListTasksParams,
  Actor,
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
import { claim, leasedByType } from './claim.js';
import { explainClaim } from './explain.js';
import { LockWaits, openDatabase, type Db } from './connection.js';
import * as control from './control.js';
import * as events from './events.js';
import { toSqliteTime } from './encode.js';
import { mapSqliteError } from './errors.js';
import { finishOutcome } from './finish.js';
import * as flows from './flows.js';
import * as sequences from './sequences.js';
import type { SequenceOnDeadLetter, SequenceSummary } from '../rules/sequences.js';
import { insertTasks } from './insert.js';
import { durably, recordStep, releaseTasks, renewLeases, saveProgress } from './leases.js';
import * as logs from './logs.js';
import { EXPECTED_SCHEMA_VERSION, migrate, schemaVersion } from './migrate.js';
import { resolveSqliteOptions, type SqliteStoreOptions } from './options.js';
import * as reads from './reads.js';
import { recover } from './recover.js';
import { changeStatus, editTask } from './status.js';
import { WalWatcher } from './wakeups.js';
import { pingLocal } from '../outcome-watch.js';

export type { SqliteStoreOptions } from './options.js';

/** SQLite has no transaction a caller could hand in: submits and outcome writes never take one. */
export type SqliteTransaction = never;

export class SqliteStore extends StoreBase implements Store<SqliteTransaction> {
  readonly dialect = 'sqlite' as const;
  readonly capabilities = { finishAndClaim: true, transactionalSubmit: false, transactionalComplete: false } as const;
  readonly expectedSchemaVersion = EXPECTED_SCHEMA_VERSION;
  readonly db: Db;
  protected readonly bus: LocalBus;
  private readonly path: string;
  private readonly clock: () => number;
  private readonly walWatcher: WalWatcher | null;
  private seenDataVersion = -1;
  private readonly lockWaits: LockWaits;

  constructor(options: SqliteStoreOptions) {
    super();
    const resolved = resolveSqliteOptions(options);
    this.path = resolved.path;
    this.clock = resolved.clock;
    this.db = openDatabase(resolved.path, resolved.busyTimeoutMs);
    this.lockWaits = new LockWaits(resolved.busyTimeoutMs);
    const memory = resolved.path === ':memory:';
    this.bus = LocalBus.for(memory ? this : `sqlite:${resolve(resolved.path)}`);
    this.walWatcher = memory ? null : new WalWatcher(resolve(resolved.path), () => this.walChanged());
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
    pingLocal(this.bus);
  }

  nowText(): string {
    return toSqliteTime(this.clock());
  }

  protected mapError(error: unknown): Error {
    return mapSqliteError(error, this.path);
  }

  /**
   * Runs `work` under BEGIN IMMEDIATE: SQLite's write lock first, so reads and
   * writes inside see one state. Every write of this store (its schedule and
   * token parts too) goes through write() or writeOne(): a statement run
   * directly waits only one busy slice for another process's lock.
   */
  write<T>(work: () => T): Promise<T> {
    return this.lockWaits.write(() => this.db.transaction(work).immediate());
  }

  /** One statement that writes (autocommit): waits for the lock like write(). */
  writeOne<T>(work: () => T): Promise<T> {
    return this.lockWaits.write(work);
  }

  read<T>(work: () => T): Promise<T> {
    return this.lockWaits.read(work);
  }

  async migrate(): Promise<void> {
    await this.writeOne(() => migrate(this.db, this.nowText()));
  }

  async schemaVersion(): Promise<number> {
    return this.read(() => schemaVersion(this.db));
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

  async explainClaim(params: { taskType: string }): Promise<ClaimPlan> {
    return explainClaim(this.db, params.taskType, this.clock());
  }

  override subscribe(listener: StoreListener): () => void {
    this.watchWal();
    return super.subscribe(listener);
  }

  /** Other processes' commits ping waiters too (any commit may be the outcome; the waiter re-reads one row). */
  override async watchOutcome(params: { taskId: string; listener: () => void }): Promise<() => Promise<void>> {
    this.watchWal();
    return super.watchOutcome(params);
  }

  private watchWal(): void {
    // From here on, only other connections' commits move data_version: our own next commit must not look like one.
    if (this.walWatcher && this.seenDataVersion < 0) this.seenDataVersion = this.db.pragma('data_version', { simple: true }) as number;
    this.walWatcher?.start();
  }

  // ---- producers -----------------------------------------------------------

  async insertTasks(params: { tasks: readonly NewTask[]; transaction?: SqliteTransaction }): Promise<InsertTaskResult[]> {
    if (params.transaction !== undefined) throw new InvalidOptionsError('SqliteStore.insertTasks', 'transaction', 'is not supported on SQLite');
    return this.write(() => insertTasks(this.db, params.tasks, this.clock()));
  }

  async insertFlow(params: { tasks: readonly NewTask[]; edges: readonly DependencyEdge[]; transaction?: SqliteTransaction }): Promise<InsertTaskResult[]> {
    if (params.transaction !== undefined) throw new InvalidOptionsError('SqliteStore.insertFlow', 'transaction', 'is not supported on SQLite');
    return this.write(() => {
      const nowMs = this.clock();
      return flows.insertFlow(this.db, params.tasks, params.edges, nowMs, toSqliteTime(nowMs));
    });
  }

  async listDependencies(params: { taskId: string; scope: Scope }): Promise<TaskDependencies> {
    return this.read(() => flows.listDependencies(this.db, params.taskId, params.scope));
  }

  async getFlow(params: { flowId: string; scope: Scope; limit: number }): Promise<FlowGraph> {
    return this.read(() => flows.getFlow(this.db, params.flowId, params.scope, params.limit));
  }

  async publishEvent(params: PublishEventParams<SqliteTransaction>): Promise<PublishEventResult> {
    if (params.transaction !== undefined) throw new InvalidOptionsError('SqliteStore.publishEvent', 'transaction', 'is not supported on SQLite');
    return this.write(() => events.publishEvent(this.db, params.event, params.build, this.clock()));
  }

  async getTask(params: { id: string; scope: Scope }): Promise<Task | null> {
    return this.read(() => reads.getTask(this.db, params.id, params.scope));
  }

  async listTasks(params: ListTasksParams): Promise<TaskPage> {
    return this.read(() => reads.listTasks(this.db, params));
  }

  async explainListTasks(params: ListTasksParams): Promise<ClaimPlan> {
    return this.read(() => reads.explainListTasks(this.db, params));
  }

  async countTasks(params: TaskFilterParams): Promise<number> {
    return this.read(() => reads.countTasks(this.db, params));
  }

  async countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>> {
    return this.read(() => reads.countByStatus(this.db, params.scope, params.taskType));
  }

  async changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
    return this.write(() => changeStatus(this.db, params, this.nowText()));
  }

  async editTask(params: EditTaskParams): Promise<ChangeStatusResult> {
    return this.write(() => editTask(this.db, params, this.nowText()));
  }

  async listSequences(params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): Promise<SequenceSummary[]> {
    return this.read(() => sequences.listSequences(this.db, params));
  }

  async skipSequenceHead(params: { key: string }): Promise<{ skipped: string | null; released: string[] }> {
    return this.write(() => sequences.skipSequenceHead(this.db, params.key, this.nowText()));
  }

  async releaseSequences(params: { keys: readonly string[] }): Promise<{ released: string[] }> {
    return this.write(() => ({ released: sequences.releaseKeys(this.db, params.keys, this.nowText()) }));
  }

  async setSequencePolicy(params: { key: string; onDeadLetter: SequenceOnDeadLetter }): Promise<{ found: boolean; released: string[] }> {
    return this.write(() => sequences.setSequencePolicy(this.db, params.key, params.onDeadLetter, this.nowText()));
  }

  // ---- workers -------------------------------------------------------------

  async claimTasks(params: ClaimParams): Promise<Task[]> {
    return this.write(() => {
      params.onSent?.();
      return claim(this.db, params, this.clock());
    });
  }

  async renewLeases(params: RenewParams): Promise<RenewResult> {
    // The clock is read when the lock is had: a renewal that waited still grants a whole lease from then.
    return this.writeOne(() => {
      params.onSent?.();
      const nowMs = this.clock();
      const renew = () => renewLeases(this.db, params.leases, toSqliteTime(nowMs + params.leaseMs), toSqliteTime(nowMs));
      return params.durable ? durably(this.db, renew) : renew();
    });
  }

  async saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean> {
    return this.writeOne(() => saveProgress(this.db, params.lease, params.progress, this.nowText()));
  }

  async recordStep(params: { lease: Lease; name: string; resultJson: string | null }): Promise<boolean> {
    return this.write(() => recordStep(this.db, params.lease, params.name, params.resultJson, this.nowText()));
  }

  async listSteps(params: { taskId: string; currentCycleOnly?: boolean }): Promise<StepRecord[]> {
    return this.read(() => reads.listSteps(this.db, params.taskId, params.currentCycleOnly));
  }

  async appendTaskLogs(params: AppendTaskLogsParams): Promise<boolean> {
    return this.write(() => logs.appendTaskLogs(this.db, params, this.nowText()));
  }

  async listTaskLogs(params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number }): Promise<TaskLogRecord[]> {
    return this.read(() => logs.listTaskLogs(this.db, params));
  }

  async listRateStarts(params: { withinMs: number }): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }> {
    return this.read(() => reads.listRateStarts(this.db, params.withinMs, this.clock()));
  }

  async rateWindows(params: { scopes: readonly { scopeKey: string; periodMs: number }[] }): Promise<RateWindow[]> {
    return this.read(() => reads.rateWindows(this.db, params.scopes, this.clock()));
  }

  async finishAttempts(params: { outcomes: readonly AttemptOutcome[]; transaction?: SqliteTransaction }): Promise<FinishResult> {
    if (params.transaction !== undefined) throw new InvalidOptionsError('SqliteStore.finishAttempts', 'transaction', 'is not supported on SQLite');
    return this.write(() => this.finishNow(params.outcomes));
  }

  /** Outcomes, then a claim, in one transaction: the claim counts the slots the outcomes freed, and one lock turn serves both. */
  override async finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult> {
    return this.write(() => {
      params.claim.onSent?.();
      const finished = this.finishNow(params.outcomes);
      return { ...finished, claimed: claim(this.db, params.claim, this.clock()) };
    });
  }

  /** Inside a write transaction. */
  private finishNow(outcomes: readonly AttemptOutcome[]): FinishResult {
    const nowMs = this.clock();
    const now = toSqliteTime(nowMs);
    const deadLetters: DeadLetterRef[] = [];
    const ended: string[] = [];
    const applied = outcomes.map((outcome) => finishOutcome(this.db, outcome, now, nowMs, deadLetters, ended));
    const released = ended.length > 0 ? flows.settle(this.db, ended, now) : [];
    return released.length > 0 ? { applied, deadLetters, released } : { applied, deadLetters };
  }

  async awaitChildren(params: { lease: Lease; children: readonly NewTask[]; onFailure: OnParentFailure }): Promise<AwaitChildrenResult> {
    return this.write(() => {
      const nowMs = this.clock();
      const now = toSqliteTime(nowMs);
      return flows.awaitChildren(this.db, params.lease, params.children, params.onFailure, nowMs, now);
    });
  }

  async releaseTasks(params: { leases: readonly Lease[] }): Promise<number> {
    return this.write(() => releaseTasks(this.db, params.leases, this.nowText()));
  }

  async recover(params: { batchSize: number }): Promise<RecoveryResult> {
    return this.write(() => recover(this.db, params.batchSize, this.clock()));
  }

  async registerWorker(params: { worker: WorkerRegistration }): Promise<void> {
    await this.writeOne(() => control.registerWorker(this.db, params.worker, this.nowText()));
  }

  async unregisterWorker(params: { workerId: string }): Promise<void> {
    await this.writeOne(() => control.unregisterWorker(this.db, params.workerId));
  }

  // ---- control plane and history -------------------------------------------

  async listAttempts(params: { taskId: string }): Promise<AttemptRecord[]> {
    return this.read(() => reads.listAttempts(this.db, params.taskId));
  }

  async listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]> {
    return this.read(() => reads.listFailures(this.db, params.taskId, params.limit));
  }

  async listTaskActions(params: { taskId: string; limit?: number }): Promise<TaskActionRecord[]> {
    return this.read(() => reads.listTaskActions(this.db, params.taskId, params.limit));
  }

  async listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]> {
    return this.read(() => reads.listDeadLetters(this.db, params));
  }

  async countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number> {
    return this.read(() => reads.countDeadLetters(this.db, params.scope, params.taskType));
  }

  async replayDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<ReplayResult[]> {
    return this.write(() => control.replayDeadLetters(this.db, params.ids, params.scope, this.nowText(), params.actor));
  }

  async archiveDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<number> {
    return this.write(() => control.archiveDeadLetters(this.db, params.ids, params.scope, this.nowText(), params.actor));
  }

  async savePolicy(params: { policy: PolicyInput }): Promise<Policy> {
    return this.writeOne(() => control.savePolicy(this.db, params.policy, this.nowText()));
  }

  async listPolicies(): Promise<Policy[]> {
    return this.read(() => control.listPolicies(this.db));
  }

  async deletePolicy(params: { policyKey: string }): Promise<boolean> {
    return this.writeOne(() => control.deletePolicy(this.db, params.policyKey));
  }

  async purgeTerminalTasks(params: PurgeParams): Promise<PurgeResult> {
    return this.write(() => control.purgeTerminalTasks(this.db, params, this.nowText()));
  }

  async purgeDeadLetters(params: { archivedBefore: Date; batchSize: number }): Promise<number> {
    return this.write(() => control.purgeDeadLetters(this.db, params.archivedBefore, params.batchSize));
  }

  async listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]> {
    return this.read(() => control.listWorkers(this.db, toSqliteTime(this.clock() - params.seenWithinMs)));
  }

  async leasedCounts(): Promise<Record<string, number>> {
    return this.read(() => Object.fromEntries(leasedByType(this.db)));
  }

  async saveSubscription(params: { subscription: SubscriptionInput }): Promise<Subscription> {
    return this.writeOne(() => events.saveSubscription(this.db, params.subscription, this.nowText()));
  }

  async deleteSubscription(params: { event: string; taskType: string }): Promise<boolean> {
    return this.writeOne(() => events.deleteSubscription(this.db, params.event, params.taskType));
  }

  async listSubscriptions(params: { event?: string | null; taskType?: string | null }): Promise<Subscription[]> {
    return this.read(() => events.listSubscriptions(this.db, params.event ?? null, params.taskType ?? null));
  }

  async analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData> {
    return this.read(() => control.analysisData(this.db, params.taskType, params.since, params.sampleLimit, this.nowText()));
  }
}

guardStore(SqliteStore);
