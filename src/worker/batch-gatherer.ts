/**
 * Batch handlers, the worker's side (the rules are core/batch.ts): gathers
 * started executions of a batch type into one call of its executeBatch.
 *
 * Each task of a batch is an ordinary execution: claimed by itself (limits
 * apply per task), started in a slot of its own (concurrency counts tasks,
 * not calls), its payload checked and its `validate` run alone (a task that
 * fails them fails alone and never joins), its lease renewed, its timeout
 * armed, its abort and outcome decided and written as a single task's are
 * (executor.ts, outcome.ts, the outcome writer). What this service adds is
 * only the shared call: `join` hands an execution a promise of its own
 * result, and the execution's handler is "running" until the call returns.
 *
 * A batch is called when it holds maxSize tasks; when no slot is left for
 * another task to join (and none is still being validated); when maxWaitMs
 * has passed since its first task joined; when a quarantined task joins (it
 * runs alone); and at once when the worker stops (graceful stop runs what it
 * gathered). A task aborted while its batch gathers (cancelled, lease lost,
 * timed out) leaves it and frees its slot; one aborted during the call keeps
 * its slot until the call returns (an abort is a request, not a kill), and
 * what the call returns for it is discarded (executor.ts raceAbort).
 */
import type { BatchContext, BatchItem, BatchItemResult } from '../core/batch.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import type { AnyTaskDefinition, TaskResult, TaskSnooze } from '../core/definition.js';
import { ErrorCode, TaskFailure } from '../core/errors.js';
import { isQuarantined } from '../core/task.js';
import type { Announcer } from './events.js';
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';

/** An execution's place in a batch: its own result, and when the shared call has stopped (its slot is free then). */
export interface BatchSeat {
  result: Promise<TaskResult | TaskSnooze | void>;
  settled: Promise<void>;
}

interface Member {
  execution: Execution;
  payload: unknown;
  resolve: (result: TaskResult | TaskSnooze | void) => void;
  reject: (error: unknown) => void;
  settle: () => void;
  offAbort: () => void;
}

interface Group {
  definition: AnyTaskDefinition;
  members: Member[];
  timer: TimerHandle;
}

export class BatchGatherer {
  /** The batch gathering now, per task type. */
  private readonly groups = new Map<string, Group>();
  /** Per task type: executions started whose payload is still being checked (they are about to join or fail). */
  private readonly checking = new Map<string, number>();
  private draining = false;

  constructor(
    private readonly table: ExecutionTable,
    private readonly concurrency: number,
    private readonly clock: Clock,
    private readonly events: Announcer,
  ) {}

  /** Whether this definition runs in batches. */
  handles(definition: AnyTaskDefinition): boolean {
    return typeof definition.executeBatch === 'function';
  }

  /** An execution of a batch type took its slot; it will join (or withdraw) once its payload is checked. */
  reserve(execution: Execution): void {
    const type = execution.task.taskType;
    this.checking.set(type, (this.checking.get(type) ?? 0) + 1);
  }

  /** Its payload or validate failed (or it was aborted first): it fails alone and does not join. */
  withdraw(execution: Execution): void {
    this.checked(execution.task.taskType);
    this.callIfReady(execution.task.taskType);
  }

  /** Joins the gathering batch of the execution's type. */
  join(execution: Execution, payload: unknown): BatchSeat {
    const type = execution.task.taskType;
    this.checked(type);
    let group = this.groups.get(type);
    if (!group) {
      const created: Group = { definition: execution.definition, members: [], timer: undefined };
      created.timer = this.clock.setTimeout(() => this.call(type, created), execution.definition.batch!.maxWaitMs);
      this.groups.set(type, (group = created));
    }
    let member!: Member;
    const result = new Promise<TaskResult | TaskSnooze | void>((resolve, reject) => {
      member = { execution, payload, resolve, reject, settle: () => undefined, offAbort: () => undefined };
    });
    const settled = new Promise<void>((resolve) => (member.settle = resolve));
    const joined = group;
    member.offAbort = execution.onAbort(() => this.abortedWhileGathering(type, joined, member));
    group.members.push(member);
    if (isQuarantined(execution.task)) this.call(type, group);
    else this.callIfReady(type);
    return { result, settled };
  }

