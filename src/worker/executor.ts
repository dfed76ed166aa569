/**
 * Runs executions: starts waiting ones while slots are free, runs the
 * handler under its timeout with a context, asks outcome.ts what the
 * attempt's outcome is and hands it to the outcome writer. A slot stays taken
 * until the handler really stops, even after a cancel or timeout raced it.
 */
import { wallNow, type Clock } from '../core/clock.js';
import { PayloadInvalidError } from '../core/errors.js';
import { checkChildren, checkSnooze, isAwaitChildren, isSnooze, type TaskAwaitChildren, type TaskResult, type TaskSnooze } from '../core/definition.js';
import { FanOut, relatedTasks } from './fan-out.js';
import { runSchema } from '../core/standard-schema.js';
import type { AttemptOutcome } from '../store/types.js';
import { ExecutionContext, type ContextOptions, type ProgressSink } from './context.js';
import type { Announcer } from './events.js';
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { ResolvedWorkerOptions } from './options.js';
import { failureOutcome, successOutcome } from './outcome.js';
import type { PolicyCache } from './policy-cache.js';
import { completeInTransaction, completionCommitted } from './tx-complete.js';
import { StepKeeper } from './steps.js';
import { takeFence } from './fence.js';
import { LogKeeper } from './logs.js';
import { startExecuteSpan } from '../observe/tracing.js';
import type { BatchGatherer } from './batch-gatherer.js';
import { SandboxPool } from './sandbox/pool.js';
import type { HandlerReturn, MiddlewareStack } from '../client/middleware.js';

/** The defaults a client applies to a submit, for the children a fan-out makes. */
const FAN_OUT_LIMITS = { maxPayloadBytes: 1024 * 1024, defaultMaxAttempts: 3 };
const COMMITTED = Symbol('committed in the handler transaction');
/** A fan-out written by the executor itself (fan-out.ts): like COMMITTED, its outcome is execution.completion. */
const FANNED_OUT = Symbol('fan-out written');

export interface ExecutorHooks {
  /** An outcome to write (the execution is finishing). */
  write(outcome: AttemptOutcome, execution: Execution): void;
  /** The handler's own transaction committed this outcome (ctx.complete): nothing to write, only to tell. */
  committed(outcome: AttemptOutcome, execution: Execution): void;
  /** A handler stopped and its slot is free; `forgotten`: its execution had already ended (nothing will claim for its room). */
  slotFreed(forgotten: boolean): void;
  /** An execution ended with nothing to write (its lease is gone): its room is free now. */
  nothingToWrite(): void;
}

export class Executor {
  constructor(
    private readonly options: ResolvedWorkerOptions,
    private readonly table: ExecutionTable,
    private readonly leases: LeaseKeeper,
    private readonly policies: PolicyCache,
    private readonly clock: Clock,
    private readonly events: Announcer,
    private readonly hooks: ExecutorHooks,
    /** Runs the handlers of batch types (executeBatch) one call for many executions. */
    private readonly batches: BatchGatherer,
  ) {
    const stack = options.middleware;
    const encode = (taskType: string, value: unknown): unknown => stack.encode('result', taskType, value);
    // No encode hook: no encoder, and a result is serialized once (outcome.ts).
    this.resultEncoder = () => (stack.hasCodec ? encode : undefined);
    const services = { store: options.store, table, leases, resultEncoder: this.resultEncoder };
    const steps = new StepKeeper(options.store, options, leases, events);
    const logs = new LogKeeper(options.store, { ...options, clock }, events);
    this.sink = {
      save: (execution, progress) => leases.saveProgress(execution, progress),
      pollCancellation: (execution) => leases.check(execution),
      // The lines logged so far go first: once the handler's transaction commits, the attempt's fence is gone.
      complete: async (execution, transaction, result) => {
        await logs.flush(execution, false, true);
        return completeInTransaction(execution, services, transaction, result);
      },
      dependencies: (taskId) => relatedTasks(options.store, taskId, stack),
      step: (execution, name, fn) => steps.step(execution, name, fn),
      fence: (execution) => takeFence(execution, leases),
      log: (execution, level, message, fields) => logs.log(execution, level, message, fields),
      flushLogs: (execution, final) => logs.flush(execution, final),
    };
    this.fanOut = new FanOut(options.store, options.tasks, { ...FAN_OUT_LIMITS, encode: (taskType, payload) => stack.encode('payload', taskType, payload) });
    // A lost lease's thread is gone within half the safety margin: before the lease can have ended in the database.
    this.sandboxes = new SandboxPool({ lostLeaseGraceMs: leases.safetyMarginMs / 2 });
    this.contextOptions = {
      flushIntervalMs: options.progressFlushIntervalMs,
      flushThreshold: options.progressFlushThreshold,
      cancelCheckIntervalMs: options.cancelCheckIntervalMs,
      clock,
    };
  }

