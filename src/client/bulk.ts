/**
 * Bulk operations by filter (issue 29): retry, cancel, pause, resume,
 * reschedule, replay dead letters or delete every task a filter matches —
 * after a dry run's count — as a background operation in batches.
 *
 * - One row per operation (store/bulk.ts): who started it, when, the filter
 *   and the action (the audit), the count the dry run saw, and its progress.
 * - Batches walk the filter's tasks newest first by id (UUIDv7), from the id
 *   of the moment the operation started (tasks created later are not part of
 *   it) down to the window's floor. After each batch the cursor and the counts
 *   are saved, fenced by the operation's lease; a process that crashes or
 *   stops leaves its lease to expire (or hands it back), and the next process
 *   that looks for abandoned operations (the server, every 5 s;
 *   `resumeAbandoned()`; `tasklease bulk resume`) goes on from the saved
 *   cursor. A batch replayed after a crash changes nothing twice: every action
 *   is the store's conditional change (from the statuses it applies to).
 * - Each action applies only in the statuses it can (a retry to FAILED tasks,
 *   a resume to PAUSED ones…): a filter's statuses are intersected with them,
 *   so the dry run counts what the action would touch. Each task changed is
 *   recorded on its timeline as the single-task action, by the operation's
 *   actor, with `bulk <id>` as its detail (a reschedule: its new start time).
 * - Owner scope: an operation started in a user's scope touches, shows and
 *   lets cancel only that owner's tasks and operations.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { uuidv7 } from '../core/ids.js';
import { Scope, scopeOwner } from '../core/scope.js';
import { CANCELLABLE_AT_ONCE, TERMINAL_STATUSES, type TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import { bulkStoreOf, type BulkRow, type BulkStatus, type BulkStore } from '../store/bulk.js';
import type { ActionRecordInput, Actor, Store, TaskActionName } from '../store/types.js';
import { checkActor, type ActorOption } from './actors.js';
import { cancelIds } from './cancel.js';
import { checkKnownKeys, checkInteger } from '../core/validate.js';
import { checkTaskFilter, TASK_FILTER_KEYS, windowFloor, type TaskFilter } from './task-filter.js';
import { smallestIdAt, windowCursor } from './time-window.js';

export type BulkAction = 'retry' | 'cancel' | 'pause' | 'resume' | 'reschedule' | 'replay' | 'delete';

interface ActionRule {
  /** The statuses the action applies in: the filter's are intersected with them. */
  statuses: readonly TaskStatus[];
  /** Recorded on each task's timeline as. */
  record: TaskActionName | null;
}

/** Each action's statuses: the single-task action's rules (client.ts), which bulk applies to many. */
export const BULK_ACTIONS: Readonly<Record<BulkAction, ActionRule>> = {
  retry: { statuses: ['FAILED'], record: 'RETRY' },
  cancel: { statuses: [...CANCELLABLE_AT_ONCE, 'RUNNING'], record: 'CANCEL' },
  pause: { statuses: ['QUEUED', 'RETRY_WAIT', 'BLOCKED'], record: 'PAUSE' },
  resume: { statuses: ['PAUSED'], record: 'RESUME' },
  reschedule: { statuses: ['QUEUED', 'RETRY_WAIT', 'PAUSED'], record: 'RESCHEDULE' },
  replay: { statuses: ['FAILED'], record: null },
  // Ended tasks only, as cleanup removes them (attempts, failures, steps, logs; dead letters archived).
  delete: { statuses: TERMINAL_STATUSES, record: null },
};

export const BULK_ACTION_NAMES = Object.keys(BULK_ACTIONS) as BulkAction[];

export interface BulkRequest {
  action: BulkAction;
  filter: TaskFilter;
  /** reschedule: the new start time… */
  availableAt?: Date;
  /** …or this long from when each batch runs. */
  delayMs?: number;
}

export interface BulkScopeOptions {
  scope?: Scope;
}

export interface BulkStartOptions extends BulkScopeOptions, ActorOption {
  /** Tasks per batch, 1–1000. Default 500. */
  batchSize?: number;
  /** A pause between batches (ms, at most 60 000), to spare a busy database. Default 0. */
  pauseMs?: number;
  /** false: only create the operation (a runner resumes it); default: run it in this process in the background. */
  run?: boolean;
}

