import { InvalidStateError } from './errors.js';
import type { TaskStatus } from './status.js';

/** Progress a handler reports; stored in the task row (progress_* columns). */
export interface TaskProgress {
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  skipped: number;
  message: string | null;
}

/** One task row, as every store returns it (never a driver's row). */
export interface Task<Payload = unknown> {
  id: string;
  taskType: string;
  status: TaskStatus;
  /** Higher runs first. */
  priority: number;
  payload: Payload;
  /** Not claimed before this time (delayed start, retry backoff). */
  availableAt: Date;
  /** Never claimed after, and aborted as TIMEOUT when still running at, this time. */
  deadlineAt: Date | null;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  /** Drawn at random by each claim: with the owner and the attempt, it fences the lease (null when not leased). */
  leaseToken: string | null;
  /** Attempts started in the task's whole life; part of the lease's fence. */
  attemptCount: number;
  /** Attempts that belong to earlier cycles (an operator's retry starts a new one), or that cost nothing (a hand-back, a snooze). */
  attemptBase: number;
  maxAttempts: number;
  /** Leases this task lost (its worker crashed, stalled or was cut off): from QUARANTINE_AFTER_LEASE_EXPIRIES on, it runs alone. */
  leaseExpiries: number;
  artifactId: string | null;
  owner: string | null;
  idempotencyKey: string | null;
  progress: TaskProgress | null;
  result: unknown;
  lastErrorCode: string | null;
  traceId: string | null;
  /** The W3C traceparent of the OpenTelemetry span that submitted the task (null: none was active). */
  traceParent: string | null;
  /** The uniqueness window it was submitted with (null: none). */
  unique: UniqueHold | null;
  /** The flow it belongs to (client.submitFlow, a dependsOn submit, a fan-out's children); null: none. */
  flowId: string | null;
  /** Parents (or, for a fan-out waiting on its children, children) not ended yet; 0 outside flows. BLOCKED while > 0. */
  pendingParents: number;
  /** The sequence it runs in, one at a time in submit order (store/rules/sequences.ts); null: none. */
  sequenceKey: string | null;
  /** Its place in the sequence (1, 2, …: submit order under the key); null outside sequences. */
  sequenceSeq: number | null;
  /** The rate key it was submitted with (its starts count against policy KEY:<rateKey> or KEY:<group>:*); null: none. */
  rateKey: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A task's uniqueness key as stored, and whether it holds it now. */
export interface UniqueHold {
  /** The client's hash of type, owner, key and mode; with a period, `@` and the window's number. */
  key: string;
  /** The statuses in which the task holds the key. */
  states: TaskStatus[];
  /** Debounce: held only before the first claim. */
  beforeFirstRunOnly: boolean;
  /** Whether it holds the key now: a second submit with the same key would meet this task. */
  held: boolean;
}

/** What a producer asks for; the client fills in defaults before the store sees it. */
export interface NewTask {
  /** A UUID in lowercase canonical form (the client makes UUIDv7 ids); PostgreSQL stores it as uuid and refuses any other. */
  id: string;
  taskType: string;
  /** The payload, already serialized (the client measures its size). */
  payloadJson: string;
  priority: number;
  /** Start after this many milliseconds of the database clock (0 = now). */
  delayMs: number;
  /** Or at this absolute time; wins over delayMs when set. */
  availableAt: Date | null;
  deadlineAt: Date | null;
  maxAttempts: number;
  owner: string | null;
  idempotencyKey: string | null;
  traceId: string | null;
  /** W3C traceparent of the submitting span (observe/tracing.ts); absent or null: none. */
  traceParent?: string | null;
  /** A uniqueness window (client/unique.ts); absent or null: none. */
  unique?: UniqueSpec | null;
  /** The flow it belongs to; absent or null: none. */
  flowId?: string | null;
  /** How many dependency edges insertFlow adds above it: it starts BLOCKED when > 0 (rules/flows.ts initialStatus). */
  pendingParents?: number;
  /** Runs one at a time, in submit order, with the other tasks of this key (store/rules/sequences.ts); absent or null: none. */
  sequenceKey?: string | null;
  /** Sets the key's policy for a dead-lettered head (absent: the key keeps its own, BLOCK for a new key). */
  sequenceOnDeadLetter?: 'BLOCK' | 'SKIP' | null;
  /** Given by the store (under the key's lock) before the insert. */
  sequenceSeq?: number | null;
  /** Its starts count against the rate policy of this key (core/policy-keys.ts ratePolicyKeys); absent or null: none. */
  rateKey?: string | null;
}

/** What the store needs of a submit's `unique` option, after the client resolved it. */
export interface UniqueSpec {
  /** SHA-256 (hex) of the type, owner, key and mode: what two submits must share to collide. */
  key: string;
  /** The statuses in which the key is held, as a bitmask (store/rules/unique.ts). */
  states: number;
  /** Throttle: the key holds per window of this many milliseconds of the database clock. */
  periodMs: number | null;
  /** Debounce: a later submit replaces the held task's payload and moves its start to now + debounceMs. */
  debounceMs: number | null;
}

/**
 * The fence of one execution: every write a worker makes carries it. The
 * token is drawn by the claim, so two claims of one task by one worker with
 * the same attempt number (a claim lost with a database crash, then made
 * again) are still told apart.
 */
export interface Lease {
  taskId: string;
  workerId: string;
  attempt: number;
  token: string;
}

/** What the failure classifier makes of an error: safe to store and log. */
export interface FailureRecord {
  errorCode: string;
  /** Sanitized: no raw exception text unless the operator opted in. */
  message: string;
  traceId: string | null;
  retryable: boolean;
  /** The class of the error behind it (the seed's exceptionType; logs and events only, not stored). */
  exceptionType?: string;
}

/**
 * A task whose lease expired this many times may be what crashes its worker
 * (a poison pill): from then on its worker runs it alone, holding no other
 * task, so that a crash takes only the task that caused it. Its expiries
 * before that cost no attempt: it may have died beside a poison pill
 * (issue 11, B3; the sweep's rule is store/rules/sweep.ts).
 */
export const QUARANTINE_AFTER_LEASE_EXPIRIES = 2;

export function isQuarantined(task: Pick<Task, 'leaseExpiries'>): boolean {
  return task.leaseExpiries >= QUARANTINE_AFTER_LEASE_EXPIRIES;
}

/** Attempts still allowed in the task's current cycle. */
export function attemptsLeft(task: Pick<Task, 'attemptCount' | 'attemptBase' | 'maxAttempts'>): number {
  return task.maxAttempts - (task.attemptCount - task.attemptBase);
}

export function leaseOf(task: Task): Lease {
  if (task.leaseOwner === null) throw new InvalidStateError(`task ${task.id} has no lease`);
  return { taskId: task.id, workerId: task.leaseOwner, attempt: task.attemptCount, token: task.leaseToken ?? '' };
}