  // One sink and one set of context options for every execution: nothing per task but the context itself.
  private readonly sink: ProgressSink<Execution>;
  private readonly contextOptions: ContextOptions;
  private readonly fanOut: FanOut;
  /** The encoder of a success's result (the middleware's encode hooks), or none when no middleware encodes. */
  private readonly resultEncoder: () => ((taskType: string, value: unknown) => unknown) | undefined;
  /** The threads of sandboxed types (sandbox/pool.ts), made on their first task. */
  private readonly sandboxes: SandboxPool;

  /** Ends the sandboxes' threads (the worker's stop, once its handlers have stopped or been given up). */
  closeSandboxes(): Promise<void> {
    return this.sandboxes.close();
  }

  /** Starts waiting executions while slots are free; `accepting` false starts none. */
  startWaiting(accepting: boolean): void {
    if (!accepting) return;
    for (let execution = this.table.startNext(this.options.concurrency); execution; execution = this.table.startNext(this.options.concurrency)) {
      void this.run(execution);
    }
  }

  private async run(execution: Execution): Promise<void> {
    const o = this.options;
    const { task } = execution;
    execution.startedAt = this.clock.now();
    this.table.runningHandlers += 1;
    const context = new ExecutionContext(task, execution, this.sink, this.contextOptions);
    execution.context = context;
    execution.span = startExecuteSpan(task, o.workerId);
    this.armTimeout(execution);
    if (this.events.listening('started')) this.events.emit('started', { task, queueWaitMs: Math.max(0, wallNow(this.clock) - task.createdAt.getTime()) });
    const outcome = await this.outcomeOf(execution, context);
    this.clock.clearTimeout(execution.timer);
    const durationMs = this.clock.now() - execution.startedAt;
    if (o.slowTaskThresholdMs > 0 && durationMs > o.slowTaskThresholdMs) this.events.emit('slow', { task, durationMs, thresholdMs: o.slowTaskThresholdMs });
    void execution.handlerSettled.then(() => this.handlerStopped(execution));
    const written = outcome === COMMITTED || outcome === FANNED_OUT;
    execution.span?.end(...spanEnding(written ? execution.completion : outcome));
    if (written) {
      this.hooks.committed(execution.completion!, execution);
    } else if (outcome && (execution.state === 'running' || execution.state === 'committing')) {
      this.table.moveTo(execution, 'finishing');
      this.hooks.write(outcome, execution);
    } else {
      if (execution.state === 'running' || execution.state === 'committing') this.table.moveTo(execution, 'lost'); // the lease could not be confirmed
      this.table.forgetIfSettled(execution);
      this.hooks.nothingToWrite();
    }
  }

  /** COMMITTED: ctx.complete(tx) wrote it and the handler's transaction committed; null: nothing may be written. */
  private async outcomeOf(execution: Execution, context: ExecutionContext<Execution>): Promise<AttemptOutcome | null | typeof COMMITTED | typeof FANNED_OUT> {
    try {
      const result = await runHandler(execution, context, this.batches, this.sandboxes, this.options.middleware);
      await context.settle();
      if (execution.state === 'committing' && (await this.committedInTransaction(execution))) return COMMITTED;
      if (isAwaitChildren(result)) return await this.writeFanOut(execution, result);
      return successOutcome(execution, result, this.resultEncoder());
    } catch (error) {
      await context.settle();
      if (execution.state === 'committing' && (await this.committedInTransaction(execution))) return COMMITTED;
      const decision = {
        retry: this.policies.retryFor(execution.task.taskType),
        exposeErrorMessages: this.options.exposeErrorMessages,
        classifier: this.options.failureClassifier,
      };
      return failureOutcome(execution, error, decision);
    }
  }

  /**
   * A fan-out is its attempt's end, written here in one fenced transaction (children, edges, the task BLOCKED):
   * FANNED_OUT when it applied, null when the lease was gone. A child the definitions refuse fails the attempt.
   */
  private async writeFanOut(execution: Execution, result: TaskAwaitChildren): Promise<typeof FANNED_OUT | null> {
    const children = await this.fanOut.prepare(execution, result);
    if (execution.state !== 'running') return null;
    this.table.moveTo(execution, 'finishing');
    const outcome = await this.fanOut.write(execution, children, result.onChildFailure);
    if (outcome === null) return null;
    execution.completion = outcome;
    return FANNED_OUT;
  }

  /** Only for an execution in state committing (no extra await on the common path). */
  private committedInTransaction(execution: Execution): Promise<boolean> {
    return completionCommitted(execution, this.options.store, (error) => this.events.emit('error', { operation: 'getTask', error }));
  }

  private handlerStopped(execution: Execution): void {
    this.table.handlerStopped();
    const forgotten = this.table.forgetIfSettled(execution);
    this.hooks.slotFreed(forgotten);
  }

  private armTimeout(execution: Execution): void {
    const limit = execution.definition.timeoutMs ?? this.options.maxExecutionMs;
    const deadlineIn = execution.task.deadlineAt ? execution.task.deadlineAt.getTime() - wallNow(this.clock) : Infinity;
    const limitIn = limit > 0 ? limit : Infinity;
    const inMs = Math.min(deadlineIn, limitIn);
    if (inMs === Infinity) return;
    const message = inMs === deadlineIn ? 'task passed its deadline' : `attempt exceeded its maximum execution time of ${limit} ms`;
    execution.timer = this.clock.setTimeout(() => execution.abort('TIMEOUT', message), Math.max(0, inMs));
  }
}

