/**
 * The test kit (tasklease/testing): an in-memory SQLite store with the schema
 * migrated, a client, a real worker and one TestClock driving all three.
 * Nothing runs by itself: runTask() runs one task through the worker's real
 * execute path (schema, validate, the handler, retries with backoff, outcome
 * writes), drain() runs whatever is due, and enqueued()/assertEnqueued() read
 * what was submitted. See the README's "Testing your handlers".
 */
import { normalizeSchedule } from '../core/schedule.js';
import type { TaskDefinition } from '../core/definition.js';
import { InvalidOptionsError, InvalidStateError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { isTerminal, type TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import { checkKnownKeys } from '../core/validate.js';
import { createClient, type TaskLeaseClient } from '../client/client.js';
import { SqliteStore } from '../sqlite.js';
import type { Announcer, WorkerEvents } from '../worker/events.js';
import { PeriodicScheduler } from '../worker/periodic-scheduler.js';
import { createWorker, type Worker } from '../worker/worker.js';
import { TestClock } from './clock.js';
import { ClaimGate } from './gate.js';
import { enqueuedError, matchesFilter, matchesSubset, notEnqueuedError, type EnqueuedFilter } from './match.js';
import type { DrainOptions, RanAttempt, RunOptions, RunTaskOptions, TaskRun, TestKitOptions } from './types.js';
import { AttemptWaits, dueInClaimOrder } from './waits.js';

/** run() gives up on a task that snoozes (or is retried) this often: it would never end. */
const MAX_RUNS = 1000;
const KIT_OPTIONS = ['tasks', 'startAt', 'schedules', 'worker', 'client', 'middleware', 'path'] as const;
const WAITING: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT'];

export class TestKit {
  /** Drives every time the kit's parts read: the store's wall clock, the worker's timers, the client's deadline check. */
  readonly clock: TestClock;
  readonly store: SqliteStore;
  readonly client: TaskLeaseClient;
  readonly worker: Worker;
  private readonly gate: ClaimGate;
  private readonly waits = new AttemptWaits();
  private readonly scheduler: PeriodicScheduler;
  private readonly schedulerErrors: unknown[] = [];
  private readonly types: string[];
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  /** Use createTestKit(): it migrates the schema and starts the worker. */
  constructor(options: TestKitOptions) {
    checkKnownKeys('TestKit', options, KIT_OPTIONS);
    if (!Array.isArray(options.tasks) || options.tasks.length === 0)
      throw new InvalidOptionsError('TestKit', 'tasks', 'must list at least one task definition');
    this.clock = new TestClock(options.startAt ?? Date.now());
    const wall = (): number => this.clock.wallNow();
    this.store = new SqliteStore({ path: options.path ?? ':memory:', clock: wall });
    const middleware = options.middleware ?? [];
    this.client = createClient({ ...options.client, store: this.store, tasks: options.tasks, clock: wall, middleware });
    this.gate = new ClaimGate(this.store, (task) => this.waits.expect(task.id));
    this.worker = createWorker({
      workerId: 'tasklease-testkit',
      logger: false,
      cancelCheckIntervalMs: 0,
      progressFlushIntervalMs: 0,
      shutdownGraceMs: 0,
      shutdownAbortWaitMs: 0,
      ...options.worker,
      // Deterministic backoff unless the test asks for jitter (a definition's own retry options still win).
      retry: { jitter: 0, ...options.worker?.retry },
      // The kit runs the sweep and the schedules itself (drain, advance), at the times the test sets.
      recoveryIntervalMs: 0,
      scheduleRefreshMs: 0,
      concurrency: 1,
      prefetch: 0,
      adaptiveIntervalMs: 0,
      store: this.gate.store,
      tasks: options.tasks,
      clock: this.clock,
      middleware,
    });
    this.types = this.worker.taskTypes;
    for (const name of ATTEMPT_ENDS) this.worker.on(name, (event: { task: Task }) => this.waits.ended(event.task.id));
    const announcer: Announcer = {
      emit: (name, event) => {
        if (name === 'error') this.schedulerErrors.push((event as WorkerEvents['error']).error);
      },
      listening: () => false,
      storeAnswered: () => undefined,
    };
    const schedules = (options.schedules ?? []).map((schedule) => normalizeSchedule(schedule));
    this.scheduler = new PeriodicScheduler(this.store, this.clock, announcer, { scheduleRefreshMs: 60_000, schedules });
  }

  /** Migrates the in-memory schema, saves the declared schedules and starts the worker (createTestKit calls it). */
  async start(): Promise<this> {
    await this.store.migrate();
    await this.runSchedules();
    this.worker.start();
    return this;
  }

  /** The kit's wall time. */
  now(): Date {
    return this.clock.date();
  }

  /** Moves time forward by `ms` (timers fire on the way), then submits the schedules' due ticks; answers the tasks they created. */
  async advance(ms: number): Promise<Task[]> {
    if (!Number.isFinite(ms) || ms < 0) throw new InvalidStateError(`advance: ms must be a finite number >= 0, got ${ms}`);
    await this.moveTo(this.clock.wallNow() + ms);
    return this.runSchedules();
  }

  /** Moves the wall clock forward to `date` (never back), then submits the schedules' due ticks. */
  async setTime(date: Date): Promise<Task[]> {
    const target = date.getTime();
    if (!Number.isFinite(target) || target < this.clock.wallNow()) {
      throw new InvalidStateError(`setTime: ${String(date)} is not a time at or after the kit's ${this.now().toISOString()}; time only moves forward`);
    }
    await this.moveTo(target);
    return this.runSchedules();
  }

  /**
   * Moves the clock to `wallMs`. While a handler holds a lease, in steps of one heartbeat interval with a turn of the
   * event loop after each: a heartbeat's renewal is written at once (SQLite answers synchronously) but confirmed in
   * the promise after it, and a long jump in one step would pass the lease's local deadline before any confirmation
   * (the worker would give the lease up, as it must when its database stops answering).
   */
  private async moveTo(wallMs: number): Promise<void> {
    const step = this.worker.options.heartbeatIntervalMs;
    while (this.clock.wallNow() < wallMs) {
      const stats = this.worker.stats();
      const holding = stats.active + stats.buffered > 0;
      this.clock.advance(holding ? Math.min(step, wallMs - this.clock.wallNow()) : wallMs - this.clock.wallNow());
      if (holding) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Submits one task through the client, then runs it (run()). */
  async runTask<P, Result = unknown>(type: TaskDefinition<P> | string, payload: P, options: RunTaskOptions = {}): Promise<TaskRun<Result>> {
    const { submit, ...run } = options;
    const { task } = await this.client.submit(type, payload, submit ?? {});
    return this.run<Result>(task.id, run);
  }

  /**
   * Runs one existing task through the worker, attempt after attempt (moving the clock to each retry unless
   * `advanceTime` is false), until it ends or waits for something the kit does not run: its children (BLOCKED), an
   * operator (PAUSED), or, without advanceTime, a time still to come. Tasks it submits are not run: read them with
   * enqueued(), run them with run() or drain().
   */
  run<Result = unknown>(taskId: string, options: RunOptions = {}): Promise<TaskRun<Result>> {
    return this.serial(async () => {
      for (let runs = 0; ; runs += 1) {
        if (runs === MAX_RUNS) throw new InvalidStateError(`run: task ${taskId} still waits after ${MAX_RUNS} attempts and snoozes`);
        const task = await this.task(taskId);
        if (!WAITING.includes(task.status)) break;
        if (task.availableAt.getTime() > this.clock.wallNow()) {
          if (options.advanceTime === false) break;
          await this.setTime(task.availableAt);
        }
        await this.store.recover({ batchSize: 1000 }); // a deadline passed on the way ends it here
        if ((await this.task(taskId)).status === task.status) await this.attemptOf(task);
      }
      return this.report<Result>(taskId);
    });
  }

  /** Runs every due task, one attempt at a time in claim order (priority first), until none is due; answers the attempts it ran. */
  drain(options: DrainOptions = {}): Promise<RanAttempt[]> {
    const maxAttempts = options.maxAttempts ?? 1000;
    return this.serial(async () => {
      const ran: RanAttempt[] = [];
      for (;;) {
        await this.runSchedules();
        await this.store.recover({ batchSize: 1000 });
        const claimed = await this.claimAndRun(this.types);
        if (claimed) {
          ran.push(claimed);
          if (ran.length >= maxAttempts) throw new InvalidStateError(`drain: ran ${maxAttempts} attempts and tasks are still due (maxAttempts)`);
          continue;
        }
        const next = options.advanceTime ? await this.nextDueAt() : null;
        if (next === null) return ran;
        await this.moveTo(next.getTime());
      }
    });
  }

  /** Tasks submitted so far (any status), oldest first; of one type and matching `filter` if given. `P`: the payload type you expect. */
  async enqueued<P = unknown>(taskType?: string, filter?: EnqueuedFilter): Promise<Task<P>[]> {
    const tasks: Task[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.store.listTasks({ scope: Scope.global(), taskType: taskType ?? null, limit: 1000, cursor });
      tasks.push(...page.tasks.map((task) => this.client.reveal(task)));
      cursor = page.nextCursor;
    } while (cursor !== null);
    const matching = tasks.filter((task) => matchesFilter(task, filter));
    return matching.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1)) as Task<P>[];
  }

  /** The first task of `taskType` whose payload holds `payload` (a subset match); throws an AssertionError listing what was there if none does. */
  async assertEnqueued<P = unknown>(taskType: string, payload: unknown = {}): Promise<Task<P>> {
    const candidates = await this.enqueued(taskType);
    const found = candidates.find((task) => matchesSubset(task.payload, payload));
    if (found) return found as Task<P>;
    const types = [...new Set((await this.enqueued()).map((task) => task.taskType))];
    throw notEnqueuedError(taskType, payload, candidates, types);
  }

  /** Throws an AssertionError if a task of `taskType` whose payload holds `payload` was submitted. */
  async assertNotEnqueued(taskType: string, payload: unknown = {}): Promise<void> {
    const matched = (await this.enqueued(taskType)).filter((task) => matchesSubset(task.payload, payload));
    if (matched.length > 0) throw enqueuedError(taskType, payload, matched);
  }

  /** Stops the worker (a handler still running is aborted) and closes the store. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.worker.stop();
    this.gate.close();
    this.waits.rejectAll(new InvalidStateError('the test kit closed while a task ran'));
    await this.store.close();
  }

  /** One attempt of `task`, which must be the first due task of its type (the claim takes that one). */
  private async attemptOf(task: Task): Promise<void> {
    const due = dueInClaimOrder(
      (await this.store.listTasks({ scope: Scope.global(), taskType: task.taskType, status: WAITING, limit: 1000 })).tasks,
      this.clock.wallNow(),
    );
    if (due.length === 0) return; // its deadline passed: recover() ended it
    if (due[0]!.id !== task.id) {
      throw new InvalidStateError(
        `run: task ${due[0]!.id} of type ${task.taskType} is due before task ${task.id} (priority, then due time, then submit order), and a claim takes it first; run or drain it first`,
      );
    }
    const ran = await this.claimAndRun([task.taskType]);
    if (ran === null) {
      throw new InvalidStateError(`run: the worker could not claim task ${task.id}: its type is disabled by a policy, or a concurrency or rate limit binds`);
    }
  }

  /** Lets the worker claim one due task of `types` and waits until its attempt has ended; null: nothing was claimed. */
  private async claimAndRun(types: readonly string[]): Promise<RanAttempt | null> {
    const [claimed] = await this.gate.claimOne(types);
    if (!claimed) return null;
    await this.waits.wait(claimed.id);
    const task = await this.task(claimed.id);
    const attempt = (await this.store.listAttempts({ taskId: claimed.id })).find((record) => record.attempt === claimed.attemptCount);
    return {
      taskId: task.id,
      taskType: task.taskType,
      attempt: claimed.attemptCount,
      outcome: attempt?.outcome ?? null,
      errorCode: attempt?.errorCode ?? null,
      task,
    };
  }

  private async report<Result>(taskId: string): Promise<TaskRun<Result>> {
    const task = await this.task(taskId);
    const attempts = await this.store.listAttempts({ taskId });
    const failures = (await this.store.listFailures({ taskId })).sort((a, b) => a.failedAt.getTime() - b.failedAt.getTime() || a.attempt - b.attempt);
    const last = failures.at(-1);
    const succeeded = task.status === 'SUCCESS' || task.status === 'PARTIAL_SUCCESS';
    return {
      task,
      status: task.status,
      result: succeeded ? (task.result as Result) : undefined,
      error: !succeeded && last && isTerminal(task.status) ? { code: last.errorCode, message: last.message, retryable: last.retryable } : null,
      attempts,
      failures,
    };
  }

  /** The earliest due time of a waiting task of the kit's types after now; null: none. */
  private async nextDueAt(): Promise<Date | null> {
    const now = this.clock.wallNow();
    const waiting = (await this.enqueued(undefined, { status: WAITING })).filter((task) => this.types.includes(task.taskType));
    const later = waiting.map((task) => task.availableAt.getTime()).filter((at) => at > now);
    return later.length === 0 ? null : new Date(Math.min(...later));
  }

  private async runSchedules(): Promise<Task[]> {
    const { submitted } = await this.scheduler.runDue();
    const [error] = this.schedulerErrors.splice(0);
    if (error !== undefined) throw error;
    return submitted;
  }

  /** The task's row, its payload and result decoded by the kit's middleware. */
  private async task(id: string): Promise<Task> {
    const task = await this.store.getTask({ id, scope: Scope.global() });
    if (!task) throw new InvalidStateError(`no task ${id}`);
    return this.client.reveal(task);
  }

  /** One run or drain at a time: the worker claims for one of them only. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new InvalidStateError('the test kit is closed'));
    const result = this.queue.then(work);
    this.queue = result.catch(() => undefined);
    return result;
  }
}

/** The worker events that end an attempt (once written). */
const ATTEMPT_ENDS = ['completed', 'failed', 'cancelled', 'released', 'snoozed', 'fannedOut', 'leaseLost'] as const;

/** A started test kit: in-memory SQLite, migrated; a client; a worker that runs tasks only when asked; a TestClock. Close it after the test. */
export async function createTestKit(options: TestKitOptions): Promise<TestKit> {
  const kit = new TestKit(options);
  try {
    return await kit.start();
  } catch (error) {
    await kit.close().catch(() => undefined);
    throw error;
  }
}