  /** The worker stops: every gathering batch is called now, and any later one at once. */
  flushAll(): void {
    this.draining = true;
    for (const [type, group] of [...this.groups]) this.call(type, group);
  }

  private checked(type: string): void {
    const left = (this.checking.get(type) ?? 1) - 1;
    if (left > 0) this.checking.set(type, left);
    else this.checking.delete(type);
  }

  /** Full, or nothing more can join now (no free slot, none being checked), or the worker stops. */
  private callIfReady(type: string): void {
    const group = this.groups.get(type);
    if (!group || group.members.length === 0) return;
    if (group.members.length >= group.definition.batch!.maxSize) return this.call(type, group);
    if (this.checking.has(type)) return;
    if (this.draining || this.table.runningHandlers >= this.concurrency) this.call(type, group);
  }

  /** Cancelled, lease lost or timed out before the call: it leaves the batch and frees its slot (its outcome is the abort's). */
  private abortedWhileGathering(type: string, group: Group, member: Member): void {
    if (this.groups.get(type) !== group) return; // the call has started: the member stays until it returns
    const reason = member.execution.abortReason!;
    // A forced shutdown lets handlers finish: the batch is called now rather than torn apart.
    if (reason.code === 'SHUTDOWN') return this.call(type, group);
    group.members.splice(group.members.indexOf(member), 1);
    member.offAbort();
    member.reject(reason);
    member.settle();
    if (group.members.length === 0) {
      this.clock.clearTimeout(group.timer);
      this.groups.delete(type);
    }
  }

  private call(type: string, group: Group): void {
    if (this.groups.get(type) !== group) return;
    this.groups.delete(type);
    this.clock.clearTimeout(group.timer);
    const { members, definition } = group;
    for (const member of members) member.offAbort();
    const context = batchContext(type, members);
    const items: BatchItem[] = members.map((member) => ({ ctx: member.execution.context!, payload: member.payload }));
    this.events.emit('batchStarted', { taskType: type, size: members.length });
    void Promise.resolve()
      .then(() => definition.executeBatch!(context.view, items))
      .then(
        (results) => distribute(members, results),
        (error: unknown) => {
          for (const member of members) member.reject(error);
        },
      )
      .finally(() => {
        context.off();
        for (const member of members) member.settle();
      });
  }
}

/** The call's context: its signal fires once every task of the batch has been aborted. */
function batchContext(type: string, members: readonly Member[]): { view: BatchContext; off: () => void } {
  const controller = new AbortController();
  let left = members.length;
  const offs = members.map(({ execution }) => {
    let counted = false;
    const onAbort = (): void => {
      if (counted) return;
      counted = true;
      left -= 1;
      if (left === 0) controller.abort(execution.abortReason);
    };
    if (execution.abortReason) onAbort();
    return execution.onAbort(onAbort);
  });
  return { view: { taskType: type, size: members.length, signal: controller.signal }, off: () => offs.forEach((off) => off()) };
}

/** Each task's answer from what the call returned (core/batch.ts). */
function distribute(members: readonly Member[], results: readonly BatchItemResult[] | void): void {
  if (results === undefined || results === null) {
    for (const member of members) member.resolve(undefined);
    return;
  }
  if (!Array.isArray(results) || results.length !== members.length) {
    const what = Array.isArray(results) ? `${results.length} results` : typeof results;
    const error = new TaskFailure(`executeBatch returned ${what} for ${members.length} tasks: return nothing, or one entry per task in order`, {
      code: ErrorCode.BATCH_RESULT_INVALID,
      retryable: false,
    });
    for (const member of members) member.reject(error);
    return;
  }
  members.forEach((member, index) => {
    const entry = results[index] as BatchItemResult;
    if (entry instanceof Error) member.reject(entry);
    else member.resolve(entry ?? undefined);
  });
}
