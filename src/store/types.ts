/**
 * The Store: the only door to the database. Every dialect (SQLite, PostgreSQL,
 * MySQL/MariaDB) implements this contract and runs one conformance suite
 * (test/store/conformance.ts). A method takes one params object and returns
 * the project's own types, never a driver's rows.
 *
 * The contract is split by role, so that each caller names what it needs:
 * SchemaStore (lifecycle, migrations, clock), ProducerStore (submit, read),
 * WorkerStore (claim, leases, outcomes, sweep) and ControlStore (operator
 * actions, history, policies, cleanup). `Store` is all four. What a dialect
 * may or may not do well is stated in `capabilities`, never found by probing
 * for a method. `Tx` is the dialect's transaction handle for submits that
 * join a caller's transaction.
 *
 * Rules every implementation keeps (DESIGN.md §3; the shared rules are in rules/):
 * - time is the database clock (`now()`), never a worker's;
 * - every write about a leased task is fenced: `lease_owner = workerId AND
 *   attempt_count = attempt AND lease_token = token AND status` one of the
 *   leased statuses (rules/leases.ts fenceSql), and the affected-row count
 *   decides the answer;
 * - concurrency limits are invariants: counting leased rows and claiming are
 *   serialized so that no number of concurrent claimers can exceed them;
 * - a closed store answers every call with StoreClosedError (STORE_CLOSED), a
 *   database without the schema with SchemaMissingError (SCHEMA_NOT_MIGRATED).
 */
import type { PayloadCondition } from '../core/search.js';
import type { Scope } from '../core/scope.js';
import type { TaskStatus } from '../core/status.js';
import type { FailureRecord, Lease, NewTask, Task, TaskProgress } from '../core/task.js';
import type { TaskLogLevel, TaskLogLine } from '../core/logs.js';
import type { AttemptOutcomeName } from '../core/status.js';
import type { EdgeResolution, OnParentFailure } from './rules/flows.js';

export type { EdgeResolution, OnParentFailure } from './rules/flows.js';
import type { SequenceOnDeadLetter, SequenceSummary } from './rules/sequences.js';
export type { SequenceOnDeadLetter, SequenceSummary } from './rules/sequences.js';

export type { AttemptOutcomeName } from '../core/status.js';

export type Dialect = 'sqlite' | 'postgres' | 'mysql';

/** What a dialect does in one round trip or one transaction; callers choose their path by these, not by probing. */
export interface StoreCapabilities {
  /** finishAndClaim writes outcomes and claims in one round trip (else it is finishAttempts, then claimTasks). */
  readonly finishAndClaim: boolean;
  /** insertTasks accepts `transaction`: the submit joins the caller's transaction. */
  readonly transactionalSubmit: boolean;
  /**
   * finishAttempts accepts `transaction`: a handler's outcome commits (or rolls
   * back) with its own writes (`ctx.complete(tx)`). False on SQLite, whose
   * single writer cannot share a transaction with a handler's connection.
   */
  readonly transactionalComplete: boolean;
}

/** Lifecycle, schema and clock. */
export interface SchemaStore {
  readonly dialect: Dialect;
  readonly capabilities: StoreCapabilities;
  /** Creates or upgrades the schema; safe when several processes start at once. */
  migrate(): Promise<void>;
  /** Releases connections and listeners. Idempotent; every other call afterwards fails with STORE_CLOSED. */
  close(): Promise<void>;
  /** The database clock. */
  now(): Promise<Date>;
  /** The highest migration applied (0: none). Health compares it with `expectedSchemaVersion`. */
  schemaVersion(): Promise<number>;
  /** The migration this code expects. */
  readonly expectedSchemaVersion: number;
  /**
   * The database server's own limit on one payload (MySQL: max_allowed_packet
   * less room for the statement), read once; null where only the client's
   * maxPayloadBytes applies. A larger payload is refused with PAYLOAD_TOO_LARGE.
   */
  payloadLimit(): Promise<PayloadLimit | null>;
  /**
   * The database's plan for a claim of `taskType` (nothing is claimed): what shows that the claim reads the claim
   * index, not the table (diagnostics, and the fault suite's flood check).
   */
  explainClaim(params: { taskType: string }): Promise<ClaimPlan>;
  /**
   * The database's plan for a listTasks call (nothing is read): whether an operator's index on a hot payload
   * field serves a payload filter (docs/store.md, "Search by payload").
   */
  explainListTasks(params: ListTasksParams): Promise<ClaimPlan>;
}

/** A payload limit the database server sets, and what sets it (for messages). */
export interface PayloadLimit {
  bytes: number;
  source: string;
}

