/**
 * The worker (seed article 1, AsyncTaskWorker), as a composition root: it
 * wires small services over one table of executions and owns only the life
 * cycle (start, graceful stop) and the events it tells observers.
 *
 * - ClaimScheduler: when and how much to claim (prefetch, claim-along, polling)
 * - Executor: runs handlers in free slots and decides their outcome (outcome.ts)
 *   (a sandboxed type's handler in a worker thread of its own: sandbox/pool.ts)
 * - OutcomeWriter: writes outcomes in batches, fenced by the lease
 * - LeaseKeeper: heartbeats, renewal answers, cancellation, lease loss, local lease deadline
 * - RecoverySweeper: the periodic sweep of expired leases and due retries
 * - PolicyCache: the runtime policies (retry options, effective limits) and the registry row
 * - PeriodicScheduler: submits the due ticks of schedules (periodic tasks), once across all workers
 * - AdaptiveController: steps the limits of adaptive types from their failure rate, once per cooldown across all workers
 * - BatchGatherer: gathers the started tasks of batch types (executeBatch) into one call each
 */
import type { Middleware } from '../client/middleware.js';
import { registryOf, type AnyTaskDefinition } from '../core/definition.js';
import { Emitter } from '../core/emitter.js';
import { InvalidStateError } from '../core/errors.js';
import { isQuarantined, type Task } from '../core/task.js';
import type { StoreEvent } from '../store/types.js';
import { ClaimScheduler } from './claim-scheduler.js';
import { announceOutcome, type Announcer, type WorkerEvents } from './events.js';
import { Execution } from './execution.js';
import { ExecutionTable } from './execution-table.js';
import { Executor } from './executor.js';
import { LeaseKeeper } from './lease-keeper.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './options.js';
import { OutcomeWriter, type PendingOutcome } from './outcome-writer.js';
import { PolicyCache, type EffectiveLimits } from './policy-cache.js';
import { RecoverySweeper } from './recovery-sweeper.js';
import { PeriodicScheduler } from './periodic-scheduler.js';
import { AdaptiveController } from './adaptive-controller.js';
import { stopGracefully } from './shutdown.js';
import { WorkerLog, type StoreProblem } from './error-log.js';
import { BatchGatherer } from './batch-gatherer.js';

export type WorkerState = 'idle' | 'running' | 'stopping' | 'stopped';

export interface WorkerStats {
  workerId: string;
  state: WorkerState;
  /** Handlers running now. */
  active: number;
  /** Leased tasks waiting for a slot. */
  buffered: number;
  concurrency: number;
  taskTypes: string[];
  /** What the runtime policies allow (as last read): local concurrency above `usable` stays idle. */
  limits: EffectiveLimits;
  /** The store operation failing now (null once the store answers again): health reports DOWN with it. */
  storeProblem: StoreProblem | null;
}

export class Worker extends Emitter<WorkerEvents> {
  readonly options: ResolvedWorkerOptions;
  readonly workerId: string;
  private readonly registry: Map<string, AnyTaskDefinition>;
  private readonly table = new ExecutionTable();
  private readonly announcer: Announcer = {
    emit: (name, event) => {
      if (name === 'error') this.log.storeError((event as WorkerEvents['error']).operation, (event as WorkerEvents['error']).error);
      if (name === 'leasesAtRisk') this.log.leasesAtRisk(event as WorkerEvents['leasesAtRisk']);
      this.emit(name, event);
    },
    listening: (name) => this.listening(name),
    storeAnswered: () => this.log.storeAnswered(),
  };
  private readonly log: WorkerLog;
  private readonly policies: PolicyCache;
  private readonly leases: LeaseKeeper;
  private readonly claims: ClaimScheduler;
  private readonly writer: OutcomeWriter<Execution>;
  private readonly executor: Executor;
  private readonly sweeper: RecoverySweeper;
  private readonly scheduler: PeriodicScheduler;
  private readonly adaptive: AdaptiveController;
  private readonly batches: BatchGatherer;
  private state: WorkerState = 'idle';
  private unsubscribe: (() => void) | null = null;
  private stopping: Promise<void> | null = null;

