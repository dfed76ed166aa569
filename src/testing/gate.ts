/**
 * The test kit's hold on its worker: the worker is a real one (its executor,
 * lease keeper and outcome writer run every task), but it claims only when the
 * kit hands it a ticket. Without one a claim finds nothing, so a task a test
 * submits stays QUEUED until runTask() or drain() runs it — and what a handler
 * submits stays where a test can read it.
 *
 * The gate wraps the store the worker is given: claimTasks answers the ticket
 * (one claim, of the ticket's types, at most one task), finishAndClaim is
 * declared unavailable (the worker then writes outcomes and claims apart), and
 * subscribe keeps the worker's listener so that the kit can wake it.
 */
import { InvalidStateError } from '../core/errors.js';
import type { Task } from '../core/task.js';
import type { ClaimParams, Store, StoreEvent, StoreListener } from '../store/types.js';

interface Ticket {
  taskTypes: readonly string[];
  resolve(tasks: Task[]): void;
  reject(error: unknown): void;
}

export class ClaimGate {
  private ticket: Ticket | null = null;
  private readonly listeners = new Set<StoreListener>();
  /** The store to give the worker. */
  readonly store: Store;

  constructor(
    private readonly inner: Store,
    /** Told of each task a ticket claimed, before the worker sees it (so that the kit can wait for its attempt). */
    private readonly onClaimed: (task: Task) => void,
  ) {
    this.store = this.wrap();
  }

  /**
   * Lets the worker's next claim take one due task of `taskTypes` (claim order: priority, then due time, then
   * submit order) and wakes the worker; resolves with what it took (empty: nothing was due, or limits bind).
   */
  claimOne(taskTypes: readonly string[]): Promise<Task[]> {
    if (this.ticket) return Promise.reject(new Error('ClaimGate: a ticket is already out'));
    const claimed = new Promise<Task[]>((resolve, reject) => (this.ticket = { taskTypes, resolve, reject }));
    this.wake({ kind: 'submitted', taskTypes: [...taskTypes] });
    return claimed;
  }

  /** The kit is closing: a ticket still out will not be claimed (its worker stopped). */
  close(): void {
    this.ticket?.reject(new InvalidStateError('the test kit closed before its worker claimed'));
    this.ticket = null;
  }

  private wake(event: StoreEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private async claim(params: ClaimParams): Promise<Task[]> {
    const ticket = this.ticket;
    if (ticket === null) {
      params.onSent?.();
      return [];
    }
    this.ticket = null;
    const taskTypes = params.taskTypes.filter((type) => ticket.taskTypes.includes(type));
    try {
      const tasks = taskTypes.length === 0 ? [] : await this.inner.claimTasks({ ...params, taskTypes, limit: 1 });
      for (const task of tasks) this.onClaimed(task);
      ticket.resolve(tasks);
      return tasks;
    } catch (error) {
      ticket.reject(error);
      throw error;
    }
  }

  private wrap(): Store {
    const inner = this.inner;
    const overrides: Partial<Record<keyof Store, unknown>> = {
      capabilities: { ...inner.capabilities, finishAndClaim: false },
      claimTasks: (params: ClaimParams) => this.claim(params),
      subscribe: (listener: StoreListener) => {
        this.listeners.add(listener);
        const off = inner.subscribe(listener);
        return () => {
          this.listeners.delete(listener);
          off();
        };
      },
    };
    return new Proxy(inner, {
      get(target, property, receiver) {
        if (typeof property === 'string' && property in overrides) return overrides[property as keyof Store];
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}