export interface ClaimPlan {
  /** The plan as the database prints it (PostgreSQL: auto_explain; MySQL: EXPLAIN rows as JSON; SQLite: EXPLAIN QUERY PLAN). */
  plan: string;
}

/** Submitting and reading tasks. */
export interface ProducerStore<Tx = unknown> {
  /**
   * Inserts tasks in one statement where the dialect allows. A task whose
   * (taskType, owner, idempotencyKey) exists already is not inserted: its
   * existing row comes back with `created: false`. Results keep input order.
   * With `transaction` (capabilities.transactionalSubmit; PostgreSQL: a pg
   * client inside BEGIN; MySQL: a mysql2 connection inside a transaction) the
   * insert joins the caller's transaction and is invisible to workers until it commits.
   */
  insertTasks(params: { tasks: readonly NewTask[]; transaction?: Tx }): Promise<InsertTaskResult[]>;
  /**
   * A flow (or tasks with parents) in one transaction: the tasks as insertTasks
   * inserts them (each with its flowId and pendingParents, the number of its
   * edges: BLOCKED while it has parents to wait for), then the edges of every
   * created child, then the settle of those edges whose parent has ended
   * already (rules/flows.ts). An edge may name a task that exists already as
   * its parent. A child that existed already (idempotency) gets no new edge.
   */
  insertFlow(params: { tasks: readonly NewTask[]; edges: readonly DependencyEdge[]; transaction?: Tx }): Promise<InsertTaskResult[]>;
  /** A task's edges both ways, each with the task at its other end (when in scope). */
  listDependencies(params: { taskId: string; scope: Scope }): Promise<TaskDependencies>;
  /** The tasks of a flow (in scope; at most `limit`, oldest first) and the edges between them. */
  getFlow(params: { flowId: string; scope: Scope; limit: number }): Promise<FlowGraph>;
  getTask(params: { id: string; scope: Scope }): Promise<Task | null>;
  /**
   * Wake-ups for a waiter on one task (client.waitFor): `listener` runs when
   * the task's outcome may have been written — spuriously too, the waiter
   * re-reads the row. Resolves once armed; the answer disarms. PostgreSQL:
   * NOTIFY from the outcome write, only for awaited tasks; SQLite: any
   * commit (the -wal file watch); MySQL: this process's writes only.
   */
  watchOutcome(params: { taskId: string; listener: () => void }): Promise<() => Promise<void>>;
  /** Newest first (id descending); `cursor` is the last id of the previous page. */
  listTasks(params: ListTasksParams): Promise<TaskPage>;
  countByStatus(params: { scope: Scope; taskType?: string | null }): Promise<Record<TaskStatus, number>>;
  /** How many tasks the filter matches (a bulk operation's dry run). */
  countTasks(params: TaskFilterParams): Promise<number>;
  /**
   * Fan-out by event: in one transaction, reads the subscriptions of `event`
   * (locking them: an unsubscribe waits for this publish to commit), hands
   * them to `build` (task type order) and inserts the tasks it returns
   * through the insertTasks path (idempotency keys, unique options, wake-ups).
   * A subscription added or removed concurrently is wholly in or wholly out.
   * `build` throwing aborts the publish, writing nothing. With `transaction`
   * (capabilities.transactionalSubmit) the publish joins the caller's
   * transaction, as insertTasks does.
   */
  publishEvent(params: PublishEventParams<Tx>): Promise<PublishEventResult>;
}