export interface BulkRunOptions extends BulkScopeOptions {
  /** After each batch, with the operation as saved (awaited: the next batch waits for it). */
  onProgress?: (operation: BulkOperation) => void | Promise<void>;
  /** Stop after the current batch and hand the operation back (another process resumes it). */
  signal?: AbortSignal;
}

export interface BulkOperation {
  id: string;
  action: BulkAction;
  /** The filter as given (dates as ISO text). */
  filter: Record<string, unknown>;
  /** The statuses the action applied in (the filter's intersected with the action's). */
  statuses: TaskStatus[];
  /** reschedule: the start time, or the delay. */
  availableAt: string | null;
  delayMs: number | null;
  batchSize: number;
  pauseMs: number;
  status: BulkStatus;
  /** What the dry run counted when the operation started. */
  matched: number;
  /** Tasks looked at so far (matched when it started, in the statuses). */
  processed: number;
  /** Tasks the action changed (the rest had changed meanwhile: another operator, a worker). */
  changed: number;
  cancelRequested: boolean;
  error: string | null;
  actor: Actor;
  /** The owner it is confined to (a user's operation); null: every owner. */
  owner: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export interface BulkDryRun {
  action: BulkAction;
  statuses: TaskStatus[];
  /** How many tasks the action would look at now. */
  matched: number;
  /** The first few of them, newest first. */
  sample: Task[];
}

interface Params {
  statuses: TaskStatus[];
  availableAt: string | null;
  delayMs: number | null;
  batchSize: number;
  pauseMs?: number;
}

const DEFAULT_BATCH = 500;
const SAMPLE = 5;
/** A failing batch is tried again after 1, 2, 4 s; then the operation ends FAILED with the error. */
const BATCH_TRIES = 4;

const REQUEST_KEYS = ['action', 'filter', 'availableAt', 'delayMs'] as const;

export class BulkApi {
  /** This process's name on the leases it takes. */
  readonly runnerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private bulkStore: Promise<BulkStore> | null = null;
  /** Operations this process runs in the background, by id: stop() aborts them. */
  private readonly running = new Map<string, { controller: AbortController; done: Promise<BulkOperation | null> }>();
  /** Operations this process walks now (background or foreground). */
  private readonly walking = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly actor: Actor,
    private readonly leaseMs = 30_000,
  ) {}

  /** Counts what the action would touch now, and shows the first few: nothing is written. */
  async dryRun(request: BulkRequest, options: BulkScopeOptions = {}): Promise<BulkDryRun> {
    const scope = options.scope ?? Scope.global();
    const { action, statuses, filter } = checkRequest(request);
    const checked = checkTaskFilter({ ...filter, status: statuses }, scope);
    const floor = windowFloor(checked.window);
    const params = { ...checked.params, idAtLeast: floor };
    const [matched, page] = await Promise.all([
      this.store.countTasks({ ...params, ...upperEdge(checked.window) }),
      this.store.listTasks({ ...params, limit: SAMPLE, cursor: windowCursor(null, checked.window) }),
    ]);
    return { action, statuses, matched, sample: page.tasks };
  }

  /**
   * Starts the operation: counts what it will touch, records it (who, when, filter, count) and — unless `run: false` —
   * runs it in this process in the background. Resolves with the operation as recorded; follow it with get(),
   * `run()` (in the foreground), the HTTP API's events, or `tasklease bulk watch`.
   */
  async start(request: BulkRequest, options: BulkStartOptions = {}): Promise<BulkOperation> {
    checkKnownKeys('bulk', options, ['scope', 'actor', 'batchSize', 'pauseMs', 'run']);
    const batchSize = options.batchSize ?? DEFAULT_BATCH;
    checkInteger('bulk', 'batchSize', batchSize, { min: 1, max: 1000 });
    const pauseMs = options.pauseMs ?? 0;
    checkInteger('bulk', 'pauseMs', pauseMs, { min: 0, max: 60_000 });
    const scope = options.scope ?? Scope.global();
    const actor = options.actor === undefined ? this.actor : checkActor(options.actor, 'bulk');
    const { action, statuses, filter } = checkRequest(request);
    const checked = checkTaskFilter({ ...filter, status: statuses }, scope);
    // Tasks created from now on are not part of it: the walk starts below an id made now — above every id this process
    // made before (uuidv7 is monotonic in a process), and at the later of this process's and the database's clock.
    const start = windowCursor(uuidv7(Math.max(Date.now(), (await this.store.now()).getTime())), checked.window);
    const floorId = windowFloor(checked.window);
    const matched = await this.store.countTasks({ ...checked.params, idAtLeast: floorId, ...(start ? { idBelow: start } : {}) });
    const id = uuidv7();
    const params: Params = {
      statuses,
      availableAt: request.availableAt ? request.availableAt.toISOString() : null,
      delayMs: request.delayMs ?? null,
      batchSize,
      pauseMs,
    };
    const store = await this.bulk();
    const run = options.run !== false;
    await store.create({
      id,
      action,
      filterJson: JSON.stringify(filterForStorage(filter)),
      paramsJson: JSON.stringify(params),
      scopeOwner: scopeOwner(scope),
      actor,
      matched,
      cursorId: start,
      floorId,
      leaseOwner: run ? this.runnerId : null,
      leaseMs: this.leaseMs,
    });
    if (run) this.background(id, scope);
    return (await this.get(id, { scope }))!;
  }

