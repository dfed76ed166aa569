/**
 * The public API for producers and operators. Every read and operation takes
 * a scope (default global, for operators); an owner scope sees and touches
 * only its own tasks, and another owner's task answers as not found.
 * The HTTP server and the CLI are thin layers over this class.
 */
import { InvalidTransitionError, NotFoundError, ValidationError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { IDLE_STATUSES, isTaskStatus, type TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import { checkInteger, checkKnownKeys } from '../core/validate.js';
import { InvalidOptionsError } from '../core/errors.js';
import { Emitter } from '../observe/emitter.js';
import type { AttemptRecord, DeadLetter, FailureRow, InsertTaskResult, Store, TaskPage } from '../store/types.js';
import { registryOf, type AnyTaskDefinition, type TaskDefinition } from '../worker/definition.js';
import { prepareTask, type SubmitLimits, type SubmitOptions, type SubmitRequest } from './submit.js';

export interface ClientOptions {
  store: Store;
  /** Definitions of the types this client may submit (their schemas check payloads). */
  tasks: readonly AnyTaskDefinition[];
  /** Largest payload, as UTF-8 JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** maxAttempts for tasks whose definition and submit give none (seed: 3). */
  defaultMaxAttempts?: number;
}

export interface ScopeOption {
  scope?: Scope;
}

export interface ListOptions extends ScopeOption {
  taskType?: string;
  status?: TaskStatus | readonly TaskStatus[];
  owner?: string;
  /** 1–1000. Default 50. */
  limit?: number;
  cursor?: string;
}

export type CancelOutcome = 'CANCELLED' | 'CANCEL_REQUESTED';

export interface SubmitManyOptions {
  transaction?: unknown;
}

const MAX_BATCH = 50_000;

/** What a client tells its observers (metrics, logs). */
export interface ClientEvents {
  /** Tasks newly created by a submit (idempotent repeats are not included). */
  submitted: { tasks: Task[] };
}

export class TaskLeaseClient extends Emitter<ClientEvents> {
  readonly store: Store;
  private readonly registry: Map<string, AnyTaskDefinition>;
  private readonly limits: SubmitLimits;

  constructor(options: ClientOptions) {
    super();
    checkKnownKeys('Client', options, ['store', 'tasks', 'maxPayloadBytes', 'defaultMaxAttempts']);
    if (!options.store || typeof options.store.insertTasks !== 'function') throw new InvalidOptionsError('Client', 'store', 'must be a Store');
    this.store = options.store;
    this.registry = registryOf(options.tasks ?? []);
    this.limits = { maxPayloadBytes: options.maxPayloadBytes ?? 1024 * 1024, defaultMaxAttempts: options.defaultMaxAttempts ?? 3 };
    checkInteger('Client', 'maxPayloadBytes', this.limits.maxPayloadBytes, { min: 2, max: 64 * 1024 * 1024 });
    checkInteger('Client', 'defaultMaxAttempts', this.limits.defaultMaxAttempts, { min: 1, max: 100 });
  }

  /** Submits one task. Resolves once it has committed (or, with `transaction`, once it is in the caller's transaction). */
  async submit<P>(
    type: TaskDefinition<P> | string,
    payload: P,
    options: SubmitOptions & SubmitManyOptions = {},
  ): Promise<InsertTaskResult> {
    const { transaction, ...rest } = options;
    const [result] = await this.submitMany([{ ...rest, type: typeof type === 'string' ? type : type.type, payload }], { transaction });
    return result!;
  }

  /** Submits many tasks in one statement; if any is invalid, none is written. */
  async submitMany(requests: readonly SubmitRequest[], options: SubmitManyOptions = {}): Promise<InsertTaskResult[]> {
    if (!Array.isArray(requests)) throw new ValidationError('submitMany takes an array of requests', 'requests');
    if (requests.length > MAX_BATCH) throw new ValidationError(`a batch holds at most ${MAX_BATCH} tasks, got ${requests.length}`, 'requests');
    if (requests.length === 0) return [];
    const tasks = await Promise.all(
      requests.map((request, index) => prepareTask(request, this.registry, this.limits, requests.length > 1 ? `task #${index}` : 'task')),
    );
    const results = await this.store.insertTasks({ tasks, ...(options.transaction === undefined ? {} : { transaction: options.transaction }) });
    const created = results.filter((r) => r.created).map((r) => r.task);
    if (created.length > 0) this.emit('submitted', { tasks: created });
    return results;
  }

  async get(id: string, options: ScopeOption = {}): Promise<Task | null> {
    return this.store.getTask({ id, scope: options.scope ?? Scope.global() });
  }

  async list(options: ListOptions = {}): Promise<TaskPage> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit must be an integer from 1 to 1000', 'limit');
    const status = options.status === undefined ? null : typeof options.status === 'string' ? [options.status] : options.status;
    for (const s of status ?? []) if (!isTaskStatus(s)) throw new ValidationError(`unknown status ${String(s)}`, 'status');
    return this.store.listTasks({
      scope: options.scope ?? Scope.global(), taskType: options.taskType ?? null, status, owner: options.owner ?? null,
      limit, cursor: options.cursor ?? null,
    });
  }

  /**
   * Cancels a task: at once when no worker runs it (CANCELLED), else asks its
   * worker to stop (CANCEL_REQUESTED; its signal fires and it ends CANCELLED).
   */
  async requestCancellation(id: string, options: ScopeOption = {}): Promise<CancelOutcome> {
    const scope = options.scope ?? Scope.global();
    // Idle first; a task claimed in between is caught by the second step.
    const [idle] = await this.store.changeStatus({ ids: [id], scope, from: IDLE_STATUSES, to: 'CANCELLED' });
    if (idle?.applied) return 'CANCELLED';
    const [running] = await this.store.changeStatus({ ids: [id], scope, from: ['RUNNING'], to: 'CANCEL_REQUESTED' });
    if (running?.applied) return 'CANCEL_REQUESTED';
    const status = running?.status ?? null;
    if (status === null) throw new NotFoundError('task', id);
    if (status === 'CANCEL_REQUESTED') return 'CANCEL_REQUESTED';
    throw new InvalidTransitionError(id, status, 'cancel');
  }

  /** Holds a waiting task (QUEUED or RETRY_WAIT) until resume. */
  async pause(id: string, options: ScopeOption = {}): Promise<void> {
    await this.transition(id, options, ['QUEUED', 'RETRY_WAIT'], 'PAUSED', 'pause');
  }

  async resume(id: string, options: ScopeOption = {}): Promise<void> {
    await this.transition(id, options, ['PAUSED'], 'QUEUED', 'resume');
  }

  async attempts(id: string, options: ScopeOption = {}): Promise<AttemptRecord[]> {
    await this.require(id, options);
    return this.store.listAttempts({ taskId: id });
  }

  async failures(id: string, options: ScopeOption & { limit?: number } = {}): Promise<FailureRow[]> {
    await this.require(id, options);
    return this.store.listFailures({ taskId: id, limit: options.limit ?? 20 });
  }

  async deadLetters(options: ScopeOption & { taskType?: string; limit?: number; cursor?: string } = {}): Promise<DeadLetter[]> {
    return this.store.listDeadLetters({
      scope: options.scope ?? Scope.global(), taskType: options.taskType ?? null, limit: options.limit ?? 50, cursor: options.cursor ?? null,
    });
  }

  private async require(id: string, options: ScopeOption): Promise<Task> {
    const task = await this.get(id, options);
    if (!task) throw new NotFoundError('task', id);
    return task;
  }

  private async transition(id: string, options: ScopeOption, from: readonly TaskStatus[], to: TaskStatus, action: string): Promise<void> {
    const [result] = await this.store.changeStatus({ ids: [id], scope: options.scope ?? Scope.global(), from, to });
    if (result?.applied) return;
    if (!result || result.status === null) throw new NotFoundError('task', id);
    throw new InvalidTransitionError(id, result.status, action);
  }
}

export function createClient(options: ClientOptions): TaskLeaseClient {
  return new TaskLeaseClient(options);
}