/** What a worker process calls. */
export interface WorkerStore<Tx = unknown> {
  /** Wake-ups for workers: submits (by type), requeues and cancellation requests. Returns unsubscribe. */
  subscribe(listener: StoreListener): () => void;
  /**
   * Leases up to `limit` claimable tasks of `taskTypes` for `workerId`:
   * status QUEUED or RETRY_WAIT, available_at ≤ now, deadline null or > now,
   * type not disabled by policy; order priority desc, available_at, create
   * time. Never more than the global and per-type limits allow (policy table
   * rows `GLOBAL` / `TYPE:<type>` override the defaults given here), counting
   * RUNNING and CANCEL_REQUESTED rows. Each claimed task: status RUNNING,
   * attempt_count + 1, lease_until = now + leaseMs, started_at set once, one
   * new attempt row.
   */
  claimTasks(params: ClaimParams): Promise<Task[]>;
  /** Renews every lease still held, in one statement; also reports cancel requests. */
  renewLeases(params: RenewParams): Promise<RenewResult>;
  /** Fenced progress write; false when the lease is lost. */
  saveProgress(params: { lease: Lease; progress: TaskProgress }): Promise<boolean>;
  /**
   * Writes the outcome of many attempts in as few statements as the dialect
   * allows; fenced; one boolean per outcome, and the dead letter each outcome
   * that ended FAILED made. With `transaction` (capabilities.transactionalComplete;
   * the same handles as insertTasks) the write joins the caller's transaction:
   * no retries, no commit, and it is undone if the caller rolls back.
   */
  finishAttempts(params: { outcomes: readonly AttemptOutcome[]; transaction?: Tx }): Promise<FinishResult>;
  /**
   * finishAttempts, then claimTasks; the claim counts the slots those outcomes
   * freed. With capabilities.finishAndClaim both travel in one transaction and
   * one round trip (worth using when limits bind); without, it is two calls.
   */
  finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult>;
  /**
   * A fan-out: the leased task ends its attempt waiting (BLOCKED, uncharged,
   * the lease gone) for `children`, which are inserted in the same transaction
   * with an edge each (child → this task, `onFailure`), in its flow (its own
   * id when it has none). When the last child ends, it is QUEUED and runs
   * again. Fenced: false (and nothing written) when the lease is lost. A
   * child that exists already (idempotency key) is waited for if it has not
   * ended; one that ended settles at once.
   */
  awaitChildren(params: { lease: Lease; children: readonly NewTask[]; onFailure: OnParentFailure }): Promise<AwaitChildrenResult>;
  /**
   * Hands back tasks that were leased but never started (a prefetch buffer
   * when its worker stops): QUEUED again, uncharged (attempt_base + 1; the
   * count only grows), their attempt row closed as RELEASED. Fenced; returns
   * how many; wakes workers.
   */
  releaseTasks(params: { leases: readonly Lease[] }): Promise<number>;
  /**
   * The sweep: expired RUNNING leases → QUEUED (attempts left; failure row
   * LEASE_EXPIRED) or FAILED + dead letter (spent); expired CANCEL_REQUESTED
   * → CANCELLED; due RETRY_WAIT → QUEUED; QUEUED / RETRY_WAIT past their
   * deadline → FAILED (DEADLINE_EXCEEDED) + dead letter. At most `batchSize`
   * rows of each kind; never touches a live lease.
   */
  recover(params: { batchSize: number }): Promise<RecoveryResult>;
  /**
   * Records a completed durable step (ctx.step) of the lease's task in its current
   * attempt cycle, fenced by the lease (and, like progress, an unexpired one):
   * false when the lease is gone, and nothing is written. Unique per (task,
   * cycle, name): a step already recorded under that name is kept as it was
   * (its first result wins) and the answer is true while the lease holds.
   */
  recordStep(params: { lease: Lease; name: string; resultJson: string | null }): Promise<boolean>;
  /**
   * A task's recorded steps, oldest first: earlier cycles' (`currentCycleOnly`
   * leaves them out), then the current cycle's (cycle 0). One read; no scope
   * check (callers read the task in scope first).
   */
  listSteps(params: { taskId: string; currentCycleOnly?: boolean }): Promise<StepRecord[]>;
  /**
   * Writes a batch of a handler's log lines (ctx.log, rules/logs.ts) for its attempt, fenced by the lease (with an
   * unexpired lease unless `final`: the attempt's end, as the outcome), then applies the bounds (oldest dropped, a
   * marker per attempt that lost lines). `bufferDropped`: lines the worker dropped before writing them. false: the
   * lease is gone and nothing was written.
   */
  appendTaskLogs(params: AppendTaskLogsParams): Promise<boolean>;
  /** A task's log lines, by seq (markers included); no scope check (callers read the task in scope first). */
  listTaskLogs(params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number }): Promise<TaskLogRecord[]>;
  /**
   * The start log of rate scopes (rules/rates.ts): starts in each scope's window (now − periodMs, now] of the
   * database clock, the oldest of them, and the clock read. For diagnose: one read per scope, no lock.
   */
  rateWindows(params: { scopes: readonly { scopeKey: string; periodMs: number }[] }): Promise<RateWindow[]>;
  /** Every row of the start log newer than now − withinMs (database clock), and the clock read: for the rate gauges. */
  listRateStarts(params: { withinMs: number }): Promise<{ now: Date; starts: { scopeKey: string; startedAt: Date }[] }>;
  /** Upserts this worker's row (last_seen_at = now): diagnostics tell which types have live workers. */
  registerWorker(params: { worker: WorkerRegistration }): Promise<void>;
  unregisterWorker(params: { workerId: string }): Promise<void>;
}