  /**
   * Runs (or resumes) an operation in the foreground until it ends, is cancelled, the signal stops it, or another
   * process holds it: resolves with the operation as it then is.
   */
  async run(id: string, options: BulkRunOptions = {}): Promise<BulkOperation> {
    const scope = options.scope ?? Scope.global();
    const store = await this.bulk();
    const row = (await store.get(id, scopeOwner(scope))) ?? notFound(id);
    if (row.status === 'RUNNING' && !this.walking.has(id) && (await store.acquire({ id, leaseOwner: this.runnerId, leaseMs: this.leaseMs }))) {
      this.walking.add(id);
      try {
        await this.walk(store, row, options);
      } finally {
        this.walking.delete(id);
      }
    }
    return (await this.get(id, { scope }))!;
  }

  async get(id: string, options: BulkScopeOptions = {}): Promise<BulkOperation | null> {
    const row = await (await this.bulk()).get(id, scopeOwner(options.scope ?? Scope.global()));
    return row ? operationOf(row) : null;
  }

  /** Newest first; a user's scope: its own. */
  async list(options: BulkScopeOptions & { limit?: number } = {}): Promise<BulkOperation[]> {
    const limit = options.limit ?? 50;
    checkInteger('bulk list', 'limit', limit, { min: 1, max: 1000 });
    return (await (await this.bulk()).list({ scopeOwner: scopeOwner(options.scope ?? Scope.global()), limit })).map(operationOf);
  }

  /** Asks a running operation to stop after its current batch (what it changed stays changed): it ends CANCELLED. */
  async cancel(id: string, options: BulkScopeOptions = {}): Promise<BulkOperation> {
    const store = await this.bulk();
    const owner = scopeOwner(options.scope ?? Scope.global());
    await store.requestCancel(id, owner);
    const row = (await store.get(id, owner)) ?? notFound(id);
    // Nobody runs it (never taken, or its process died): end it here rather than wait for a resume.
    if (row.status === 'RUNNING' && !this.walking.has(id) && (await store.acquire({ id, leaseOwner: this.runnerId, leaseMs: this.leaseMs }))) {
      await store.finish({ id, leaseOwner: this.runnerId, status: 'CANCELLED', error: null });
    }
    return (await this.get(id, options))!;
  }

  /** Resumes every operation no live process holds, one after the other (the server calls it every few seconds). */
  async resumeAbandoned(options: Omit<BulkRunOptions, 'scope'> = {}): Promise<string[]> {
    const ids = await (await this.bulk()).abandoned(20);
    const resumed: string[] = [];
    for (const id of ids) {
      if (options.signal?.aborted || this.walking.has(id)) continue;
      resumed.push(id);
      await this.run(id, options);
    }
    return resumed;
  }

  /** Removes ended operations that finished before the cut-off. */
  async purge(finishedBefore: Date): Promise<number> {
    return (await this.bulk()).purge(finishedBefore);
  }

