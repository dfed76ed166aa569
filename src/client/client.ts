/**
 * The public API for producers and operators. Every read and operation takes
 * a scope (default global, for operators); an owner scope sees and touches
 * only its own tasks, and another owner's task answers as not found.
 * The HTTP server and the CLI are thin layers over this class.
 */
import { SequenceApi } from './sequences.js';
import { InvalidTransitionError, NotFoundError, ValidationError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { CANCELLABLE_AT_ONCE, isTerminal, type TaskStatus } from '../core/status.js';
import type { NewTask, Task } from '../core/task.js';
import { checkInteger, checkKnownKeys } from '../core/validate.js';
import { InvalidOptionsError } from '../core/errors.js';
import { Emitter } from '../core/emitter.js';
import type {
  ActionRecordInput,
  AttemptRecord,
  FailureRow,
  InsertTaskResult,
  OnParentFailure,
  Store,
  TaskDependencies,
  TaskActionName,
  TaskActionRecord,
  TaskPage,
  WorkerRecord,
} from '../store/types.js';
import { checkActor, LIBRARY_ACTOR, type Actor, type ActorOption } from './actors.js';
import { analyze, type Analysis } from './analyze.js';
import { cleanup, type CleanupResult, type CleanupOptions } from './cleanup.js';
import { readHistory, type HistoryQuery, type HistorySeries } from './queue-history.js';
import { checkIds, DeadLetterApi } from './dead-letters.js';
import { diagnose, type Diagnosis } from './diagnose.js';
import { taskStepOf, type TaskStep } from './steps.js';
import { checkLogReadOptions, taskLogEntryOf, type LogReadOptions, type TaskLogEntry } from './logs.js';
import { GLOBAL_POLICY_KEY, PolicyApi, typePolicyKey } from './policies.js';
import { registryOf, type AnyTaskDefinition, type TaskDefinition } from '../core/definition.js';
import { cutPage, windowCursor } from './time-window.js';
import { checkTaskFilter, type TaskFilter } from './task-filter.js';
import { BulkApi } from './bulk.js';
import { cancelIds, type CancelManyResult } from './cancel.js';
import { clusterStats, type ClusterStats } from './stats.js';
import { TokenApi } from './tokens.js';
import { ScheduleApi } from './schedules.js';
import { AdaptiveApi } from './adaptive.js';
import type { LimitChangeKind } from '../core/adaptive.js';
import { estimateTask, type EstimateOptions, type TaskEstimate } from './estimate.js';
import { waitForTask, type WaitOptions } from './wait.js';
import { startSubmitSpan } from '../observe/tracing.js';
import { checkChanges, editOf, editRefusal, EDITABLE_STATUSES, expectedUpdate, type TaskChanges } from './edit.js';
import { editDetail } from '../store/rules/edits.js';
import { checkOptionalString, prepareTask, type SubmitLimits, type SubmitOptions, type SubmitRequest } from './submit.js';
import { MiddlewareStack, type Middleware, type SubmitVia } from './middleware.js';
import { checkFlowId, flowTasks, MAX_FLOW_NODES, planFlow, readFlow, submission, type Flow, type FlowRequest, type FlowSubmission } from './flows.js';
import {
  checkEventName,
  normalizeSubscription,
  publishEvent,
  PUBLISH_OPTION_KEYS,
  type PublishOptions,
  type PublishResult,
  type SubscribeInput,
  type Subscription,
} from './events.js';

export interface ClientOptions {
  store: Store;
  /** Definitions of the types this client may submit (their schemas check payloads). */
  tasks: readonly AnyTaskDefinition[];
  /** Largest payload, as UTF-8 JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** maxAttempts for tasks whose definition, policy and submit give none (seed: 3). */
  defaultMaxAttempts?: number;
  /** The workers' default limits, for diagnose() (policy rows override them). Default 20 / 5, as the worker's. */
  globalConcurrency?: number;
  typeConcurrency?: number;
  /** Who this client's operator actions (pause, cancel, retry, replay…) are recorded as, unless a call says. Default `library`. */
  actor?: Actor | string;
  /** The wall clock submits check a deadline against (already past?); the test kit (tasklease/testing) passes its own. Default Date.now. */
  clock?: () => number;
  /**
   * How long a bulk operation's lease lasts without a batch saved (client.bulk): after a crash, another process
   * resumes the operation this long after its last batch. 1 s – 10 min; default 30 s.
   */
  bulkLeaseMs?: number;
  /** Middleware around submits, and the encoding of what is stored (middleware.ts); more with use(). */
  middleware?: readonly Middleware[];
}

export interface ScopeOption {
  scope?: Scope;
}

/** An operator action's options: whose tasks (scope) and who acts (recorded in the task's action history). */
export interface ActionOptions extends ScopeOption, ActorOption {}

/** An edit's options: an action's, and optionally the task's updatedAt as the caller read it (no silent overwrite). */
export interface EditOptions extends ActionOptions {
  expect?: { updatedAt: Date };
}

export interface ListOptions extends ScopeOption, TaskFilter {
  /** 1–1000. Default 50. */
  limit?: number;
  cursor?: string;
}

export type CancelOutcome = 'CANCELLED' | 'CANCEL_REQUESTED';

export type { CancelManyResult };

export interface SubmitManyOptions {
  transaction?: unknown;
}

/** A submit that waits for tasks that exist: their ids, and what their failure does to it (default CANCEL). */
export interface DependsOnOptions extends ScopeOption {
  dependsOn?: readonly string[];
  onParentFailure?: OnParentFailure;
}

function transactionOf(options: SubmitManyOptions): { transaction?: unknown } {
  return options.transaction === undefined ? {} : { transaction: options.transaction };
}

/** What pause takes: a waiting task, a flow's blocked node included. */
const PAUSABLE: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT', 'BLOCKED'];

const MAX_BATCH = 50_000;
/** How long a read of the policies serves submits without a new read (see policyMaxAttempts). */
const POLICY_FRESH_MS = 1000;

/** What a client tells its observers (metrics, logs). */
export interface ClientEvents {
  /** Tasks newly created by a submit (idempotent repeats are not included). */
  submitted: { tasks: Task[] };
  /**
   * A publish (client.publish): its event, whether any type subscribes to it, and the tasks it created
   * (idempotent repeats excluded; they are in `submitted` too).
   */
  published: { event: string; subscribed: boolean; created: Task[] };
  /** An operator changed an adaptive type's limit or its state (client.adaptive, or a policy write that overrides it). */
  limitChanged: { taskType: string; kind: LimitChangeKind };
}

export class TaskLeaseClient extends Emitter<ClientEvents> {
  readonly store: Store;
  private readonly registry: Map<string, AnyTaskDefinition>;
  private readonly limits: SubmitLimits;
  private readonly defaultLimits: { globalConcurrency: number; typeConcurrency: number };
  /** Runtime policies: limits, attempts, backoff, enabled — per type or global. */
  readonly policies: PolicyApi;
  /** The dead-letter queue: list, size, replay, archive. */
  readonly deadLetters: DeadLetterApi;
  /** API tokens of the HTTP server: create (secret shown once), list, revoke, verify. */
  readonly tokens: TokenApi;
  /** Periodic tasks: cron schedules with their next runs; save, enable / disable, delete. */
  readonly schedules: ScheduleApi;
  /** Sequence keys: which wait and for what, skipping a dead-lettered head, a key's dead-letter policy. */
  readonly sequences: SequenceApi;
  /** Adaptive limits: per type, the limit follows the failure rate within bounds; set, show, off, override, resume, history. */
  readonly adaptive: AdaptiveApi;
  /** Who this client's operator actions are recorded as when a call names nobody. */
  readonly actor: Actor;
  /** Bulk operations by filter: dry run, start (background batches), progress, cancel, resume after a restart. */
  readonly bulk: BulkApi;

  constructor(options: ClientOptions) {
    super();
    checkKnownKeys('Client', options, [
      'store',
      'tasks',
      'maxPayloadBytes',
      'defaultMaxAttempts',
      'globalConcurrency',
      'typeConcurrency',
      'actor',
      'middleware',
      'clock',
      'bulkLeaseMs',
    ]);
    if (!options.store || typeof options.store.insertTasks !== 'function') throw new InvalidOptionsError('Client', 'store', 'must be a Store');
    this.store = options.store;
    this.registry = registryOf(options.tasks ?? []);
    if (options.clock !== undefined && typeof options.clock !== 'function')
      throw new InvalidOptionsError('Client', 'clock', 'must be a function returning milliseconds');
    this.limits = {
      maxPayloadBytes: options.maxPayloadBytes ?? 1024 * 1024,
      defaultMaxAttempts: options.defaultMaxAttempts ?? 3,
      ...(options.clock ? { now: options.clock } : {}),
    };
    checkInteger('Client', 'maxPayloadBytes', this.limits.maxPayloadBytes, { min: 2, max: 64 * 1024 * 1024 });
    checkInteger('Client', 'defaultMaxAttempts', this.limits.defaultMaxAttempts, { min: 1, max: 100 });
    this.defaultLimits = { globalConcurrency: options.globalConcurrency ?? 20, typeConcurrency: options.typeConcurrency ?? 5 };
    checkInteger('Client', 'globalConcurrency', this.defaultLimits.globalConcurrency, { min: 1 });
    checkInteger('Client', 'typeConcurrency', this.defaultLimits.typeConcurrency, { min: 1 });
    this.actor = options.actor === undefined ? LIBRARY_ACTOR : checkActor(options.actor, 'Client');
    this.adaptive = new AdaptiveApi(this.store, this.actor, (taskType, kind) => this.emit('limitChanged', { taskType, kind }));
    this.policies = new PolicyApi(this.store, this.adaptive);
    this.deadLetters = new DeadLetterApi(this.store, this.actor);
    this.tokens = new TokenApi(this.store);
    this.schedules = new ScheduleApi(this.store);
    this.sequences = new SequenceApi(this.store);
    checkInteger('Client', 'bulkLeaseMs', options.bulkLeaseMs ?? 30_000, { min: 1000, max: 600_000 });
    this.bulk = new BulkApi(this.store, this.actor, options.bulkLeaseMs ?? 30_000);
    if (options.middleware !== undefined && !Array.isArray(options.middleware)) throw new InvalidOptionsError('Client', 'middleware', 'must be an array');
    for (const middleware of options.middleware ?? []) this.use(middleware);
  }

  private readonly middleware = new MiddlewareStack();

  /**
   * Adds a middleware (middleware.ts): the first added is the outermost. Its `submit` wraps submit, submitMany and
   * submitFlow; its `encode` rewrites every payload this client writes (publishes included).
   */
  use(middleware: Middleware): this {
    this.middleware.add(middleware);
    if (this.middleware.hasCodec) this.limits.encode = (taskType, payload) => this.middleware.encode('payload', taskType, payload);
    return this;
  }

  /** The task with its payload and result decoded by this client's middleware (an encrypted payload read back). */
  reveal(task: Task): Task {
    return this.middleware.reveal(task);
  }

  /**
   * Submits one task. Resolves once it has committed (or, with `transaction`, once it is in the caller's transaction).
   * With `dependsOn` (ids of existing tasks) it waits (BLOCKED) until they have ended, in their flow (flows.ts).
   */
  async submit<P>(type: TaskDefinition<P> | string, payload: P, options: SubmitOptions & SubmitManyOptions & DependsOnOptions = {}): Promise<InsertTaskResult> {
    const { transaction, dependsOn, onParentFailure, scope, ...rest } = options;
    const request = { ...rest, type: typeof type === 'string' ? type : type.type, payload };
    if (dependsOn === undefined) {
      const [result] = await this.submitMany([request], { transaction });
      return result!;
    }
    if (!Array.isArray(dependsOn) || dependsOn.length === 0) throw new ValidationError('dependsOn must be a non-empty array of task ids', 'dependsOn');
    const parents = dependsOn.map((id) => ({ taskId: checkFlowId(id, 'dependsOn'), ...(onParentFailure === undefined ? {} : { onParentFailure }) }));
    // It joins its first parent's flow (flowTasks).
    const flow = await this.submitFlow({ nodes: [{ ...request, key: 'task', dependsOn: parents }] }, { transaction, scope });
    return { task: flow.tasks.task!, created: flow.created > 0 };
  }

  /** Submits many tasks in one statement; if any is invalid, none is written. */
  async submitMany(requests: readonly SubmitRequest[], options: SubmitManyOptions = {}): Promise<InsertTaskResult[]> {
    if (!Array.isArray(requests)) throw new ValidationError('submitMany takes an array of requests', 'requests');
    if (requests.length > MAX_BATCH) throw new ValidationError(`a batch holds at most ${MAX_BATCH} tasks, got ${requests.length}`, 'requests');
    checkKnownKeys('submitMany', options, ['transaction']);
    if (requests.length === 0) return [];
    const label = (i: number): string => (requests.length > 1 ? `task #${i}` : 'task');
    return this.through('submit', requests, label, (tasks) =>
      this.inserted(tasks, (traced) => this.store.insertTasks({ tasks: traced, ...transactionOf(options) })),
    );
  }

  /**
   * The requests checked and made tasks for `write`; with submit middleware, the schemas see the requests as given,
   * the middleware sees them checked, and what it passes on is checked again (all but the schema) before the write.
   */
  private async through(
    via: SubmitVia,
    requests: readonly SubmitRequest[],
    label: (index: number) => string,
    write: (tasks: NewTask[]) => Promise<InsertTaskResult[]>,
  ): Promise<InsertTaskResult[]> {
    if (!this.middleware.hasSubmit) return write(await this.prepare(requests, label));
    await this.prepare(requests, label);
    return this.middleware.runSubmit({ requests, via }, async (passed) => write(await this.prepare(passed, label, false)));
  }

  /**
   * Submits a flow: every node a task, every dependsOn an edge, in one
   * transaction (all or nothing; a cycle or an unknown key is refused before
   * anything is written). A node with parents waits (BLOCKED, holding no slot
   * and counted by no limit) and is QUEUED in the transaction that commits its
   * last parent's end; a parent's failure cancels it (CANCEL, the default) or
   * not (CONTINUE). Nodes with idempotency keys make the flow idempotent.
   */
  async submitFlow(request: FlowRequest, options: SubmitManyOptions & ScopeOption = {}): Promise<FlowSubmission> {
    checkKnownKeys('submitFlow', options, ['transaction', 'scope']);
    const plan = planFlow(request);
    const results = await this.through(
      'flow',
      plan.requests,
      (i) => `flow node ${request.nodes[i]!.key}`,
      async (prepared) => {
        const { tasks, edges } = await flowTasks(this.store, plan, prepared, options.scope ?? Scope.global());
        return this.inserted(tasks, (traced) => this.store.insertFlow({ tasks: traced, edges, ...transactionOf(options) }));
      },
    );
    return submission(plan, request.nodes, results);
  }

  /** A flow's tasks (at most `limit`, default 1000, oldest first), its edges and a count per status; NOT_FOUND when none is in scope. */
  flow(flowId: string, options: ScopeOption & { limit?: number } = {}): Promise<Flow> {
    const limit = options.limit ?? 1000;
    checkInteger('flow', 'limit', limit, { min: 1, max: MAX_FLOW_NODES });
    return readFlow(this.store, flowId, options.scope ?? Scope.global(), limit);
  }

  /** What a task waits for (parents) and what waits for it (children), each with its task. */
  async dependencies(id: string, options: ScopeOption = {}): Promise<TaskDependencies> {
    await this.require(id, options);
    return this.store.listDependencies({ taskId: id, scope: options.scope ?? Scope.global() });
  }

  /** Cancels every node of a flow that has not ended: waiting ones at once, running ones by request. */
  async cancelFlow(flowId: string, options: ActionOptions = {}): Promise<CancelManyResult> {
    const ids = await this.flowIds(flowId, options, (t) => !isTerminal(t.status));
    const result: CancelManyResult = { cancelled: 0, cancelRequested: 0, notCancelled: [] };
    for (let i = 0; i < ids.length; i += 1000) {
      const part = await this.cancelMany(ids.slice(i, i + 1000), options);
      result.cancelled += part.cancelled;
      result.cancelRequested += part.cancelRequested;
      result.notCancelled.push(...part.notCancelled);
    }
    return result;
  }

  /** Holds every waiting node of a flow (QUEUED, RETRY_WAIT, BLOCKED) until resumeFlow; returns how many it paused. */
  async pauseFlow(flowId: string, options: ActionOptions = {}): Promise<number> {
    return this.changeFlow(flowId, options, PAUSABLE, 'PAUSED', this.record('PAUSE', options));
  }

  /** Resumes a flow's paused nodes (a node whose parents have not ended waits for them again); returns how many. */
  async resumeFlow(flowId: string, options: ActionOptions = {}): Promise<number> {
    return this.changeFlow(flowId, options, ['PAUSED'], 'QUEUED', this.record('RESUME', options));
  }

  /**
   * Retries a flow's FAILED nodes with a fresh attempt cycle; the nodes their
   * failure cancelled wait for them again (BLOCKED). Returns how many nodes it retried.
   */
  async retryFlow(flowId: string, options: ActionOptions = {}): Promise<number> {
    return this.changeFlow(flowId, options, ['FAILED'], 'QUEUED', this.record('RETRY', options), { newCycle: true, availableAt: await this.store.now() });
  }

  private async changeFlow(
    flowId: string,
    options: ActionOptions,
    from: readonly TaskStatus[],
    to: TaskStatus,
    record: ActionRecordInput,
    extra: { newCycle?: boolean; availableAt?: Date } = {},
  ): Promise<number> {
    const ids = await this.flowIds(flowId, options, (t) => from.includes(t.status));
    let changed = 0;
    for (let i = 0; i < ids.length; i += 1000) {
      const results = await this.store.changeStatus({ ids: ids.slice(i, i + 1000), scope: options.scope ?? Scope.global(), from, to, record, ...extra });
      changed += results.filter((r) => r.applied).length;
    }
    return changed;
  }

  private async flowIds(flowId: string, options: ScopeOption, keep: (task: Task) => boolean): Promise<string[]> {
    const flow = await readFlow(this.store, flowId, options.scope ?? Scope.global(), MAX_FLOW_NODES);
    return flow.tasks.filter(keep).map((t) => t.id);
  }

  /** Every request checked and made a NewTask (schemas may validate asynchronously); nothing is written. */
  private async prepare(requests: readonly SubmitRequest[], label: (index: number) => string, checkSchema = true): Promise<NewTask[]> {
    const policies = requests.some((r) => r?.maxAttempts === undefined) ? await this.policyMaxAttempts() : undefined;
    const limits = { ...this.limits, ...(policies ? { policyMaxAttempts: policies } : {}) };
    const prepared: (NewTask | Promise<NewTask>)[] = [];
    try {
      requests.forEach((request, index) => prepared.push(prepareTask(request, this.registry, limits, label(index), checkSchema)));
    } catch (error) {
      // The batch is rejected: schema checks already started must not end as unhandled rejections.
      for (const task of prepared) if (task instanceof Promise) task.catch(() => undefined);
      throw error;
    }
    return prepared.some((task) => task instanceof Promise) ? await Promise.all(prepared) : (prepared as NewTask[]);
  }

  /** The insert under a submit span, and the `submitted` event for what it created. */
  private async inserted(tasks: NewTask[], insert: (tasks: NewTask[]) => Promise<InsertTaskResult[]>): Promise<InsertTaskResult[]> {
    const trace = startSubmitSpan(tasks);
    if (trace?.traceParent) for (const task of tasks) task.traceParent = trace.traceParent;
    let results: InsertTaskResult[];
    try {
      results = await insert(tasks);
    } catch (error) {
      trace?.span.end(error instanceof Error ? error : String(error));
      throw error;
    }
    const created = results.filter((r) => r.created).map((r) => r.task);
    trace?.span.end(null, { 'tasklease.task.created': created.length });
    if (created.length > 0) this.emit('submitted', { tasks: created });
    return results;
  }

  /**
   * Fan-out by event (events.ts): one task in every type subscribed to `event`, read and inserted in one
   * transaction; the payload checked against each subscribed type's schema this client knows. No subscriber:
   * an empty list. With `idempotencyKey`, a repeat returns the existing tasks (created: false).
   */
  async publish(event: string, payload: unknown, options: PublishOptions = {}): Promise<PublishResult> {
    checkEventName(event);
    checkKnownKeys('publish', options, PUBLISH_OPTION_KEYS);
    const { transaction, ...rest } = options;
    const policies = await this.policyMaxAttempts();
    // One submit span for the tasks of the transaction that committed (a transaction tried again builds them again).
    const trace: { current: ReturnType<typeof startSubmitSpan> } = { current: null };
    const traced = (build: (subscriptions: readonly Subscription[]) => NewTask[]) => (subscriptions: readonly Subscription[]) => {
      const tasks = build(subscriptions);
      trace.current?.span.end(null);
      trace.current = tasks.length > 0 ? startSubmitSpan(tasks) : null;
      const traceParent = trace.current?.traceParent;
      if (traceParent) for (const task of tasks) task.traceParent = traceParent;
      return tasks;
    };
    let published: Awaited<ReturnType<typeof publishEvent>>;
    try {
      published = await publishEvent(event, payload, rest, {
        registry: this.registry,
        limits: { ...this.limits, policyMaxAttempts: policies },
        subscribedTypes: async () => (await this.store.listSubscriptions({ event })).map((s) => s.taskType),
        publish: (build) => this.store.publishEvent({ event, build: traced(build), ...(transaction === undefined ? {} : { transaction }) }),
      });
    } catch (error) {
      trace.current?.span.end(error instanceof Error ? error : String(error));
      throw error;
    }
    const { subscriptions, results } = published;
    const created = results.filter((r) => r.created).map((r) => r.task);
    trace.current?.span.end(null, { 'tasklease.task.created': created.length });
    if (created.length > 0) this.emit('submitted', { tasks: created });
    this.emit('published', { event, subscribed: subscriptions.length > 0, created });
    return { event, results };
  }

  /** Subscribes `taskType` to `event` (or changes the subscription's priority / maxAttempts); publishes from now on create its task. */
  async subscribe(input: SubscribeInput): Promise<Subscription> {
    return this.store.saveSubscription({ subscription: normalizeSubscription(input) });
  }

  /** Ends the subscription; false when there was none. A publish that already read it still creates its task (it commits first). */
  async unsubscribe(input: { event: string; taskType: string }): Promise<boolean> {
    const { event, taskType } = normalizeSubscription({ event: input?.event, taskType: input?.taskType });
    return this.store.deleteSubscription({ event, taskType });
  }

  /** Subscriptions by event, then type; filtered by `event` and / or `taskType`. */
  async listSubscriptions(options: { event?: string; taskType?: string } = {}): Promise<Subscription[]> {
    checkKnownKeys('listSubscriptions', options, ['event', 'taskType']);
    if (options.event !== undefined) checkEventName(options.event);
    if (options.taskType !== undefined) checkOptionalString('listSubscriptions', 'taskType', options.taskType, 200);
    return this.store.listSubscriptions({ event: options.event ?? null, taskType: options.taskType ?? null });
  }

  /**
   * A warning when maxPayloadBytes lets through payloads the database server
   * itself refuses (MySQL max_allowed_packet), else null. A server or worker
   * process logs it at start; such a payload fails at submit with
   * PAYLOAD_TOO_LARGE either way.
   */
  async payloadLimitWarning(): Promise<string | null> {
    const server = await this.store.payloadLimit();
    if (server === null || this.limits.maxPayloadBytes <= server.bytes) return null;
    return `maxPayloadBytes is ${this.limits.maxPayloadBytes} bytes, but the database takes payloads of at most ${server.bytes} bytes (${server.source})`;
  }

  /** How many tasks are in each status (of one type, or all), in scope: the dashboard's status tabs. */
  async counts(options: ScopeOption & { taskType?: string } = {}): Promise<Record<TaskStatus, number>> {
    return this.store.countByStatus({ scope: options.scope ?? Scope.global(), taskType: options.taskType ?? null });
  }

  async get(id: string, options: ScopeOption = {}): Promise<Task | null> {
    return this.store.getTask({ id, scope: options.scope ?? Scope.global() });
  }

  async list(options: ListOptions = {}): Promise<TaskPage> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit must be an integer from 1 to 1000', 'limit');
    const { params, window } = checkTaskFilter(options, options.scope ?? Scope.global());
    const page = await this.store.listTasks({ ...params, limit, cursor: windowCursor(options.cursor ?? null, window) });
    return cutPage(page, window);
  }

  /**
   * Resolves with the task once it is finished (a terminal status), whichever
   * process ran it; rejects with WaitError (WAIT_TIMEOUT, WAIT_ABORTED), or
   * NotFoundError when the task is not there (or not in scope). See wait.ts.
   */
  /** The emitter's: resolves with the first client event `name` that satisfies `predicate`. */
  override waitFor<K extends keyof ClientEvents>(name: K, predicate?: (event: ClientEvents[K]) => boolean): Promise<ClientEvents[K]>;
  override waitFor(id: string, options?: WaitOptions): Promise<Task>;
  override waitFor(idOrEvent: string, options?: WaitOptions | ((event: never) => boolean)): Promise<unknown> {
    // An event name is never a task id (ids are UUIDs): both meanings stay available.
    if ((idOrEvent === 'submitted' || idOrEvent === 'published') && (options === undefined || typeof options === 'function')) {
      return super.waitFor(idOrEvent as keyof ClientEvents, options as ((event: ClientEvents[keyof ClientEvents]) => boolean) | undefined);
    }
    const waitOptions = (options ?? {}) as WaitOptions;
    const scope = waitOptions.scope ?? Scope.global();
    const watch = (listener: () => void) => this.store.watchOutcome({ taskId: idOrEvent, listener });
    return waitForTask((taskId) => this.store.getTask({ id: taskId, scope }), watch, idOrEvent, waitOptions);
  }

  /**
   * Cancels a task: at once when no worker runs it (CANCELLED), else asks its
   * worker to stop (CANCEL_REQUESTED; its signal fires and it ends CANCELLED).
   */
  async requestCancellation(id: string, options: ActionOptions = {}): Promise<CancelOutcome> {
    const scope = options.scope ?? Scope.global();
    const record = this.record('CANCEL', options);
    // Idle first; a task claimed in between is caught by the second step.
    const [idle] = await this.store.changeStatus({ ids: [id], scope, from: CANCELLABLE_AT_ONCE, to: 'CANCELLED', record });
    if (idle?.applied) return 'CANCELLED';
    const [running] = await this.store.changeStatus({ ids: [id], scope, from: ['RUNNING'], to: 'CANCEL_REQUESTED', record });
    if (running?.applied) return 'CANCEL_REQUESTED';
    const status = running?.status ?? null;
    if (status === null) throw new NotFoundError('task', id);
    if (status === 'CANCEL_REQUESTED') return 'CANCEL_REQUESTED';
    throw new InvalidTransitionError(id, status, 'cancel');
  }

  /** Holds a waiting task (QUEUED, RETRY_WAIT, or a flow's BLOCKED node) until resume. */
  async pause(id: string, options: ActionOptions = {}): Promise<void> {
    await this.transition(id, options, PAUSABLE, 'PAUSED', this.record('PAUSE', options));
  }

  async resume(id: string, options: ActionOptions = {}): Promise<void> {
    await this.transition(id, options, ['PAUSED'], 'QUEUED', this.record('RESUME', options));
  }

  /**
   * What operators did to the task (pause, resume, cancel, retry, reschedule,
   * edit, dead-letter replay and archive), by whom and when: newest first, at most
   * `limit` (1–1000, default 100). Worker transitions are its attempts.
   */
  async actions(id: string, options: ScopeOption & { limit?: number } = {}): Promise<TaskActionRecord[]> {
    const limit = options.limit ?? 100;
    checkInteger('actions', 'limit', limit, { min: 1, max: 1000 });
    await this.require(id, options);
    return this.store.listTaskActions({ taskId: id, limit });
  }

  /**
   * The durable steps the task's handler completed (ctx.step), oldest first,
   * results parsed: its current attempt cycle's, and with `allCycles` those of
   * cycles an operator's retry or a dead-letter replay ended (`current` false).
   */
  async steps(id: string, options: ScopeOption & { allCycles?: boolean } = {}): Promise<TaskStep[]> {
    await this.require(id, options);
    return (await this.store.listSteps({ taskId: id, currentCycleOnly: options.allCycles !== true })).map(taskStepOf);
  }

  /**
   * The lines the task's handler logged (ctx.log), oldest first, fields parsed: every attempt's, or one
   * attempt's; `afterSeq` pages (pass the last line's seq). A marker line (`dropped` > 0) stands for older lines
   * the bounds dropped. Scoped like get(): a task out of scope is NOT_FOUND.
   */
  async logs(id: string, options: ScopeOption & LogReadOptions = {}): Promise<TaskLogEntry[]> {
    const read = checkLogReadOptions(options);
    await this.require(id, options);
    return (await this.store.listTaskLogs({ taskId: id, ...read })).map(taskLogEntryOf);
  }

  /**
   * When the task will start: its position under every limit that binds it (type, owner, global) and an
   * estimate from recent throughput, with the reason (estimate.ts). Not waiting: started, ended, blocked or paused.
   */
  async estimate(id: string, options: ScopeOption & EstimateOptions = {}): Promise<TaskEstimate> {
    const { scope, ...rest } = options;
    const task = await this.require(id, { scope });
    return estimateTask(this.store, task, this.defaultLimits, rest);
  }

  async attempts(id: string, options: ScopeOption = {}): Promise<AttemptRecord[]> {
    await this.require(id, options);
    return this.store.listAttempts({ taskId: id });
  }

  async failures(id: string, options: ScopeOption & { limit?: number } = {}): Promise<FailureRow[]> {
    await this.require(id, options);
    return this.store.listFailures({ taskId: id, limit: options.limit ?? 20 });
  }

  /** Cancels many tasks (at most 1000); says how many ended at once, how many were asked to stop, and why the rest were not. */
  async cancelMany(ids: readonly string[], options: ActionOptions = {}): Promise<CancelManyResult> {
    checkIds(ids);
    const scope = options.scope ?? Scope.global();
    return cancelIds(this.store, ids, scope, this.record('CANCEL', options));
  }

  /** Runs a FAILED task again now, with a fresh attempt cycle. */
  async retry(id: string, options: ActionOptions = {}): Promise<void> {
    const record = this.record('RETRY', options);
    await this.transition(id, options, ['FAILED'], 'QUEUED', record, { newCycle: true, availableAt: await this.store.now() });
  }

  /** Moves a waiting task's start time (QUEUED, RETRY_WAIT or PAUSED; a paused one stays paused). */
  async reschedule(id: string, when: { delayMs: number } | { availableAt: Date }, options: ActionOptions = {}): Promise<void> {
    const availableAt = 'availableAt' in when ? when.availableAt : new Date((await this.store.now()).getTime() + when.delayMs);
    if (!(availableAt instanceof Date) || Number.isNaN(availableAt.getTime()))
      throw new ValidationError('reschedule needs a valid availableAt or delayMs', 'availableAt');
    const scope = options.scope ?? Scope.global();
    const record = this.record('RESCHEDULE', options, availableAt.toISOString());
    const [paused] = await this.store.changeStatus({ ids: [id], scope, from: ['PAUSED'], to: 'PAUSED', availableAt, record });
    if (paused?.applied) return;
    await this.transition(id, options, ['QUEUED', 'RETRY_WAIT'], 'QUEUED', record, { availableAt });
  }

  /**
   * Changes a waiting task (QUEUED, RETRY_WAIT, PAUSED or BLOCKED; its status stays): payload, priority,
   * availableAt, deadlineAt (null: none) or maxAttempts, checked as a submit checks them (edit.ts) and written in one
   * conditional UPDATE. A task claimed meanwhile changes nothing: INVALID_TRANSITION; with `expect.updatedAt`, a task
   * changed since (another operator's edit) changes nothing either: TASK_CHANGED. Recorded in its actions as EDIT with
   * the fields changed (not their values). Resolves with the task as it is after the edit (as stored).
   */
  async edit(id: string, changes: TaskChanges, options: EditOptions = {}): Promise<Task> {
    checkKnownKeys('edit', options, ['scope', 'actor', 'expect']);
    checkChanges(changes, this.limits.now);
    const expectUpdatedAt = expectedUpdate(options.expect);
    const scope = options.scope ?? Scope.global();
    const task = await this.require(id, { scope });
    const edit = await editOf(task, changes, this.registry.get(task.taskType), this.limits);
    const record = this.record('EDIT', options, editDetail(edit));
    const result = await this.store.editTask({ id, scope, from: EDITABLE_STATUSES, changes: edit, expectUpdatedAt, record });
    if (!result.applied) throw editRefusal(id, result.status, expectUpdatedAt);
    return this.require(id, { scope });
  }

  /** Deletes terminal tasks finished before the cut-off (with attempts and failures; dead letters archived), in batches. */
  /**
   * Queue history (written by recordQueueHistory in workers and clients): per minute or hour of [from, to), counts
   * summed over processes — of one type or all — with queue-wait and run-time quantiles.
   */
  history(query: HistoryQuery): Promise<HistorySeries> {
    return readHistory(this.store, query);
  }

  cleanup(options: CleanupOptions): Promise<CleanupResult> {
    return cleanup(this.store, options);
  }

  /** Why is this task where it is? (seed article 2, diagnose-task.sh) */
  diagnose(id: string, options: ScopeOption & { workerSeenWithinMs?: number } = {}): Promise<Diagnosis> {
    return diagnose(this.store, id, {
      scope: options.scope ?? Scope.global(),
      ...this.defaultLimits,
      workerSeenWithinMs: options.workerSeenWithinMs ?? 60_000,
    });
  }

  /** Counts, durations, queue waits and failure codes of a type over the last hours (seed article 2, analyze-performance.sh). */
  analyze(taskType: string, hours = 24): Promise<Analysis> {
    return analyze(this.store, taskType, hours);
  }

  /** A cluster-wide snapshot for dashboards: counts, limits in use, dead letters, workers, recent queue wait (stats.ts). */
  stats(options: { queueWaitWindowMs?: number; workerSeenWithinMs?: number } = {}): Promise<ClusterStats> {
    checkKnownKeys('stats', options, ['queueWaitWindowMs', 'workerSeenWithinMs']);
    const queueWaitWindowMs = options.queueWaitWindowMs ?? 300_000;
    const workerSeenWithinMs = options.workerSeenWithinMs ?? 60_000;
    checkInteger('stats', 'queueWaitWindowMs', queueWaitWindowMs, { min: 1000, max: 86_400_000 });
    checkInteger('stats', 'workerSeenWithinMs', workerSeenWithinMs, { min: 1000, max: 86_400_000 });
    return clusterStats(this.store, { ...this.defaultLimits, queueWaitWindowMs, workerSeenWithinMs });
  }

  /** Workers seen within `seenWithinMs` (default 60 s) of the database clock, with the types they run. */
  workers(options: { seenWithinMs?: number } = {}): Promise<WorkerRecord[]> {
    const seenWithinMs = options.seenWithinMs ?? 60_000;
    if (!Number.isInteger(seenWithinMs) || seenWithinMs < 1) throw new ValidationError('seenWithinMs must be a positive integer', 'seenWithinMs');
    return this.store.listWorkers({ seenWithinMs });
  }

  private policyCache: { at: number; lookup: (taskType: string) => number | null } | null = null;
  private policyRefresh: Promise<unknown> | null = null;

  /**
   * Policy maxAttempts by type, read at most once a second: an operator's change applies within a
   * second or two. A read between one and two seconds old still serves while a fresh one is read
   * in the background, so that a steady stream of submits never waits for that extra round trip
   * (it showed in the pickup latency's tail); an older one is read again first.
   */
  private async policyMaxAttempts(): Promise<(taskType: string) => number | null> {
    const cached = this.policyCache;
    const age = cached ? Date.now() - cached.at : Infinity;
    if (cached && age < POLICY_FRESH_MS) return cached.lookup;
    if (cached && age < 2 * POLICY_FRESH_MS) {
      this.policyRefresh ??= this.readPolicies()
        .catch(() => undefined) // the next submit reads again
        .finally(() => (this.policyRefresh = null));
      return cached.lookup;
    }
    return this.readPolicies();
  }

  private async readPolicies(): Promise<(taskType: string) => number | null> {
    const at = Date.now();
    const policies = await this.store.listPolicies();
    const byKey = new Map(policies.map((p) => [p.policyKey, p.maxAttempts]));
    const lookup = (taskType: string): number | null => byKey.get(typePolicyKey(taskType)) ?? byKey.get(GLOBAL_POLICY_KEY) ?? null;
    if (!this.policyCache || this.policyCache.at <= at) this.policyCache = { at, lookup };
    return lookup;
  }

  private async require(id: string, options: ScopeOption): Promise<Task> {
    const task = await this.get(id, options);
    if (!task) throw new NotFoundError('task', id);
    return task;
  }

  private async transition(
    id: string,
    options: ScopeOption,
    from: readonly TaskStatus[],
    to: TaskStatus,
    record: ActionRecordInput,
    extra: { newCycle?: boolean; availableAt?: Date } = {},
  ): Promise<void> {
    const [result] = await this.store.changeStatus({ ids: [id], scope: options.scope ?? Scope.global(), from, to, record, ...extra });
    if (result?.applied) return;
    if (!result || result.status === null) throw new NotFoundError('task', id);
    throw new InvalidTransitionError(id, result.status, record.action.toLowerCase());
  }

  /** The history row an operator action leaves: the call's actor, else this client's. */
  private record(action: TaskActionName, options: ActorOption, detail?: string): ActionRecordInput {
    const actor = options.actor === undefined ? this.actor : checkActor(options.actor, action.toLowerCase());
    return { action, actor, ...(detail === undefined ? {} : { detail }) };
  }
}

export function createClient(options: ClientOptions): TaskLeaseClient {
  return new TaskLeaseClient(options);
}