/** Operators: status changes, history, dead letters, policies, cleanup, diagnostics. */
export interface ControlStore {
  /**
   * Sequence keys (rules/sequences.ts): `key` one key (whatever it holds),
   * else the keys with tasks waiting (`blockedOnly`: those whose head is
   * dead-lettered or paused), in key order; scoped to the owner's tasks.
   */
  listSequences(params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): Promise<SequenceSummary[]>;
  /** The key's dead-lettered head stops holding it (it stays a dead letter, replayable); the next task runs. */
  skipSequenceHead(params: { key: string }): Promise<{ skipped: string | null; released: string[] }>;
  /**
   * The keys' first waiting tasks run where nothing holds their key any more — after a cleanup removed
   * a key's head (its end released nothing then): what it queued, by type.
   */
  releaseSequences(params: { keys: readonly string[] }): Promise<{ released: string[] }>;
  /** A key's policy for its dead-lettered head; SKIP behind one lets the next task run at once. */
  setSequencePolicy(params: { key: string; onDeadLetter: SequenceOnDeadLetter }): Promise<{ found: boolean; released: string[] }>;
  /**
   * Moves every task in `ids` that is in scope and in one of `from` to `to`,
   * atomically per task, with the column rules of rules/
   * (changeStatusAssignments). `availableAt` reschedules. Answers for every
   * id: whether this call changed it, and its status now (null when it does
   * not exist in scope).
   */
  changeStatus(params: ChangeStatusParams): Promise<ChangeStatusResult[]>;
  /**
   * An operator's edit of a waiting task (client.edit; rules/edits.ts): one conditional UPDATE of the columns in
   * `changes`, applied only while the task is in scope, in one of `from` and (with `expectUpdatedAt`) not changed
   * since that time (to the millisecond); its EDIT action row in the same transaction. Answers whether it changed
   * the task and its status now (null when it does not exist in scope).
   */
  editTask(params: EditTaskParams): Promise<ChangeStatusResult>;
  listAttempts(params: { taskId: string }): Promise<AttemptRecord[]>;
  /**
   * What operators did to a task (pause, resume, cancel, retry, reschedule, edit,
   * dead-letter replay and archive), who and when: newest first, at most
   * `limit` (default 100). Rows are written by changeStatus, replayDeadLetters
   * and archiveDeadLetters in their own transaction when given an actor;
   * worker transitions are on the attempts, not here.
   */
  listTaskActions(params: { taskId: string; limit?: number }): Promise<TaskActionRecord[]>;
  /** Newest first. */
  listFailures(params: { taskId: string; limit?: number }): Promise<FailureRow[]>;
  /** Newest first. */
  listDeadLetters(params: ListDeadLettersParams): Promise<DeadLetter[]>;
  /** Dead letters neither replayed nor archived (the queue an operator must look at). */
  countDeadLetters(params: { scope: Scope; taskType?: string | null }): Promise<number>;
  /**
   * Replays dead letters: the original task, if it is still FAILED, goes back
   * to QUEUED with a fresh attempt cycle (attempt_base = attempt_count,
   * available now, lease and finished_at cleared), and the dead letter is
   * marked replayed_at / replay_task_id. One answer per id, in input order.
   * With `actor`, each requeued task gets a REPLAY action in the same transaction.
   */
  replayDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<ReplayResult[]>;
  /**
   * Marks dead letters archived (out of the queue, kept for the record); returns how many changed.
   * With `actor`, each archived letter's task gets an ARCHIVE action in the same transaction.
   */
  archiveDeadLetters(params: { ids: readonly string[]; scope: Scope; actor?: Actor }): Promise<number>;
  /** Upserts a policy row (`GLOBAL` or `TYPE:<type>`); read by every claim. */
  savePolicy(params: { policy: PolicyInput }): Promise<Policy>;
  listPolicies(): Promise<Policy[]>;
  deletePolicy(params: { policyKey: string }): Promise<boolean>;
  /**
   * One batch of cleanup: up to `batchSize` terminal tasks finished before
   * `finishedBefore` are deleted with their attempts, failures and actions; their
   * dead letters are archived (kept) first. Safe while workers run: the
   * delete re-checks status and finished_at. PostgreSQL with
   * historyMoveAfterMs instead drops the history days wholly before the
   * cut-off (their rows count in `tasks`) and takes one batch of terminal
   * tasks finished before now − historyMoveAfterMs out of the task table:
   * moved into the history (tasksMoved), or deleted if past the cut-off. The
   * cleanup goes on while tasks + tasksMoved fill a batch.
   */
  purgeTerminalTasks(params: PurgeParams): Promise<PurgeResult>;
  /**
   * One batch of dead-letter cleanup (the seed's archiveAndClean): deletes up
   * to `batchSize` dead letters archived before `archivedBefore`; a dead
   * letter never archived is never deleted. Returns how many were deleted.
   */
  purgeDeadLetters(params: { archivedBefore: Date; batchSize: number }): Promise<number>;
  /** Workers seen within `seenWithinMs` of the database clock. */
  listWorkers(params: { seenWithinMs: number }): Promise<WorkerRecord[]>;
  /** RUNNING + CANCEL_REQUESTED rows per type (what the limits count). */
  leasedCounts(): Promise<Record<string, number>>;
  /** Raw material for analyze(): the client computes averages and percentiles. */
  analysisData(params: { taskType: string; since: Date; sampleLimit: number }): Promise<AnalysisData>;
  /** Creates or updates the subscription (event, taskType); a publish after the commit sees it. */
  saveSubscription(params: { subscription: SubscriptionInput }): Promise<Subscription>;
  /** Removes the subscription; false when there was none. Waits for publishes that read it to commit. */
  deleteSubscription(params: { event: string; taskType: string }): Promise<boolean>;
  /** Subscriptions by event, then task type; filtered by event and / or type when given. */
  listSubscriptions(params: { event?: string | null; taskType?: string | null }): Promise<Subscription[]>;
}

