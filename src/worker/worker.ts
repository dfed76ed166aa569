/**
 * The worker (seed article 1, AsyncTaskWorker): claims tasks in batches up to
 * its free slots (plus a prefetch buffer), runs their handlers, renews all its
 * leases in one statement per heartbeat, sweeps expired leases, and stops
 * gracefully. Every write about a task is fenced by its lease in the store.
 */
import { hostname } from 'node:os';
import { GLOBAL_POLICY_KEY } from '../core/policy-keys.js';
import { TaskAbortedError } from '../core/errors.js';
import type { RetryOptions } from '../core/retry.js';
import type { Task } from '../core/task.js';
import { Emitter } from '../core/emitter.js';
import type { AttemptOutcome, ClaimParams, Store, StoreEvent } from '../store/types.js';
import { ExecutionContext } from './context.js';
import { registryOf, type AnyTaskDefinition } from '../core/definition.js';
import type { WorkerEvents } from './events.js';
import { Execution, failureOutcome, runHandler, successOutcome } from './execution.js';
import { resolveWorkerOptions, type ResolvedWorkerOptions, type WorkerOptions } from './options.js';
import { OutcomeWriter, type PendingOutcome } from './outcome-writer.js';

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
}

export class Worker extends Emitter<WorkerEvents> {
  readonly options: ResolvedWorkerOptions;
  readonly workerId: string;
  private readonly store: Store;
  private readonly registry: Map<string, AnyTaskDefinition>;
  private readonly held = new Map<string, Execution>();
  private readonly buffer: Execution[] = [];
  private readonly writer: OutcomeWriter<Execution>;
  private state: WorkerState = 'idle';
  private active = 0;
  /** Executions whose outcome is queued or being written. */
  private writing = 0;
  private claiming: Promise<void> | null = null;
  /** Resolves `claiming` when the claim in flight went with an outcome write. */
  private claimAlongDone: (() => void) | null = null;
  private claimAgain = false;
  /** The last claim brought fewer tasks than it asked for: the queue is (nearly) empty, or limits bind. */
  private lastClaimShort = false;
  private timers: NodeJS.Timeout[] = [];
  private pollTimer: NodeJS.Timeout | null = null;
  private pollDelayMs = 0;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopping: Promise<void> | null = null;
  private policyBaseDelay = new Map<string, number>();
  private ready: Promise<void> = Promise.resolve();
  private registering: Promise<void> = Promise.resolve();

  constructor(options: WorkerOptions) {
    super();
    this.options = resolveWorkerOptions(options);
    this.workerId = this.options.workerId;
    this.store = this.options.store;
    this.registry = registryOf(this.options.tasks);
    this.writer = new OutcomeWriter(this.store, (item, applied, claimedAlong) => this.written(item, applied, claimedAlong),
      (error) => this.emit('error', { operation: 'finishAttempts', error }), this.options.pollIntervalMs,
      { begin: () => this.beginClaimAlong(), end: (claimed, params) => this.endClaimAlong(claimed, params) });
  }

  get taskTypes(): string[] {
    return [...this.registry.keys()];
  }

  stats(): WorkerStats {
    return { workerId: this.workerId, state: this.state, active: this.active, buffered: this.buffer.length,
      concurrency: this.options.concurrency, taskTypes: this.taskTypes };
  }

  get isRunning(): boolean {
    return this.state === 'running';
  }

  start(): this {
    if (this.state !== 'idle') throw new Error(`worker ${this.workerId} cannot start: it is ${this.state}`);
    this.state = 'running';
    const o = this.options;
    this.unsubscribe = this.store.subscribe((event) => this.onStoreEvent(event));
    this.heartbeatTimer = setInterval(() => {
      void this.heartbeat();
      this.registering = this.refreshRegistration();
    }, o.heartbeatIntervalMs);
    // Claims wait for the first policy read, so that an operator's retry delay applies from the first failure.
    this.ready = this.registering = this.refreshRegistration();
    if (o.recoveryIntervalMs > 0) {
      this.timers.push(setInterval(() => void this.recover(), o.recoveryIntervalMs));
      void this.recover();
    }
    this.requestClaim();
    return this;
  }

