/**
 * One execution of one task by this worker, as an explicit state machine:
 *
 *   buffered ──start──▶ running ──outcome──▶ finishing ──written──▶ done
 *      │                   │                     ▲
 *      │          ctx.complete(tx)          rolled back
 *      │                   ▼                     │
 *      │               committing ───────────────┴──committed──▶ done
 *      ├──released──▶ done
 *      └── buffered, running, committing, finishing ──lease lost──▶ lost
 *
 * `committing`: the handler is writing, or wrote, its outcome inside its own
 * transaction (tx-complete.ts); whether that commits is the handler's to
 * decide, so the worker writes nothing more unless it rolled back, and stops
 * renewing the lease (the caller's transaction holds the task row locked: a
 * renewal would wait for it). `lost` and `done` are final: nothing more is written. The
 * handler may still be running in a final state (an abort is a request, not
 * a kill); the slot is freed only when it has really stopped. The
 * AbortSignal is made only when a handler asks for it.
 */
import { TaskAbortedError } from '../core/errors.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import type { Lease, Task } from '../core/task.js';
import type { TimerHandle } from '../core/clock.js';
import type { TaskSpan } from '../observe/tracing.js';
import type { AttemptOutcome } from '../store/types.js';
import type { AbortSource, ExecutionContext } from './context.js';
import type { LogBuffer } from '../core/logs.js';

export type AbortCode = ConstructorParameters<typeof TaskAbortedError>[0];

export type ExecutionState = 'buffered' | 'running' | 'committing' | 'finishing' | 'lost' | 'done';

const NEXT: Readonly<Record<ExecutionState, readonly ExecutionState[]>> = {
  buffered: ['running', 'lost', 'done'],
  running: ['committing', 'finishing', 'lost'],
  committing: ['finishing', 'done', 'lost'],
  finishing: ['done', 'lost'],
  lost: [],
  done: [],
};

/** One execution's durable steps (steps.ts): what the store held when first asked, plus what this execution recorded. */
export interface StepJournal {
  /** name → result JSON (null: undefined); null until loaded. */
  done: Map<string, string | null> | null;
  loading: Promise<Map<string, string | null>> | null;
  running: Map<string, Promise<unknown>>;
}

export class Execution implements AbortSource {
  readonly lease: Lease;
  private current: ExecutionState = 'buffered';
  /** Monotonic time the handler started (0 until then). */
  startedAt = 0;
  /** Monotonic time the last renewal that confirmed this lease was sent. */
  leaseConfirmedAt: number;
  context: ExecutionContext<Execution> | null = null;
  /** Settles when the handler has returned or thrown (not merely been raced). */
  handlerSettled: Promise<void> = Promise.resolve();
  /** No handler of this execution is running: none started yet, or it returned or threw. */
  handlerIdle = true;
  timer: TimerHandle = undefined;
  /** The payload as the handler received it (after its schema), for validateCompletion. */
  payload: unknown = undefined;
  /** The attempt's OpenTelemetry span (null: the API is not installed). */
  span: TaskSpan | null = null;
  /** The outcome ctx.complete(tx) wrote inside the handler's transaction (state committing). */
  completion: AttemptOutcome | null = null;
  /** Durable steps of this execution (steps.ts): made on the first ctx.step call. */
  steps: StepJournal | null = null;
  /** ctx.log lines not yet written (logs.ts): made on the first ctx.log call. */
  logs: LogBuffer | null = null;
  private reason: TaskAbortedError | null = null;
  private controller: AbortController | null = null;
  private readonly abortListeners = new Set<() => void>();

  constructor(
    readonly task: Task,
    readonly definition: AnyTaskDefinition,
    /** When the claim that leased it was sent (monotonic): the lease is confirmed from then. */
    claimSentAt: number,
  ) {
    this.lease = { taskId: task.id, workerId: task.leaseOwner ?? '', attempt: task.attemptCount, token: task.leaseToken ?? '' };
    this.leaseConfirmedAt = claimSentAt;
  }

  get state(): ExecutionState {
    return this.current;
  }

  /** Holds a lease that must be renewed: waiting in the buffer or running. */
  get holdsLease(): boolean {
    return this.current === 'buffered' || this.current === 'running';
  }

  get isFinal(): boolean {
    return this.current === 'lost' || this.current === 'done';
  }

  /** Moves to `next`; a move the diagram above does not allow is a bug in the worker. */
  moveTo(next: ExecutionState): void {
    if (!NEXT[this.current].includes(next)) throw new Error(`execution of task ${this.task.id}: ${this.current} → ${next} is not a transition`);
    this.current = next;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get abortReason(): TaskAbortedError | null {
    return this.reason;
  }

  abort(code: AbortCode, message: string): void {
    if (this.reason) return;
    this.reason = new TaskAbortedError(code, message);
    this.controller?.abort(this.reason);
    for (const listener of [...this.abortListeners]) listener();
  }

  /** Calls `listener` on abort; returns the unsubscribe. */
  onAbort(listener: () => void): () => void {
    this.abortListeners.add(listener);
    return () => this.abortListeners.delete(listener);
  }
}