/** Every role: what a dialect implements. */
export interface Store<Tx = unknown> extends SchemaStore, ProducerStore<Tx>, WorkerStore<Tx>, ControlStore {}

export type StoreEvent = { kind: 'submitted'; taskTypes: readonly string[] } | { kind: 'cancelRequested'; taskIds: readonly string[] };
export type StoreListener = (event: StoreEvent) => void;

/** parent → child: the child waits for the parent's end; `onFailure` says what the parent's failure does to it. */
export interface DependencyEdge {
  parentId: string;
  childId: string;
  onFailure: OnParentFailure;
  /** Made by a fan-out (awaitChildren): the parent is a task the child made, and waits for. */
  fanOut?: boolean;
}

/** An edge with its state: null while the parent has not ended. */
export interface DependencyRecord extends DependencyEdge {
  resolution: EdgeResolution | null;
}

/** One end of a task's edge, with the task there (null when it is out of scope or purged). */
export interface DependencyLink extends DependencyRecord {
  task: Task | null;
}

export interface TaskDependencies {
  /** Edges into the task: what it waits for. */
  parents: DependencyLink[];
  /** Edges out of it: what waits for it. */
  children: DependencyLink[];
}

export interface FlowGraph {
  tasks: Task[];
  edges: DependencyRecord[];
  /** More tasks than `limit` belong to the flow. */
  truncated: boolean;
}

export interface AwaitChildrenResult {
  /** false: the lease was lost; nothing was written. */
  applied: boolean;
  children: InsertTaskResult[];
}

export interface InsertTaskResult {
  task: Task;
  /** false: an existing task with the same idempotency key was returned. */
  created: boolean;
}

/** A task type's subscription to an event (system_async_task_subscription). */
export interface SubscriptionInput {
  /** The event name (client/events.ts checks it: no ':'). */
  event: string;
  taskType: string;
  /** Priority of the tasks a publish creates; null: the type's definition's, else 0. */
  priority: number | null;
  /** maxAttempts of those tasks; null: as a submit's (policy, definition, the client's default). */
  maxAttempts: number | null;
}

export interface Subscription extends SubscriptionInput {
  createdAt: Date;
  updatedAt: Date;
}

export interface PublishEventParams<Tx = unknown> {
  event: string;
  /** Called inside the publish's transaction with the event's subscriptions; returns the tasks to insert. */
  build: (subscriptions: readonly Subscription[]) => readonly NewTask[];
  transaction?: Tx;
}

export interface PublishEventResult {
  /** The subscriptions the publish read. */
  subscriptions: Subscription[];
  /** One per task `build` returned, in its order. */
  results: InsertTaskResult[];
}

/** Which tasks: every term ANDed (a listing's, a count's, a bulk operation's page). */
export interface TaskFilterParams {
  scope: Scope;
  taskType?: string | null;
  status?: readonly TaskStatus[] | null;
  owner?: string | null;
  /** Exact match on the idempotency key (any task type). */
  idempotencyKey?: string | null;
  /** Idempotency keys starting with this text (case-sensitive; % and _ are plain characters). */
  idempotencyKeyPrefix?: string | null;
  /** Payload field filters (core/search.ts validated them), ANDed. */
  payload?: readonly PayloadCondition[] | null;
  /** The last failure's error code (last_error_code). */
  errorCode?: string | null;
  /** Only these ids (at most 1000). */
  ids?: readonly string[] | null;
  /** Ids at or above this one (UUIDv7: created at or after its millisecond; time-window.ts). */
  idAtLeast?: string | null;
  /** Ids below this one. */
  idBelow?: string | null;
}

