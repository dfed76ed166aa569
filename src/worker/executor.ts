/**
 * Runs executions: starts waiting ones while slots are free, runs the
 * handler under its timeout with a context, asks outcome.ts what the
 * attempt's outcome is and hands it to the outcome writer. A slot stays taken
 * until the handler really stops, even after a cancel or timeout raced it.
 */
import type { Clock } from '../core/clock.js';
import { PayloadInvalidError } from '../core/errors.js';
import { checkSnooze, isSnooze, type TaskResult, type TaskSnooze } from '../core/definition.js';
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

export interface ExecutorHooks {
  /** An outcome to write (the execution is finishing). */
  write(outcome: AttemptOutcome, execution: Execution): void;
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
  ) {
    this.sink = { save: (execution, progress) => leases.saveProgress(execution, progress), pollCancellation: (execution) => leases.check(execution) };
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
    this.armTimeout(execution);
    if (this.events.listening('started')) this.events.emit('started', { task, queueWaitMs: Math.max(0, Date.now() - task.createdAt.getTime()) });
    const outcome = await this.outcomeOf(execution, context);
    this.clock.clearTimeout(execution.timer);
    const durationMs = this.clock.now() - execution.startedAt;
    if (o.slowTaskThresholdMs > 0 && durationMs > o.slowTaskThresholdMs) this.events.emit('slow', { task, durationMs, thresholdMs: o.slowTaskThresholdMs });
    void execution.handlerSettled.then(() => this.handlerStopped(execution));
    if (outcome && execution.state === 'running') {
      this.table.moveTo(execution, 'finishing');
      this.hooks.write(outcome, execution);
    } else {
      if (execution.state === 'running') this.table.moveTo(execution, 'lost'); // the lease could not be confirmed
      this.table.forgetIfSettled(execution);
      this.hooks.nothingToWrite();
    }
  }

  private async outcomeOf(execution: Execution, context: ExecutionContext<Execution>): Promise<AttemptOutcome | null> {
    try {
      const result = await runHandler(execution, context);
      await context.settle();
      return successOutcome(execution, result);
    } catch (error) {
      await context.settle();
      const decision = {
        retry: this.policies.retryFor(execution.task.taskType),
        exposeErrorMessages: this.options.exposeErrorMessages,
        classifier: this.options.failureClassifier,
        checkLease: this.leases.confirm.bind(this.leases),
      };
      return failureOutcome(execution, error, decision).catch((checkError: unknown) => {
        this.events.emit('error', { operation: 'renewLeases', error: checkError });
        return null; // cannot confirm the lease: leave the task to lease expiry
      });
    }
  }

  private handlerStopped(execution: Execution): void {
    this.table.handlerStopped();
    const forgotten = this.table.forgetIfSettled(execution);
    this.hooks.slotFreed(forgotten);
  }

  private armTimeout(execution: Execution): void {
    const limit = execution.definition.timeoutMs ?? this.options.maxExecutionMs;
    const deadlineIn = execution.task.deadlineAt ? execution.task.deadlineAt.getTime() - Date.now() : Infinity;
    const limitIn = limit > 0 ? limit : Infinity;
    const inMs = Math.min(deadlineIn, limitIn);
    if (inMs === Infinity) return;
    const message = inMs === deadlineIn ? 'task passed its deadline' : `attempt exceeded its maximum execution time of ${limit} ms`;
    execution.timer = this.clock.setTimeout(() => execution.abort('TIMEOUT', message), Math.max(0, inMs));
  }
}

/** Validates the payload, runs validate and execute; raced against the signal except on shutdown. */
async function runHandler(execution: Execution, context: ExecutionContext<Execution>): Promise<TaskResult | TaskSnooze> {
  const { definition, task } = execution;
  let payload: unknown = task.payload;
  if (definition.schema) {
    const checked = await runSchema(definition.schema, task.payload);
    if (!checked.ok) throw new PayloadInvalidError(task.taskType, checked.issues);
    payload = checked.value;
  }
  if (definition.validate) await definition.validate(payload, context);
  context.throwIfAborted();
  const work = Promise.resolve().then(() => definition.execute!(context, payload));
  execution.handlerIdle = false;
  const settle = (): void => {
    execution.handlerIdle = true;
  };
  execution.handlerSettled = work.then(settle, settle);
  const result = (await raceAbort(work, execution)) ?? { status: 'SUCCESS' };
  if (execution.abortReason && execution.abortReason.code !== 'SHUTDOWN') throw execution.abortReason;
  if (isSnooze(result))
    checkSnooze(result.delayMs); // a hand-made { status: 'SNOOZED' } fails the attempt if its delay is bad
  else if (definition.validateCompletion) await definition.validateCompletion(result, payload, context);
  return result;
}

/** Resolves with the handler unless the signal fires first. A shutdown abort waits for the handler: its task is handed back only once it has stopped. */
function raceAbort<T>(work: Promise<T>, execution: Execution): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      const reason = execution.abortReason;
      if (reason?.code === 'SHUTDOWN') return;
      reject(reason);
    };
    if (execution.abortReason) onAbort();
    const off = execution.onAbort(onAbort);
    work.then(resolve, reject).finally(off);
  });
}
