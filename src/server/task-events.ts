/**
 * Wake-ups for live streams from a worker running in this process: a stream
 * re-reads its task at once instead of waiting for its next poll, and gets
 * progress as the handler reports it (the store sees progress only at each
 * flush). Without an in-process worker, streams simply poll.
 */
import type { Task, TaskProgress } from '../core/task.js';
import type { Worker } from '../worker/worker.js';

export type TaskSignal = { task: Task; progress?: TaskProgress };
type Listener = (signal: TaskSignal) => void;

const WAKING_EVENTS = ['started', 'completed', 'failed', 'cancelled', 'retryScheduled', 'deadLettered', 'leaseLost', 'released', 'timedOut'] as const;

export class TaskEventHub {
  private readonly byTask = new Map<string, Set<Listener>>();
  private readonly everyTask = new Set<Listener>();
  private readonly detach: (() => void)[] = [];

  attach(worker: Worker): void {
    for (const name of WAKING_EVENTS) this.detach.push(worker.on(name, ({ task }) => this.signal({ task })));
    this.detach.push(worker.on('progress', ({ task, progress }) => this.signal({ task, progress })));
  }

  /** Signals about one task; returns unsubscribe. */
  onTask(id: string, listener: Listener): () => void {
    let listeners = this.byTask.get(id);
    if (!listeners) this.byTask.set(id, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.byTask.delete(id);
    };
  }

  /** Signals about every task (the "my tasks" stream filters by owner). */
  onAny(listener: Listener): () => void {
    this.everyTask.add(listener);
    return () => void this.everyTask.delete(listener);
  }

  close(): void {
    for (const off of this.detach.splice(0)) off();
  }

  private signal(signal: TaskSignal): void {
    for (const listener of this.byTask.get(signal.task.id) ?? []) listener(signal);
    for (const listener of this.everyTask) listener(signal);
  }
}
