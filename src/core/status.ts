/**
 * Task statuses (the seed's names) and the one transition table that every
 * store, the worker and the control plane obey.
 */
export const TaskStatus = {
  QUEUED: 'QUEUED',
  RUNNING: 'RUNNING',
  RETRY_WAIT: 'RETRY_WAIT',
  PAUSED: 'PAUSED',
  CANCEL_REQUESTED: 'CANCEL_REQUESTED',
  CANCELLED: 'CANCELLED',
  SUCCESS: 'SUCCESS',
  PARTIAL_SUCCESS: 'PARTIAL_SUCCESS',
  FAILED: 'FAILED',
  /**
   * Waits for its parents in a flow (or, for a parent that fanned out, for its children): not claimable, not
   * counted against any limit; QUEUED in the transaction that commits its last parent's end. Last in the list:
   * the uniqueness bitmask numbers statuses in this order (store/rules/unique.ts).
   */
  BLOCKED: 'BLOCKED',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

export const ALL_STATUSES: readonly TaskStatus[] = Object.values(TaskStatus);

/** Statuses in which a worker holds a lease: every fenced write requires one of these. */
export const LEASED_STATUSES: readonly TaskStatus[] = ['RUNNING', 'CANCEL_REQUESTED'];

/** Statuses that never change again on their own (FAILED may be retried by an operator; a flow's retry revives the nodes its failure cancelled). */
export const TERMINAL_STATUSES: readonly TaskStatus[] = ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'];

/** Statuses a task can be cancelled from at once, because no worker is running it. */
export const IDLE_STATUSES: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT', 'PAUSED'];

/** Statuses an operator's cancel ends at once: idle ones, and a flow's blocked nodes. */
export const CANCELLABLE_AT_ONCE: readonly TaskStatus[] = [...IDLE_STATUSES, 'BLOCKED'];

/**
 * from → allowed targets. A transition not listed here is a bug or a race that
 * the fenced SQL must have refused; the store conformance suite checks every
 * transition it observes against this table (assertTransition).
 */
export const TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  // claim; pause; cancel; deadline passed while waiting
  QUEUED: ['RUNNING', 'PAUSED', 'CANCELLED', 'FAILED'],
  // outcomes; cancel request; lease expiry or hand-back requeues; a fan-out waits for the children it made
  RUNNING: ['SUCCESS', 'PARTIAL_SUCCESS', 'RETRY_WAIT', 'FAILED', 'CANCEL_REQUESTED', 'CANCELLED', 'QUEUED', 'BLOCKED'],
  // a due retry is claimed directly (the sweep's move to QUEUED is only bookkeeping); backoff over; pause; cancel;
  // deadline passed while waiting
  RETRY_WAIT: ['RUNNING', 'QUEUED', 'PAUSED', 'CANCELLED', 'FAILED'],
  // resume (BLOCKED when its parents are not done); cancel; deadline passed while paused
  PAUSED: ['QUEUED', 'CANCELLED', 'FAILED', 'BLOCKED'],
  // the handler may still finish its work before it sees the request
  CANCEL_REQUESTED: ['CANCELLED', 'SUCCESS', 'PARTIAL_SUCCESS'],
  // a flow's retry: a node its failed parent cancelled waits for that parent again
  CANCELLED: ['BLOCKED'],
  SUCCESS: [],
  PARTIAL_SUCCESS: [],
  // an operator's retry starts a fresh attempt cycle
  FAILED: ['QUEUED'],
  // its last parent ended (run) or a parent failed (cancelled); pause; cancel
  BLOCKED: ['QUEUED', 'CANCELLED', 'PAUSED'],
};

export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && (ALL_STATUSES as readonly string[]).includes(value);
}

/** Throws when `from → to` is not in TRANSITIONS (tests and assertions: the stores' fenced SQL already refuses it). */
export function assertTransition(from: TaskStatus, to: TaskStatus): void {
  if (from !== to && !canTransition(from, to)) throw new Error(`transition ${from} → ${to} is not in TRANSITIONS`);
}

/**
 * What an attempt row records as its end (a RETRY outcome is a FAILED attempt).
 * RELEASED (handed back by a stopping worker) and SNOOZED (the handler asked
 * to run again later) spend no attempt. ABANDONED is what
 * earlier releases wrote for a hand-back (then charged); old history keeps it.
 */
export const AttemptOutcomeName = {
  SUCCESS: 'SUCCESS',
  PARTIAL_SUCCESS: 'PARTIAL_SUCCESS',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
  RELEASED: 'RELEASED',
  SNOOZED: 'SNOOZED',
  /** A fan-out: the handler made children and waits (BLOCKED) for them, spending no attempt (TaskResult.awaitChildren). */
  AWAITING: 'AWAITING',
  ABANDONED: 'ABANDONED',
  LEASE_EXPIRED: 'LEASE_EXPIRED',
} as const;
export type AttemptOutcomeName = (typeof AttemptOutcomeName)[keyof typeof AttemptOutcomeName];