  /** Stops the operations this process runs in the background after their current batch and hands them back. */
  async stop(): Promise<void> {
    for (const { controller } of this.running.values()) controller.abort();
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  private background(id: string, scope: Scope): void {
    const controller = new AbortController();
    const done = this.run(id, { scope, signal: controller.signal }).catch(() => null);
    this.running.set(id, { controller, done });
    void done.finally(() => this.running.delete(id));
  }

  private bulk(): Promise<BulkStore> {
    this.bulkStore ??= bulkStoreOf(this.store);
    return this.bulkStore;
  }

  /** The batches, from the saved cursor on; the lease is held (acquired). */
  private async walk(store: BulkStore, row: BulkRow, options: BulkRunOptions): Promise<void> {
    const lease = { id: row.id, leaseOwner: this.runnerId };
    const action = row.action as BulkAction;
    const params = JSON.parse(row.paramsJson ?? '{}') as Params;
    const scope = row.scopeOwner === null ? Scope.global() : Scope.owner(row.scopeOwner);
    const filter = filterFromStorage(JSON.parse(row.filterJson) as Record<string, unknown>);
    const { params: where } = checkTaskFilter({ ...filter, status: params.statuses }, scope);
    let cursor = row.cursorId;
    for (;;) {
      if (options.signal?.aborted) return store.release(lease);
      const current = await store.get(row.id, null);
      if (!current || current.status !== 'RUNNING' || current.leaseOwner !== this.runnerId) return;
      if (current.cancelRequested) {
        await store.finish({ ...lease, status: 'CANCELLED', error: null });
        break;
      }
      let outcome: { ids: string[]; changed: number; last: boolean };
      try {
        outcome = await retrying(async () => {
          const page = await this.store.listTasks({ ...where, idAtLeast: row.floorId, limit: params.batchSize, cursor });
          const ids = page.tasks.map((task) => task.id);
          const changed = ids.length === 0 ? 0 : await this.apply(action, ids, scope, row, params);
          return { ids, changed, last: page.nextCursor === null };
        }, options.signal);
      } catch (error) {
        await store.finish({ ...lease, status: 'FAILED', error: describe(error) });
        break;
      }
      if (outcome.ids.length > 0) {
        cursor = outcome.ids.at(-1)!;
        const kept = await store.saveProgress({ ...lease, leaseMs: this.leaseMs, cursorId: cursor, processed: outcome.ids.length, changed: outcome.changed });
        if (!kept) return; // the lease went to another process: it goes on
        const saved = await this.get(row.id);
        if (saved) await options.onProgress?.(saved);
      }
      if (outcome.last) {
        await store.finish({ ...lease, status: 'SUCCEEDED', error: null });
        break;
      }
      if (params.pauseMs) await pause(params.pauseMs, options.signal);
    }
    const ended = await this.get(row.id);
    if (ended) await options.onProgress?.(ended);
  }

  /** One batch's change: how many of the tasks it changed. */
  private async apply(action: BulkAction, ids: string[], scope: Scope, row: BulkRow, params: Params): Promise<number> {
    const rule = BULK_ACTIONS[action];
    const detail = `bulk ${row.id}`;
    const record = (detailText = detail): ActionRecordInput => ({ action: rule.record!, actor: row.actor, detail: detailText });
    const moved = (results: { applied: boolean }[]) => results.filter((r) => r.applied).length;
    switch (action) {
      case 'retry':
        return moved(
          await this.store.changeStatus({ ids, scope, from: ['FAILED'], to: 'QUEUED', record: record(), newCycle: true, availableAt: await this.store.now() }),
        );
      case 'cancel': {
        const result = await cancelIds(this.store, ids, scope, record());
        return result.cancelled + result.cancelRequested;
      }
      case 'pause':
        return moved(await this.store.changeStatus({ ids, scope, from: rule.statuses, to: 'PAUSED', record: record() }));
      case 'resume':
        return moved(await this.store.changeStatus({ ids, scope, from: ['PAUSED'], to: 'QUEUED', record: record() }));
      case 'reschedule': {
        const availableAt = params.availableAt ? new Date(params.availableAt) : new Date((await this.store.now()).getTime() + (params.delayMs ?? 0));
        const at = record(availableAt.toISOString());
        const paused = await this.store.changeStatus({ ids, scope, from: ['PAUSED'], to: 'PAUSED', availableAt, record: at });
        const rest = paused.filter((r) => !r.applied).map((r) => r.id);
        const waiting =
          rest.length === 0 ? [] : await this.store.changeStatus({ ids: rest, scope, from: ['QUEUED', 'RETRY_WAIT'], to: 'QUEUED', availableAt, record: at });
        return moved(paused) + moved(waiting);
      }
      case 'replay': {
        const letters = await this.store.listDeadLetters({ scope, taskIds: ids, pendingOnly: true, limit: 1000 });
        if (letters.length === 0) return 0;
        const results = await this.store.replayDeadLetters({ ids: letters.map((letter) => letter.id), scope, actor: row.actor });
        return results.filter((r) => r.outcome === 'REPLAYED').length;
      }
      case 'delete': {
        const far = new Date((await this.store.now()).getTime() + 86_400_000);
        return (await this.store.purgeTerminalTasks({ finishedBefore: far, batchSize: ids.length, ids, scope })).tasks;
      }
    }
  }
}

function notFound(id: string): never {
  throw new NotFoundError('bulk operation', id);
}

/** The walk's upper edge for a count: below the window's end (the listing's cursor does it for pages). */
function upperEdge(window: { createdBefore?: Date }): { idBelow?: string } {
  return window.createdBefore ? { idBelow: smallestIdAt(window.createdBefore.getTime()) } : {};
}

function checkRequest(request: BulkRequest): { action: BulkAction; statuses: TaskStatus[]; filter: TaskFilter } {
  if (typeof request !== 'object' || request === null) throw new ValidationError('a bulk request is an object { action, filter }', 'action');
  checkKnownKeys('bulk', request, REQUEST_KEYS);
  const action = request.action;
  if (!(BULK_ACTION_NAMES as string[]).includes(action))
    throw new ValidationError(`action must be one of ${BULK_ACTION_NAMES.join(', ')}, got ${JSON.stringify(action)}`, 'action');
  const filter = request.filter ?? {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) throw new ValidationError('filter must be an object', 'filter');
  checkKnownKeys('bulk filter', filter, TASK_FILTER_KEYS);
  const rule = BULK_ACTIONS[action];
  const asked = filter.status === undefined ? null : typeof filter.status === 'string' ? [filter.status] : [...filter.status];
  const statuses = asked === null ? [...rule.statuses] : asked.filter((s) => rule.statuses.includes(s));
  if (statuses.length === 0)
    throw new ValidationError(`${action} applies to ${rule.statuses.join(', ')} tasks; the filter asks for ${asked!.join(', ')}`, 'status');
  if (action === 'reschedule') {
    const given = (request.availableAt !== undefined ? 1 : 0) + (request.delayMs !== undefined ? 1 : 0);
    if (given !== 1) throw new ValidationError('reschedule needs availableAt or delayMs (one of them)', 'availableAt');
    if (request.availableAt !== undefined && (!(request.availableAt instanceof Date) || Number.isNaN(request.availableAt.getTime())))
      throw new ValidationError('availableAt must be a valid Date', 'availableAt');
    if (request.delayMs !== undefined) checkInteger('bulk', 'delayMs', request.delayMs, { min: 0 });
  } else if (request.availableAt !== undefined || request.delayMs !== undefined) {
    throw new ValidationError('availableAt and delayMs belong to reschedule only', 'availableAt');
  }
  // An empty filter means every task in scope: allowed, the dry run says how many.
  return { action, statuses, filter };
}

function filterForStorage(filter: TaskFilter): Record<string, unknown> {
  const stored: Record<string, unknown> = { ...filter };
  delete stored.status; // the operation's statuses are stored as its params
  for (const key of ['createdAfter', 'createdBefore'] as const) if (filter[key]) stored[key] = filter[key].toISOString();
  return stored;
}

function filterFromStorage(stored: Record<string, unknown>): TaskFilter {
  const filter = { ...stored } as TaskFilter & Record<string, unknown>;
  for (const key of ['createdAfter', 'createdBefore'] as const) if (typeof stored[key] === 'string') filter[key] = new Date(stored[key]);
  return filter;
}

function operationOf(row: BulkRow): BulkOperation {
  const params = JSON.parse(row.paramsJson ?? '{}') as Partial<Params>;
  return {
    id: row.id,
    action: row.action as BulkAction,
    filter: JSON.parse(row.filterJson) as Record<string, unknown>,
    statuses: params.statuses ?? [],
    availableAt: params.availableAt ?? null,
    delayMs: params.delayMs ?? null,
    batchSize: params.batchSize ?? DEFAULT_BATCH,
    pauseMs: params.pauseMs ?? 0,
    status: row.status,
    matched: row.matched,
    processed: row.processed,
    changed: row.changed,
    cancelRequested: row.cancelRequested,
    error: row.error,
    actor: row.actor,
    owner: row.scopeOwner,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
  };
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return (typeof code === 'string' ? `${code}: ${message}` : message).slice(0, 2000);
}

/** Waits between batches; a stop ends the wait at once. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

async function retrying<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= BATCH_TRIES || signal?.aborted || (error as { retryable?: boolean }).retryable === false || error instanceof ValidationError) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000 * 2 ** (attempt - 1)).unref());
    }
  }
}