export interface ListTasksParams extends TaskFilterParams {
  limit: number;
  /** Ids below this one (newest first). */
  cursor?: string | null;
}

export interface TaskPage {
  tasks: Task[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export interface ChangeStatusParams {
  ids: readonly string[];
  scope: Scope;
  from: readonly TaskStatus[];
  to: TaskStatus;
  availableAt?: Date | null;
  newCycle?: boolean;
  /**
   * The operator's action this change is: one action row per task it changed,
   * written in the same transaction (none for a task it did not change).
   * Absent: nothing is recorded. The client always gives one.
   */
  record?: ActionRecordInput;
}

/** The columns an edit sets (rules/edits.ts); a key left out keeps its value. The client checked every value. */
export interface TaskEdit {
  /** The payload as stored (encoded by the client's middleware). */
  payloadJson?: string;
  priority?: number;
  availableAt?: Date;
  /** null: no deadline any more. */
  deadlineAt?: Date | null;
  maxAttempts?: number;
}

export interface EditTaskParams {
  id: string;
  scope: Scope;
  /** The statuses in which the edit applies (rules/edits.ts EDITABLE_STATUSES). */
  from: readonly TaskStatus[];
  changes: TaskEdit;
  /** Applies only if the task's update_time is still this (to the millisecond): no silent overwrite of another edit. */
  expectUpdatedAt?: Date | null;
  /** The EDIT action row (its detail: the fields changed, never their values). */
  record: ActionRecordInput;
}

/** The operator actions a task's history records (system_async_task_action.action). */
export type TaskActionName = 'PAUSE' | 'RESUME' | 'CANCEL' | 'RETRY' | 'RESCHEDULE' | 'EDIT' | 'REPLAY' | 'ARCHIVE';

/** Who acted. */
export interface Actor {
  /** Stable identity: `token:<id>`, `jwt:<subject>`, `cli:<os user>`, `library` (or what a library caller names). */
  id: string;
  /** What operators recognize when the identity is an opaque id (a token's name: `token:ops-laptop`); null: the id says it. */
  name?: string | null;
}

export interface ActionRecordInput {
  action: TaskActionName;
  actor: Actor;
  /**
   * RESCHEDULE: the new start time (ISO 8601); EDIT: the fields changed, comma-separated (rules/edits.ts);
   * REPLAY / ARCHIVE: the dead letter's id (the store fills it in).
   */
  detail?: string | null;
}

export interface TaskActionRecord {
  taskId: string;
  action: TaskActionName;
  /** The task's status before and after; null for ARCHIVE, which does not change the task. */
  fromStatus: TaskStatus | null;
  toStatus: TaskStatus | null;
  actor: string;
  actorName: string | null;
  detail: string | null;
  /** The database clock, as the change's own time. */
  at: Date;
}

export interface ChangeStatusResult {
  id: string;
  applied: boolean;
  status: TaskStatus | null;
}

/**
 * Called when a worker's lease statement is put on a connection — after any
 * wait for one (or, on SQLite, for the write lock) — the earliest moment the
 * database can grant or renew the leases it carries. The worker counts its
 * local lease deadline from the last call (DESIGN §3): a statement that
 * waited behind others of its own process must not eat the lease it is
 * about to get. A transaction retried as a whole calls it again.
 *
 * A store that learns from the answer how long the statement waited on the
 * server before it could grant (MySQL: the claim lock, measured by the
 * server's clock) calls it once more with that wait: the grant cannot
 * precede the last send plus that wait (worker/send-anchor.ts).
 */
export type OnSent = (serverWaitMs?: number) => void;

export interface RenewParams {
  leases: readonly Lease[];
  leaseMs: number;
  onSent?: OnSent;
  /**
   * The renewal's commit must be on disk before it answers (ctx.fence, worker/fence.ts): on PostgreSQL its
   * transaction commits with synchronous_commit on whatever the session's setting (raised from off or local), which
   * also flushes the claim it confirms (a claim commits without waiting for its flush: postgres/claim.ts); on SQLite
   * with synchronous = FULL for that one transaction (the store runs NORMAL); on MySQL a commit is durable already
   * (innodb_flush_log_at_trx_commit = 1, the default). A renewal that changes no row writes nothing to flush.
   */
  durable?: boolean;
}

export interface ClaimParams {
  /** See OnSent; for finishAndClaim, the moment the combined statement is put on a connection. */
  onSent?: OnSent;
  workerId: string;
  taskTypes: readonly string[];
  limit: number;
  leaseMs: number;
  /** Cluster-wide cap on leased tasks unless a GLOBAL policy row says otherwise. */
  globalConcurrency: number;
  /** Per-type cap unless a TYPE:<type> policy row says otherwise. */
  typeConcurrency: number;
  /**
   * Share each binding type limit fairly among the workers of the type seen
   * in the registry within this many ms (rules/fairness.ts); absent: no sharing.
   */
  liveWithinMs?: number;
  /** Per-owner cap unless an OWNER:<owner> policy row says otherwise; absent or null: owners are unlimited. */
  ownerConcurrency?: number | null;
  /** Take claimable rows round robin across owners even when no owner limit exists. */
  fairOwners?: boolean;
}

export interface FinishResult {
  /** One boolean per outcome, in input order: whether its fenced write applied (false: the lease is gone). */
  applied: boolean[];
  /** The types of flow children these outcomes queued (their last parent ended): the workers to wake. Absent: none. */
  released?: string[];
  /**
   * The dead letter of each applied outcome that left its task FAILED (a FAILED
   * outcome on a task with a cancel request ends CANCELLED and makes none).
   * Empty on the common path: only failures for good carry an entry.
   */
  deadLetters: DeadLetterRef[];
}

export interface DeadLetterRef {
  taskId: string;
  deadLetterId: string;
}

export interface FinishAndClaimResult extends FinishResult {
  /** As claimTasks answers. */
  claimed: Task[];
}

export interface RenewResult {
  /** Leases renewed (status RUNNING). */
  renewed: string[];
  /** Leases renewed whose task has a cancellation request. */
  cancelRequested: string[];
  /** Every other lease asked about: it is gone (expired and reclaimed, finished, …). */
  lost: string[];
}

export type AttemptOutcome =
  /** `resultJson`: the result as JSON text, serialized once where the outcome is built (null: none). */
  | { kind: 'SUCCESS' | 'PARTIAL_SUCCESS'; lease: Lease; artifactId: string | null; resultJson: string | null; progress: TaskProgress | null }
  /** Failed, will run again after `retryDelayMs` of the database clock. */
  | { kind: 'RETRY'; lease: Lease; failure: FailureRecord; retryDelayMs: number; progress: TaskProgress | null }
  /** Failed for good: FAILED, plus a dead letter holding the payload. */
  | { kind: 'FAILED'; lease: Lease; failure: FailureRecord; progress: TaskProgress | null }
  | { kind: 'CANCELLED'; lease: Lease; progress: TaskProgress | null }
  /** Started but handed back by a stopping worker: QUEUED again; a hand-back is not a failure and spends no attempt. */
  | { kind: 'RELEASED'; lease: Lease; progress: TaskProgress | null }
  /**
   * The handler asked to run again after `delayMs` of the database clock: QUEUED then, no attempt spent. `children`:
   * the worker's report of a fan-out that store.awaitChildren wrote, with the children it created (never given to finishAttempts).
   */
  | { kind: 'SNOOZED'; lease: Lease; delayMs: number; progress: TaskProgress | null; children?: readonly Task[] };

export interface RecoveryResult {
  requeued: number;
  failed: number;
  cancelled: number;
  retriesDue: number;
  deadlineExpired: number;
}

export interface AttemptRecord {
  taskId: string;
  attempt: number;
  workerId: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** null while running. */
  outcome: AttemptOutcomeName | null;
  errorCode: string | null;
}

/** A durable step a handler completed (ctx.step), as stored in system_async_task_step. */
export interface StepRecord {
  taskId: string;
  name: string;
  /**
   * 0: the task's current attempt cycle (what ctx.step replays). An earlier cycle's
   * steps (before an operator's retry or a dead-letter replay) carry the attempt
   * count that cycle ended at, and are never replayed.
   */
  cycle: number;
  /** Its place in its cycle: 1, 2, … in the order recorded. */
  seq: number;
  /** The step's result as JSON text; null when fn returned undefined. */
  resultJson: string | null;
  /** The attempt that ran and recorded it. */
  attempt: number;
  workerId: string;
  /** The database clock. */
  recordedAt: Date;
}

export interface AppendTaskLogsParams {
  lease: Lease;
  lines: readonly TaskLogLine[];
  bufferDropped: number;
  final: boolean;
  maxLinesPerAttempt: number;
  maxLinesPerTask: number;
}

/** A line a handler logged (ctx.log), as stored in system_async_task_log. */
export interface TaskLogRecord {
  taskId: string;
  /** Its place in the task's log (1, 2, … across attempts). */
  seq: number;
  attempt: number;
  level: TaskLogLevel;
  message: string;
  /** The redacted fields as JSON text; null when none. */
  fieldsJson: string | null;
  /** > 0: a marker standing for that many older lines of its attempt that the bounds dropped. */
  dropped: number;
  /** The worker's wall clock at the ctx.log call. */
  loggedAt: Date;
}

export interface FailureRow extends FailureRecord {
  id: string;
  taskId: string;
  attempt: number;
  failedAt: Date;
}

export interface ListDeadLettersParams {
  scope: Scope;
  taskType?: string | null;
  /** Only the dead letters of these tasks (at most 1000). */
  taskIds?: readonly string[] | null;
  /** Only those neither replayed nor archived. */
  pendingOnly?: boolean;
  movedAfter?: Date | null;
  movedBefore?: Date | null;
  limit: number;
  cursor?: string | null;
}

export interface DeadLetter {
  id: string;
  originalTaskId: string;
  taskType: string;
  owner: string | null;
  payload: unknown;
  errorCode: string;
  errorMessage: string;
  traceId: string | null;
  attemptCount: number;
  movedAt: Date;
  replayedAt: Date | null;
  replayTaskId: string | null;
  archivedAt: Date | null;
}

export interface ReplayResult {
  id: string;
  /** REPLAYED, or why not: NOT_FOUND (in scope), ALREADY_REPLAYED, ARCHIVED, TASK_NOT_FAILED, TASK_MISSING. */
  outcome: 'REPLAYED' | 'NOT_FOUND' | 'ALREADY_REPLAYED' | 'ARCHIVED' | 'TASK_NOT_FAILED' | 'TASK_MISSING';
  taskId: string | null;
}

/** A rate scope's window as the start log holds it (Store.rateWindows). */
export interface RateWindow {
  scopeKey: string;
  /** Starts in (now − period, now]. */
  used: number;
  /** The oldest of them: the next slot opens one period after it. null: none. */
  oldestStartAt: Date | null;
  /** The database clock the window was read at. */
  now: Date;
}

export interface PolicyInput {
  /** `GLOBAL` or `TYPE:<task_type>`. */
  policyKey: string;
  taskType: string | null;
  /** null: the worker's default. */
  maxConcurrency: number | null;
  /** null: the submit's or definition's. Applies to tasks submitted after the change. */
  maxAttempts: number | null;
  /** null: the worker's retry.baseDelayMs. Applies to the next retry decision. */
  retryBaseDelayMs: number | null;
  /** false: tasks of the type (or all, for GLOBAL) are not claimed; they wait. */
  enabled: boolean;
  /** At most this many starts (claims) per ratePeriodMs in the policy's scope (rules/rates.ts); null: no rate limit. */
  rateLimit?: number | null;
  /** The rate's period in ms; set with rateLimit, null without it. */
  ratePeriodMs?: number | null;
}

export interface Policy extends PolicyInput {
  updatedAt: Date;
}

export interface PurgeParams {
  /** Terminal tasks that finished before this. */
  finishedBefore: Date;
  batchSize: number;
  /** Only these of them (a bulk delete), in this scope. */
  ids?: readonly string[] | null;
  scope?: Scope;
}

export interface PurgeResult {
  /** Deleted for good: rows of the task table, or (partitioned history) the rows of the days dropped. */
  tasks: number;
  attempts: number;
  failures: number;
  deadLettersArchived: number;
  /** PostgreSQL with historyMoveAfterMs: tasks moved from the task table to the partitioned history. */
  tasksMoved?: number;
  /** PostgreSQL with historyMoveAfterMs: day partitions dropped (each of the four history tables counts). */
  historyPartitionsDropped?: number;
}

export interface WorkerRegistration {
  workerId: string;
  host: string;
  pid: number;
  taskTypes: readonly string[];
  concurrency: number;
}

export interface WorkerRecord extends WorkerRegistration {
  startedAt: Date;
  lastSeenAt: Date;
}

export interface AnalysisData {
  /** Tasks of the type created since. */
  statusCounts: Record<TaskStatus, number>;
  /** Finished attempts started since (newest first, at most sampleLimit); `taskAvailableAt`: the task's available_at now. */
  attempts: { startedAt: Date; finishedAt: Date; taskCreatedAt: Date; taskAvailableAt: Date; attempt: number }[];
  /** Failures since, every code, most frequent first. */
  failureCounts: { errorCode: string; count: number }[];
  /** The oldest QUEUED task of the type that is due (available_at ≤ now), whenever it was created: since when it waits. */
  oldestWaitingSince: Date | null;
}
