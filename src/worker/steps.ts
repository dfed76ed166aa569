/**
 * Durable steps (ctx.step): the worker's service for them, one per worker,
 * shared by every execution (each call names its execution).
 *
 * - The task's completed steps of its current attempt cycle are read once per
 *   execution, on its first ctx.step call (one read; the claim path never
 *   pays for it), and kept in the execution's journal.
 * - A step found there is not run: its stored result comes back.
 * - Else fn runs; its result is recorded in a write fenced by the lease
 *   (store.recordStep, rules/steps.ts). A refused write means the lease is
 *   gone: the execution loses it (aborted with LEASE_LOST, as any fenced
 *   write does) and ctx.step throws that TaskAbortedError — the work of fn
 *   is not recorded, and the worker that holds the task now runs it again.
 * - Both paths hand back the result as JSON gives it back (a Date becomes its
 *   ISO string, undefined stays undefined): a handler sees the same value on
 *   the attempt that ran the step and on every attempt that replays it.
 * - Two calls of one name in one execution share the first one's run.
 * Bounds (core/steps.ts): name, result size (maxStepResultBytes), steps per
 * task and cycle (maxStepsPerTask); a breach fails the task for good.
 */
import { ErrorCode, TaskAbortedError } from '../core/errors.js';
import { checkStepName, StepError, stepResultJson } from '../core/steps.js';
import type { WorkerStore } from '../store/types.js';
import type { Announcer } from './events.js';
import type { Execution, StepJournal } from './execution.js';

export interface StepOptions {
  maxStepResultBytes: number;
  maxStepsPerTask: number;
}

export class StepKeeper {
  constructor(
    private readonly store: Pick<WorkerStore, 'recordStep' | 'listSteps'>,
    private readonly options: StepOptions,
    private readonly leases: { loseLease(execution: Execution, reason: 'write'): void },
    private readonly events: Announcer,
  ) {}

  async step<T>(execution: Execution, name: string, fn: () => T | Promise<T>): Promise<Awaited<T>> {
    checkStepName(name);
    if (typeof fn !== 'function') throw new TypeError(`ctx.step ${JSON.stringify(name)}: fn must be a function`);
    throwIfAborted(execution);
    const journal = (execution.steps ??= { done: null, loading: null, running: new Map() });
    const done = journal.done ?? (await this.load(execution, journal));
    throwIfAborted(execution);
    if (done.has(name)) {
      this.announce(execution, name, true);
      return parse(done.get(name)!) as Awaited<T>;
    }
    const running = journal.running.get(name);
    if (running) return running as Promise<Awaited<T>>;
    if (done.size + journal.running.size >= this.options.maxStepsPerTask) {
      throw new StepError(
        ErrorCode.STEP_LIMIT_EXCEEDED,
        `ctx.step ${JSON.stringify(name)}: task ${execution.task.id} has ${this.options.maxStepsPerTask} steps already (worker option maxStepsPerTask)`,
      );
    }
    const run = this.runAndRecord(execution, done, name, fn);
    journal.running.set(name, run);
    try {
      return (await run) as Awaited<T>;
    } finally {
      journal.running.delete(name);
    }
  }

  private async load(execution: Execution, journal: StepJournal): Promise<Map<string, string | null>> {
    journal.loading ??= this.store.listSteps({ taskId: execution.task.id, currentCycleOnly: true }).then(
      (steps) => (journal.done = new Map(steps.map((step) => [step.name, step.resultJson]))),
      (error: unknown) => {
        journal.loading = null; // the next call asks again
        throw error;
      },
    );
    return journal.loading;
  }

  private async runAndRecord(execution: Execution, done: Map<string, string | null>, name: string, fn: () => unknown): Promise<unknown> {
    const value = await fn();
    const json = stepResultJson(name, value, this.options.maxStepResultBytes);
    throwIfAborted(execution);
    const recorded = await this.store.recordStep({ lease: execution.lease, name, resultJson: json });
    if (!recorded) {
      this.leases.loseLease(execution, 'write');
      throw execution.abortReason ?? new TaskAbortedError('LEASE_LOST', 'lease lost: another worker may own this task now');
    }
    done.set(name, json);
    this.announce(execution, name, false);
    return parse(json);
  }

  private announce(execution: Execution, name: string, replayed: boolean): void {
    if (this.events.listening('step')) this.events.emit('step', { task: execution.task, name, replayed });
  }
}

function parse(json: string | null): unknown {
  return json === null ? undefined : JSON.parse(json);
}

function throwIfAborted(execution: Execution): void {
  const reason = execution.abortReason;
  if (reason) throw reason;
}