/**
 * Decodes the payload (the middleware's decode hooks), passes it through the execute middleware to the type's
 * schema, validate and execute (or a batch: batch-gatherer.ts), raced against the signal except on shutdown. A
 * batch type's execution reserves its place at once (synchronously, as its slot is taken), so that its batch waits
 * for it while its payload is checked; one that never joins (a refused payload, a middleware that answered itself)
 * withdraws.
 */
async function runHandler(
  execution: Execution,
  context: ExecutionContext<Execution>,
  batches: BatchGatherer,
  sandboxes: SandboxPool,
  middleware: MiddlewareStack,
): Promise<TaskResult | TaskSnooze | TaskAwaitChildren> {
  const { definition, task } = execution;
  const batched = batches.handles(definition);
  if (batched) batches.reserve(execution);
  let joined = false;
  const run = async (given: unknown): Promise<HandlerReturn> => {
    let payload = given;
    if (definition.schema) {
      const checked = await runSchema(definition.schema, given);
      if (!checked.ok) throw new PayloadInvalidError(task.taskType, checked.issues);
      payload = checked.value;
    }
    execution.payload = payload;
    if (definition.validate) await definition.validate(payload, context);
    context.throwIfAborted();
    joined = true;
    return execute(execution, context, payload, batched ? batches : null, sandboxes);
  };
  let returned: HandlerReturn;
  try {
    const payload = middleware.hasCodec ? middleware.decode('payload', task.taskType, task.payload) : task.payload;
    returned = middleware.hasExecute ? await middleware.runExecute({ context, definition, payload }, run) : await run(payload);
  } finally {
    if (batched && !joined) batches.withdraw(execution); // it fails (or ends) alone, never passed to executeBatch
  }
  const result = returned ?? { status: 'SUCCESS' };
  if (isSnooze(result))
    checkSnooze(result.delayMs); // a hand-made { status: 'SNOOZED' } fails the attempt if its delay is bad
  else if (isAwaitChildren(result)) checkChildren(result.children);
  // A completion made in the handler's transaction was validated before it was written.
  else if (definition.validateCompletion && execution.state !== 'committing') await definition.validateCompletion(result, execution.payload, context);
  return result;
}

/** The handler itself (or its batch's shared call, or its sandbox), raced against the signal; its slot's bookkeeping. */
async function execute(
  execution: Execution,
  context: ExecutionContext<Execution>,
  payload: unknown,
  batches: BatchGatherer | null,
  sandboxes: SandboxPool,
): Promise<HandlerReturn> {
  const { definition, span } = execution;
  const seat = batches ? batches.join(execution, payload) : null;
  // A sandboxed handler runs in a thread of its own (sandbox/pool.ts): its work settles once that thread answered or is gone.
  const call = definition.sandbox
    ? () => sandboxes.run(execution, context, payload) as Promise<HandlerReturn>
    : () => definition.execute!(context, payload) as Promise<HandlerReturn>;
  const work = seat?.result ?? Promise.resolve().then(() => (span ? span.run(call) : call()));
  execution.handlerIdle = false;
  const settle = (): void => {
    execution.handlerIdle = true;
  };
  // A batch's task keeps its slot until the shared call has returned, even when its own part ended earlier.
  execution.handlerSettled = seat ? seat.settled.then(settle) : work.then(settle, settle);
  const result = await raceAbort(work, execution);
  if (execution.abortReason && execution.abortReason.code !== 'SHUTDOWN') throw execution.abortReason;
  return result;
}

/** Resolves with the handler unless the signal fires first. A shutdown abort waits for the handler: its task is handed back only once it has stopped. */
function raceAbort<T>(work: Promise<T>, execution: Execution): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      const reason = execution.abortReason;
      // A handler committing its own transaction is waited for: whether it committed decides the outcome.
      if (reason?.code === 'SHUTDOWN' || execution.state === 'committing') return;
      reject(reason);
    };
    if (execution.abortReason) onAbort();
    const off = execution.onAbort(onAbort);
    work.then(resolve, reject).finally(off);
  });
}

/** How an attempt's span ends: status ERROR for a failure (its sanitized code and message, never the raw error) or a lost lease. */
function spanEnding(outcome: AttemptOutcome | null): [string | null, Record<string, string>] {
  if (outcome === null) return ['LEASE_LOST', { 'tasklease.outcome': 'LEASE_LOST' }];
  const attributes = { 'tasklease.outcome': outcome.kind };
  if (outcome.kind !== 'RETRY' && outcome.kind !== 'FAILED') return [null, attributes];
  return [`${outcome.failure.errorCode}: ${outcome.failure.message}`, { ...attributes, 'tasklease.error_code': outcome.failure.errorCode }];
}