  /** Stop claiming, hand back the prefetch buffer, wait for handlers up to the grace period, then abort them. */
  stop(): Promise<void> {
    if (this.state === 'idle') this.state = 'stopped';
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  // ---- claiming -------------------------------------------------------------

  private requestClaim(): void {
    if (this.state !== 'running') return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = this.claimLoop().then((found) => {
      this.claiming = null;
      this.armPoll(found);
      if (this.claimAgain) {
        this.claimAgain = false;
        this.requestClaim();
      }
    });
  }

  /**
   * Adaptive polling, the fallback for wake-ups that never come (other
   * processes on SQLite and MySQL, a lost NOTIFY): soon after work was found,
   * backing off to pollIntervalMs while claims come back empty.
   */
  private armPoll(found: boolean): void {
    if (this.state !== 'running') return;
    const o = this.options;
    this.pollDelayMs = found ? o.minPollIntervalMs : Math.min(o.pollIntervalMs, Math.max(o.minPollIntervalMs, this.pollDelayMs * 2));
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => this.requestClaim(), this.pollDelayMs);
  }

  /** Claims until the room is filled or the queue is empty; true if it leased anything. */
  private async claimLoop(): Promise<boolean> {
    let found = false;
    await this.ready;
    try {
      while (this.state === 'running') {
        const params = this.nextClaim();
        if (params === null) return found;
        const tasks = await this.store.claimTasks(params);
        this.adopt(tasks);
        found ||= tasks.length > 0;
        this.lastClaimShort = tasks.length < params.limit;
        if (tasks.length < params.limit) return found;
        // A synchronous store (SQLite) resolves at once: let timers, I/O and the outcome writer run
        // before the next claim, or a long backlog would starve heartbeats and the stop signal.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      this.emit('error', { operation: 'claimTasks', error });
    }
    return found;
  }

  /** What to claim now, or null when there is no room; marks the claim as started (see claimAgain). */
  private nextClaim(): ClaimParams | null {
    const o = this.options;
    const capacity = o.concurrency + o.prefetch;
    // Finished attempts whose outcome write is in flight do not take room: their work is done,
    // and claiming while they are written keeps the claim and the write overlapping. Still, never
    // more than two capacities of leases in all.
    const room = Math.min(capacity - (this.held.size - this.writing), 2 * capacity - this.held.size);
    // While work is buffered, wait until half the capacity is free: fewer, larger claims.
    if (room <= 0 || (this.buffer.length > 0 && room * 2 < capacity)) return null;
    // A claim that starts now answers every request made before it (their outcomes and submits are
    // committed): only a request made while it runs calls for another.
    this.claimAgain = false;
    return {
      workerId: this.workerId, taskTypes: this.taskTypes, limit: Math.min(room, o.claimBatchSize), leaseMs: o.leaseMs,
      globalConcurrency: o.globalConcurrency, typeConcurrency: o.typeConcurrency,
    };
  }

  /**
   * An outcome write is about to go out: claim with it unless a claim is in
   * flight (the store runs the claim after the outcomes, so it counts the
   * slots they free — one round trip per batch where limits bind).
   */
  private beginClaimAlong(): ClaimParams | null {
    // (No wait for the first policy read: an outcome exists only after a claim, which waited for it.)
    if (this.state !== 'running' || this.claiming) return null;
    const params = this.nextClaim();
    if (params === null) return null;
    this.claiming = new Promise<void>((resolve) => (this.claimAlongDone = resolve));
    return params;
  }

  private endClaimAlong(claimed: Task[] | null, params: ClaimParams): void {
    this.claiming = null;
    this.claimAlongDone?.();
    this.claimAlongDone = null;
    if (claimed === null) {
      // The write failed and claimed nothing: claim on our own.
      this.requestClaim();
      return;
    }
    this.adopt(claimed);
    this.lastClaimShort = claimed.length < params.limit;
    this.armPoll(claimed.length > 0);
    // A full batch may leave more behind; a request made during the write may want more.
    if (claimed.length === params.limit || this.claimAgain) this.requestClaim();
  }

  private adopt(tasks: Task[]): void {
    if (tasks.length === 0) return;
    const now = Date.now();
    for (const task of tasks) {
      const execution = new Execution(task, this.registry.get(task.taskType)!, now);
      this.held.set(task.id, execution);
      this.buffer.push(execution);
    }
    this.emit('claimed', { workerId: this.workerId, count: tasks.length });
    if (this.state !== 'running') void this.releaseBuffered();
    else this.startBuffered();
  }

  private startBuffered(): void {
    while (this.state === 'running' && this.active < this.options.concurrency && this.buffer.length > 0) {
      void this.run(this.buffer.shift()!);
    }
  }

  // ---- execution ------------------------------------------------------------

  private async run(execution: Execution): Promise<void> {
    const o = this.options;
    const { task } = execution;
    execution.phase = 'running';
    execution.startedAt = Date.now();
    this.active += 1;
    const context = new ExecutionContext(task, execution, {
      save: (progress) => this.saveProgress(execution, progress),
      pollCancellation: () => this.checkLease(execution),
    }, { flushIntervalMs: o.progressFlushIntervalMs, flushThreshold: o.progressFlushThreshold,
      cancelCheckIntervalMs: o.cancelCheckIntervalMs, now: Date.now });
    execution.context = context;
    this.armTimeout(execution);
    if (this.listening('started')) this.emit('started', { task, queueWaitMs: Math.max(0, execution.startedAt - task.createdAt.getTime()) });
    let outcome: AttemptOutcome | null;
    try {
      const result = await runHandler(execution, context);
      await context.settle();
      outcome = successOutcome(execution, result);
    } catch (error) {
      await context.settle();
      outcome = await failureOutcome(execution, error, {
        retry: this.retryFor(task.taskType), exposeErrorMessages: o.exposeErrorMessages,
        checkLease: (lease) => this.store.renewLeases({ leases: [lease], leaseMs: o.leaseMs }),
      }).catch((checkError: unknown) => {
        this.emit('error', { operation: 'renewLeases', error: checkError });
        return null; // cannot confirm the lease: leave the task to lease expiry
      });
    }
    if (execution.timer) clearTimeout(execution.timer);
    const durationMs = Date.now() - execution.startedAt;
    if (o.slowTaskThresholdMs > 0 && durationMs > o.slowTaskThresholdMs) {
      this.emit('slow', { task, durationMs, thresholdMs: o.slowTaskThresholdMs });
    }
    // The slot stays taken until the handler really stops, even after a cancel or timeout raced it.
    void execution.handlerSettled.then(() => {
      this.active -= 1;
      this.settleIfDone(execution);
      this.startBuffered();
      // Claim the next batch while this one's outcomes are still being written: the two overlap. Not
      // when the last claim came back short: then the queue is empty or the limits bind, and a claim
      // before these outcomes free their slots would find nothing (written() claims after them).
      if (this.buffer.length === 0 && !this.lastClaimShort) this.requestClaim();
    });
    if (outcome) {
      execution.phase = 'finishing';
      this.writing += 1;
      this.writer.enqueue(outcome, execution);
    } else {
      // Nothing to write (the lease is gone): the slot is free now.
      execution.phase = 'done';
      this.settleIfDone(execution);
      this.requestClaim();
    }
  }

  /** The worker's backoff; a definition's retry merged over it; an operator's policy base delay over both. */
  private retryFor(taskType: string): RetryOptions {
    const definition = this.registry.get(taskType)?.retry ?? {};
    const base = this.policyBaseDelay.get(taskType) ?? this.policyBaseDelay.get(GLOBAL_POLICY_KEY);
    const retry = { ...this.options.retry, ...definition, ...(base === undefined ? {} : { baseDelayMs: base }) };
    return { ...retry, maxDelayMs: Math.max(retry.maxDelayMs, retry.baseDelayMs) };
  }

  /** Keeps this worker's row in the registry fresh and re-reads the policies (for retry delays). */
  private async refreshRegistration(): Promise<void> {
    if (this.state !== 'running' && this.state !== 'stopping') return;
    try {
      await this.store.registerWorker({ worker: { workerId: this.workerId, host: hostname(), pid: process.pid, taskTypes: this.taskTypes, concurrency: this.options.concurrency } });
      const policies = await this.store.listPolicies();
      this.policyBaseDelay = new Map(policies.filter((p) => p.retryBaseDelayMs !== null)
        .map((p) => [p.policyKey === GLOBAL_POLICY_KEY ? GLOBAL_POLICY_KEY : p.taskType ?? p.policyKey, p.retryBaseDelayMs!]));
    } catch (error) {
      this.emit('error', { operation: 'registerWorker', error });
    }
  }

  private armTimeout(execution: Execution): void {
    const limit = execution.definition.timeoutMs ?? this.options.maxExecutionMs;
    const deadlines = [
      execution.task.deadlineAt?.getTime() ?? Infinity,
      limit > 0 ? execution.startedAt + limit : Infinity,
    ];
    const at = Math.min(...deadlines);
    if (at === Infinity) return;
    const message = at === deadlines[0] ? 'task passed its deadline' : `attempt exceeded its maximum execution time of ${limit} ms`;
    execution.timer = setTimeout(() => execution.abort('TIMEOUT', message), Math.max(0, at - Date.now()));
  }

  private written(item: PendingOutcome<Execution>, applied: boolean, claimedAlong: boolean): void {
    const execution = item.token;
    const { outcome } = item;
    execution.phase = 'done';
    this.writing -= 1;
    const durationMs = Date.now() - execution.startedAt;
    if (!applied) this.markLeaseLost(execution, 'write');
    else this.announce(execution.task, outcome, durationMs);
    this.settleIfDone(execution);
    // A claim that went with this write already counted the slot it freed.
    if (!claimedAlong) this.requestClaim();
  }

  private announce(task: Task, outcome: AttemptOutcome, durationMs: number): void {
    switch (outcome.kind) {
      case 'SUCCESS':
      case 'PARTIAL_SUCCESS':
        // The common case, many thousand times a second: build the event only for a listener.
        if (this.listening('completed')) this.emit('completed', { task: { ...task, status: outcome.kind }, status: outcome.kind, durationMs });
        return;
      case 'RETRY':
        this.emit('failed', { task: { ...task, status: 'RETRY_WAIT' }, failure: outcome.failure, durationMs, willRetry: true });
        this.emit('retryScheduled', { task: { ...task, status: 'RETRY_WAIT' }, failure: outcome.failure, retryDelayMs: outcome.retryDelayMs });
        return;
      case 'FAILED': {
        const failedTask: Task = { ...task, status: 'FAILED', lastErrorCode: outcome.failure.errorCode };
        if (outcome.failure.errorCode === 'TIMEOUT') this.emit('timedOut', { task: failedTask, durationMs });
        this.emit('failed', { task: failedTask, failure: outcome.failure, durationMs, willRetry: false });
        this.emit('deadLettered', { task: failedTask, failure: outcome.failure });
        return;
      }
      case 'CANCELLED':
        this.emit('cancelled', { task: { ...task, status: 'CANCELLED' }, durationMs });
        return;
      case 'ABANDONED':
        this.emit('released', { task: { ...task, status: 'QUEUED' }, started: true });
    }
  }

  /** Forgets an execution once its handler has stopped and nothing more will be written. */
  private settleIfDone(execution: Execution): void {
    if (execution.phase !== 'done') return;
    // Usually the handler stopped long ago: forget it now, so that the claim written() asks for next
    // counts the room it frees (one claim per batch of outcomes, not one more per outcome).
    if (execution.handlerIdle) {
      this.forget(execution);
      return;
    }
    void execution.handlerSettled.then(() => {
      this.forget(execution);
      this.requestClaim();
    });
  }

  private forget(execution: Execution): void {
    if (this.held.get(execution.task.id) === execution) this.held.delete(execution.task.id);
    this.notifyIdle();
  }

  // ---- leases ---------------------------------------------------------------

  private async saveProgress(execution: Execution, progress: NonNullable<Task['progress']>): Promise<boolean> {
    const ok = await this.store.saveProgress({ lease: execution.lease, progress });
    if (ok) this.emit('progress', { task: execution.task, progress });
    else this.markLeaseLost(execution, 'write');
    return ok;
  }

  private async checkLease(execution: Execution): Promise<void> {
    const result = await this.store.renewLeases({ leases: [execution.lease], leaseMs: this.options.leaseMs });
    this.applyRenewal(result, Date.now());
  }

  private async heartbeat(): Promise<void> {
    const live = [...this.held.values()].filter((e) => (e.phase === 'buffered' || e.phase === 'running') && !e.leaseLost);
    if (live.length === 0) return;
    try {
      const result = await this.store.renewLeases({ leases: live.map((e) => e.lease), leaseMs: this.options.leaseMs });
      const lost = this.applyRenewal(result, Date.now());
      this.emit('heartbeat', { renewed: result.renewed.length, cancelRequested: result.cancelRequested.length, lost });
    } catch (error) {
      this.emit('error', { operation: 'renewLeases', error });
      // Unreachable for longer than a lease: the lease is surely gone, so stop the work.
      const now = Date.now();
      for (const execution of live) {
        if (now - execution.lastRenewedAt > this.options.leaseMs) this.markLeaseLost(execution, 'unreachable');
      }
    }
  }

  /** Applies a renewal's answer; returns how many leases were really lost (not merely finished meanwhile). */
  private applyRenewal(result: { renewed: string[]; cancelRequested: string[]; lost: string[] }, now: number): number {
    for (const id of [...result.renewed, ...result.cancelRequested]) {
      const execution = this.held.get(id);
      if (execution) execution.lastRenewedAt = now;
    }
    for (const id of result.cancelRequested) this.cancelLocally(id);
    let lost = 0;
    for (const id of result.lost) {
      const execution = this.held.get(id);
      // An outcome written meanwhile also ends the lease: that is not a loss.
      if (execution && (execution.phase === 'buffered' || execution.phase === 'running')) {
        lost += 1;
        this.markLeaseLost(execution, 'renewal');
      }
    }
    return lost;
  }

  private markLeaseLost(execution: Execution, reason: 'renewal' | 'write' | 'unreachable'): void {
    if (execution.leaseLost) return;
    execution.leaseLost = true;
    this.emit('leaseLost', { task: execution.task, reason });
    if (execution.phase === 'buffered') {
      this.dropBuffered(execution);
      return;
    }
    execution.abort('LEASE_LOST', 'lease lost: another worker may own this task now');
  }

  private cancelLocally(taskId: string): void {
    const execution = this.held.get(taskId);
    if (!execution || execution.leaseLost) return;
    if (execution.phase === 'buffered') {
      // Never started: releasing a CANCEL_REQUESTED task ends it CANCELLED.
      this.dropBuffered(execution);
      void this.store.releaseTasks({ leases: [execution.lease] }).then((released) => {
        if (released === 1) this.emit('cancelled', { task: { ...execution.task, status: 'CANCELLED' }, durationMs: 0 });
      }, (error: unknown) => this.emit('error', { operation: 'releaseTasks', error }));
      return;
    }
    execution.abort('CANCELLED', 'cancellation requested');
  }

  private dropBuffered(execution: Execution): void {
    const index = this.buffer.indexOf(execution);
    if (index >= 0) this.buffer.splice(index, 1);
    execution.phase = 'done';
    this.held.delete(execution.task.id);
  }

  private onStoreEvent(event: StoreEvent): void {
    if (event.kind === 'submitted') {
      if (event.taskTypes.length === 0 || event.taskTypes.some((type) => this.registry.has(type))) this.requestClaim();
      return;
    }
    for (const id of event.taskIds) this.cancelLocally(id);
  }

  private async recover(): Promise<void> {
    if (this.state !== 'running') return;
    try {
      const result = await this.store.recover({ batchSize: this.options.recoveryBatchSize });
      this.emit('recoveryBatch', { result });
    } catch (error) {
      this.emit('error', { operation: 'recover', error });
    }
  }

  // ---- shutdown ---------------------------------------------------------------

  private idleWaiters: (() => void)[] = [];

  private notifyIdle(): void {
    if (this.active > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private waitForHandlers(timeoutMs: number): Promise<boolean> {
    if (this.active === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private async releaseBuffered(): Promise<void> {
    const buffered = this.buffer.splice(0);
    if (buffered.length === 0) return;
    for (const execution of buffered) {
      execution.phase = 'done';
      this.held.delete(execution.task.id);
    }
    try {
      await this.store.releaseTasks({ leases: buffered.map((e) => e.lease) });
      for (const execution of buffered) this.emit('released', { task: { ...execution.task, status: 'QUEUED' }, started: false });
    } catch (error) {
      this.emit('error', { operation: 'releaseTasks', error }); // their leases expire and recovery requeues them
    }
  }

  private async shutdown(): Promise<void> {
    if (this.state === 'running') this.state = 'stopping';
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.unsubscribe?.();
    await this.claiming;
    await this.releaseBuffered();
    const o = this.options;
    if (!(await this.waitForHandlers(o.shutdownGraceMs))) {
      for (const execution of this.held.values()) {
        if (execution.phase === 'running') execution.abort('SHUTDOWN', 'worker is shutting down');
      }
      await this.waitForHandlers(o.shutdownAbortWaitMs);
    }
    await Promise.race([this.writer.drain(), new Promise((resolve) => setTimeout(resolve, o.shutdownAbortWaitMs).unref())]);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
    // A refresh still in flight would write the row back after we delete it.
    await this.registering;
    await this.store.unregisterWorker({ workerId: this.workerId }).catch((error: unknown) => this.emit('error', { operation: 'unregisterWorker', error }));
    this.state = 'stopped';
    this.emit('stopped', { workerId: this.workerId });
  }
}

export function createWorker(options: WorkerOptions): Worker {
  return new Worker(options);
}

export { TaskAbortedError };
