/**
 * Small parts of the test kit: waiting for a claimed task's attempt to end,
 * and which waiting tasks are due, in the order a claim takes them.
 */
import type { Task } from '../core/task.js';

/** One waiter per claimed task, made when the claim passes the gate: the attempt's end cannot be missed. */
export class AttemptWaits {
  private readonly waiting = new Map<string, { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void }>();

  expect(taskId: string): void {
    let resolve!: () => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<void>((done, fail) => ((resolve = done), (reject = fail)));
    this.waiting.set(taskId, { promise, resolve, reject });
  }

  /** The kit closed: whoever still waits is told (a handler that ignored its abort never ends). */
  rejectAll(error: Error): void {
    for (const wait of this.waiting.values()) wait.reject(error);
    this.waiting.clear();
  }

  ended(taskId: string): void {
    this.waiting.get(taskId)?.resolve();
    this.waiting.delete(taskId);
  }

  /** Resolves when the attempt of `taskId` has ended (at once if it already has). */
  wait(taskId: string): Promise<void> {
    return this.waiting.get(taskId)?.promise ?? Promise.resolve();
  }
}

/** The due ones of `tasks` (waiting, due by `nowMs`, before their deadline) in claim order: priority, due time, submit time, id. */
export function dueInClaimOrder(tasks: readonly Task[], nowMs: number): Task[] {
  return tasks
    .filter((task) => task.availableAt.getTime() <= nowMs && (task.deadlineAt === null || task.deadlineAt.getTime() > nowMs))
    .sort(
      (a, b) =>
        b.priority - a.priority ||
        a.availableAt.getTime() - b.availableAt.getTime() ||
        a.createdAt.getTime() - b.createdAt.getTime() ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}