  constructor(options: WorkerOptions) {
    super();
    const o = (this.options = resolveWorkerOptions(options));
    this.workerId = o.workerId;
    this.registry = registryOf(o.tasks);
    const { store, clock } = o;
    const events = this.announcer;
    this.log = new WorkerLog(o.workerId, o.logger, () => clock.now());
    this.policies = new PolicyCache(store, o, this.registry, events);
    this.leases = new LeaseKeeper(store, o, this.table, clock, events);
    // Every hand-back (of never-started tasks, or of leases given up: given-up.ts) may free a quarantined task to run.
    this.table.onHandBackSettled = () => {
      if (this.table.holdsIsolated) this.executor.startWaiting(this.state === 'running');
    };
    this.claims = new ClaimScheduler(store, o, this.table, clock, events, this.taskTypes, (tasks, sentAt) => this.adopt(tasks, sentAt));
    this.writer = new OutcomeWriter({
      store,
      clock,
      retryDelayMs: o.pollIntervalMs,
      claimAlong: this.claims,
      onWritten: (item, applied, claimedAlong, deadLetterId) => this.written(item, applied, claimedAlong, deadLetterId),
      onError: (error) => events.emit('error', { operation: 'finishAttempts', error }),
    });
    this.batches = new BatchGatherer(this.table, o.concurrency, clock, events);
    this.executor = new Executor(
      o,
      this.table,
      this.leases,
      this.policies,
      clock,
      events,
      {
        write: (outcome, execution) => this.writer.enqueue(outcome, execution),
        committed: (outcome, execution) => this.written({ outcome, token: execution }, true, false, null),
        slotFreed: (forgotten) => this.slotFreed(forgotten),
        nothingToWrite: () => this.claims.request(),
      },
      this.batches,
    );
    this.sweeper = new RecoverySweeper(store, clock, events, o);
    this.scheduler = new PeriodicScheduler(store, clock, events, o, (types) => this.onStoreEvent({ kind: 'submitted', taskTypes: types }));
    this.adaptive = new AdaptiveController(store, clock, events, this.taskTypes, o);
  }

  /**
   * Adds a middleware (client/middleware.ts) before start(): the first added is the outermost. Its `execute` wraps
   * every execution, its `decode` reads payloads as stored, its `encode` writes results and fan-out children.
   */
  use(middleware: Middleware): this {
    if (this.state !== 'idle') throw new InvalidStateError(`worker ${this.workerId}: use() before start(), it is ${this.state}`);
    this.options.middleware.add(middleware);
    return this;
  }

