/**
 * Every execution this worker holds a lease for (or whose handler is still
 * winding down), and the queue of leased tasks waiting for a free slot. The
 * services read the counts here instead of keeping their own.
 *
 * A quarantined task (it lost leases before: it may be a poison pill, core/
 * task.ts isQuarantined) runs alone: held apart from the queue, it starts
 * once nothing else runs, waits, or is being written or handed back, and
 * nothing starts beside it, so that if
 * it kills the process it takes no innocent task with it (issue 11, B3).
 * The table holds at most one (the worker hands others back at once).
 *
 * A task this worker claims again while an older attempt of it is still here
 * (frozen past its lease, the sweep requeued it: a new attempt number) keeps
 * the older execution too, superseded: the worker marked it lost before the
 * claim was adopted, and it keeps its slot until its handler stops. Keyed by
 * task id alone, the new execution would hide the old one, whose handler
 * would then run on unrenewed and never aborted beside the new one.
 */
import type { Clock } from '../core/clock.js';
import { isQuarantined } from '../core/task.js';
import type { Execution, ExecutionState } from './execution.js';

export class ExecutionTable {
  /** The newest execution of each task held here. */
  private readonly byTask = new Map<string, Execution>();
  /** Older executions of tasks claimed again: lost, their handlers winding down. */
  private readonly superseded = new Set<Execution>();
  private readonly waitingQueue: Execution[] = [];
  private isolated: Execution | null = null;
  private finishingCount = 0;
  /** Leases being handed back (never started): until the store has them back, a crash would expire them. */
  private handingBackCount = 0;
  /** Handlers started and not yet settled: the slots in use. */
  runningHandlers = 0;
  private idleWaiters: (() => void)[] = [];

  /** A handler really stopped (returned or threw): its slot is free; resolves whenIdle() at zero. */
  handlerStopped(): void {
    this.runningHandlers -= 1;
    if (this.runningHandlers === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** True once no handler runs; false if some still run after `timeoutMs` (stop() then aborts them). */
  whenIdle(timeoutMs: number, clock: Clock): Promise<boolean> {
    if (this.runningHandlers === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = clock.setTimeout(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        clock.clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** The newest execution of the task held here. */
  get(taskId: string): Execution | undefined {
    return this.byTask.get(taskId);
  }

  /** The execution of exactly this lease (task, attempt and token), if it is still the task's newest here. */
  holderOf(lease: { taskId: string; attempt: number; token: string }): Execution | undefined {
    const execution = this.byTask.get(lease.taskId);
    return execution?.lease.attempt === lease.attempt && execution.lease.token === lease.token ? execution : undefined;
  }

  /** Executions held: waiting, running, finishing, or final with a handler still winding down. */
  get size(): number {
    return this.byTask.size + this.superseded.size;
  }

  get waiting(): number {
    return this.waitingQueue.length + (this.isolated?.state === 'buffered' ? 1 : 0);
  }

  /** A quarantined task is held (waiting or running): the worker claims nothing more until it is over. */
  get holdsIsolated(): boolean {
    return this.isolated !== null;
  }

  /** Outcomes queued or being written. */
  get finishing(): number {
    return this.finishingCount;
  }

  /** Holds a leased task; a quarantined one only when none is held (see holdsIsolated). An older execution of it must be lost already. */
  add(execution: Execution): void {
    const older = this.byTask.get(execution.task.id);
    if (older?.holdsLease)
      throw new Error(`task ${execution.task.id} claimed again (attempt ${execution.lease.attempt}) while attempt ${older.lease.attempt} holds it`);
    if (older) this.superseded.add(older);
    this.byTask.set(execution.task.id, execution);
    if (isQuarantined(execution.task) && this.isolated === null) this.isolated = execution;
    else this.waitingQueue.push(execution);
  }

  /** Takes the next waiting execution and moves it to running, if a slot is free (the only way into running). */
  startNext(concurrency: number): Execution | undefined {
    const isolated = this.isolated;
    if (isolated !== null && isolated.state !== 'buffered') return undefined; // it runs alone until it is forgotten
    if (this.runningHandlers >= concurrency) return undefined;
    // Alone means alone: not even an outcome write or a hand-back in flight, whose task a crash would requeue
    // with one more lost lease (a third one costs that task an attempt).
    const alone = this.runningHandlers === 0 && this.finishingCount === 0 && this.handingBackCount === 0;
    const next = this.waitingQueue.shift() ?? (alone ? isolated : null);
    next?.moveTo('running');
    return next ?? undefined;
  }

  /** Executions whose lease must be renewed. */
  leaseHolders(): Execution[] {
    return [...this.byTask.values()].filter((execution) => execution.holdsLease);
  }

  running(): Execution[] {
    return [...this.byTask.values()].filter((execution) => execution.state === 'running');
  }

  /** Moves an execution and keeps the counts true. */
  moveTo(execution: Execution, next: ExecutionState): void {
    const before = execution.state;
    execution.moveTo(next);
    if (before === 'finishing') this.finishingCount -= 1;
    if (next === 'finishing') this.finishingCount += 1;
    // (startNext already took it off the queue on the way to running.)
    if (before === 'buffered') this.removeWaiting(execution);
  }

  /**
   * Called when a hand-back settles: a quarantined task may have been waiting
   * for exactly that to run alone, and nothing else would start it (the
   * worker claims nothing while it holds one).
   */
  onHandBackSettled: () => void = () => undefined;

  /** A hand-back of `count` leases starts (`count` > 0) or has settled (`count` < 0). */
  handingBack(count: number): void {
    this.handingBackCount += count;
    if (count < 0) this.onHandBackSettled();
  }

  /** Takes every waiting execution out (to hand back), final and forgotten. */
  takeAllWaiting(): Execution[] {
    const taken = [...this.waitingQueue];
    if (this.isolated?.state === 'buffered') taken.push(this.isolated);
    for (const execution of taken) {
      this.moveTo(execution, 'done');
      this.forget(execution);
    }
    return taken;
  }

  /** Forgets a final execution whose handler has stopped; true if it is gone now. */
  forgetIfSettled(execution: Execution): boolean {
    if (!execution.isFinal || !execution.handlerIdle) return false;
    this.forget(execution);
    return true;
  }

  private forget(execution: Execution): void {
    if (this.byTask.get(execution.task.id) === execution) this.byTask.delete(execution.task.id);
    else this.superseded.delete(execution);
    if (this.isolated === execution) this.isolated = null;
  }

  private removeWaiting(execution: Execution): void {
    const index = this.waitingQueue.indexOf(execution);
    if (index >= 0) this.waitingQueue.splice(index, 1);
  }
}