  get taskTypes(): string[] {
    return [...this.registry.keys()];
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  stats(): WorkerStats {
    return {
      workerId: this.workerId,
      state: this.state,
      active: this.table.runningHandlers,
      buffered: this.table.waiting,
      concurrency: this.options.concurrency,
      taskTypes: this.taskTypes,
      limits: this.policies.limits(),
      storeProblem: this.log.problem,
    };
  }

  start(): this {
    if (this.state !== 'idle') throw new InvalidStateError(`worker ${this.workerId} cannot start: it is ${this.state}`);
    this.state = 'running';
    this.unsubscribe = this.options.store.subscribe((event) => this.onStoreEvent(event));
    this.leases.start();
    this.log.warnIfLeasesTight(this.options.leaseMs, this.options.heartbeatIntervalMs, this.leases.slackMs);
    // Claims wait for the first policy read, so that an operator's settings apply from the first claim.
    this.claims.start(
      this.policies.start().then(() => {
        this.log.warnIfLimitsBind(this.policies.limits(), this.options.concurrency, this.options.prefetch);
        this.log.warnIfBatchesCapped(this.options.tasks, this.policies.limits(), this.options.concurrency);
      }),
    );
    this.sweeper.start();
    this.scheduler.start();
    this.adaptive.start();
    return this;
  }

  /** Stop claiming, hand back the waiting tasks, wait for handlers up to the grace period, then abort them. */
  stop(): Promise<void> {
    if (this.state === 'idle') this.state = 'stopped';
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private adopt(tasks: Task[], sentAt: number): void {
    if (tasks.length === 0) return;
    const extra: Execution[] = [];
    const adopted: Execution[] = [];
    for (const task of tasks) {
      // Claimed again while an older attempt is still here (the sweep took its lease while this worker was frozen):
      // that one is lost, its handler aborted; the table keeps it until the handler stops (execution-table.ts).
      const older = this.table.get(task.id);
      if (older) this.leases.loseLease(older, 'reclaimed');
      const execution = new Execution(task, this.registry.get(task.taskType)!, sentAt);
      // One quarantined task at a time (it runs alone): any other goes back at once, for another worker or later.
      if (isQuarantined(task) && this.table.holdsIsolated) extra.push(execution);
      else {
        this.table.add(execution);
        adopted.push(execution);
      }
    }
    if (extra.length > 0) void this.handBack(extra);
    this.leases.adopted(adopted);
    this.emit('claimed', { workerId: this.workerId, count: tasks.length });
    if (this.state !== 'running') void this.releaseWaiting();
    else this.executor.startWaiting(true);
  }

  private slotFreed(forgotten: boolean): void {
    this.executor.startWaiting(this.state === 'running');
    // Claim the next batch while this one's outcomes are still being written: the two overlap. Not when
    // the last claim came back short (the queue is empty or the limits bind: a claim before these
    // outcomes free their slots would find nothing; written() claims after them) — unless this was a
    // handler that outlived its execution, whose room nobody has claimed for yet.
    if (forgotten || (this.table.waiting === 0 && !this.claims.lastClaimShort)) this.claims.request();
  }

  private written(item: PendingOutcome<Execution>, applied: boolean, claimedAlong: boolean, deadLetterId: string | null): void {
    const execution = item.token;
    this.table.moveTo(execution, applied ? 'done' : 'lost');
    if (applied) announceOutcome(this.announcer, execution.task, item.outcome, this.options.clock.now() - execution.startedAt, deadLetterId);
    else this.emit('leaseLost', { task: execution.task, reason: 'write' });
    this.table.forgetIfSettled(execution);
    if (this.table.holdsIsolated) this.executor.startWaiting(this.state === 'running'); // it may wait for this write
    // A claim that went with this write already counted the slot it freed.
    if (!claimedAlong) this.claims.request();
  }

  private onStoreEvent(event: StoreEvent): void {
    if (event.kind === 'submitted') {
      if (event.taskTypes.length === 0 || event.taskTypes.some((type) => this.registry.has(type))) this.claims.request();
      return;
    }
    for (const id of event.taskIds) this.leases.cancel(id);
  }

  private releaseWaiting(): Promise<void> {
    return this.handBack(this.table.takeAllWaiting());
  }

  /** Hands leased tasks that never started back to the queue. */
  private async handBack(waiting: Execution[]): Promise<void> {
    if (waiting.length === 0) return;
    this.table.handingBack(waiting.length); // a quarantined task waits for it (execution-table.ts)
    try {
      await this.options.store.releaseTasks({ leases: waiting.map((execution) => execution.lease) });
      for (const execution of waiting) this.emit('released', { task: { ...execution.task, status: 'QUEUED' }, started: false });
    } catch (error) {
      this.emit('error', { operation: 'releaseTasks', error }); // their leases expire and recovery requeues them
    } finally {
      this.table.handingBack(-waiting.length);
    }
  }

  private async shutdown(): Promise<void> {
    if (this.state === 'running') this.state = 'stopping';
    this.emit('stopping', { workerId: this.workerId, active: this.table.runningHandlers, buffered: this.table.waiting });
    this.unsubscribe?.();
    this.batches.flushAll(); // what batches gathered run now, within the grace period
    await this.scheduler.stop();
    await this.adaptive.stop();
    await stopGracefully({
      options: this.options,
      table: this.table,
      claims: this.claims,
      sweeper: this.sweeper,
      writer: this.writer,
      leases: this.leases,
      releaseWaiting: () => this.releaseWaiting(),
      policies: this.policies,
      onError: (operation, error) => this.announcer.emit('error', { operation, error }),
    });
    await this.executor.closeSandboxes();
    this.state = 'stopped';
    this.emit('stopped', { workerId: this.workerId });
  }
}

export function createWorker(options: WorkerOptions): Worker {
  return new Worker(options);
}
