/**
 * The HTTP API as the dashboard uses it: same-origin fetches that carry the
 * session cookie (set by POST /api/v1/session), JSON in and out, and the
 * API's one error shape turned into an ApiError with its stable code.
 */
export type Role = 'admin' | 'operator' | 'user';
export interface Me {
  role: Role;
  owner: string | null;
  name: string;
}

export type TaskStatus =
  'QUEUED' | 'RUNNING' | 'RETRY_WAIT' | 'PAUSED' | 'CANCEL_REQUESTED' | 'SUCCESS' | 'PARTIAL_SUCCESS' | 'FAILED' | 'CANCELLED' | 'BLOCKED';
export const STATUSES: TaskStatus[] = [
  'QUEUED',
  'RUNNING',
  'RETRY_WAIT',
  'PAUSED',
  'CANCEL_REQUESTED',
  'SUCCESS',
  'PARTIAL_SUCCESS',
  'FAILED',
  'CANCELLED',
  'BLOCKED',
];

export interface Progress {
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  skipped: number;
  message: string | null;
}
export interface Task {
  id: string;
  taskType: string;
  status: TaskStatus;
  priority: number;
  payload: unknown;
  availableAt: string;
  deadlineAt: string | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  attemptCount: number;
  attemptBase: number;
  maxAttempts: number;
  owner: string | null;
  idempotencyKey: string | null;
  progress: Progress | null;
  result: unknown;
  lastErrorCode: string | null;
  /** Leases the task lost (its worker crashed or stalled). */
  leaseExpiries: number;
  traceId: string | null;
  /** W3C traceparent of the span that submitted it (OpenTelemetry). */
  traceParent: string | null;
  unique: UniqueHold | null;
  /** The flow it belongs to (null: none) and how many parents it still waits for. */
  flowId: string | null;
  pendingParents: number;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}
/** An edge of a flow: the child waits for the parent (fanOut: the parent is a task the child's handler made). */
export interface Edge {
  parentId: string;
  childId: string;
  onFailure: 'CANCEL' | 'CONTINUE';
  fanOut: boolean;
  resolution: 'SUCCEEDED' | 'FAILED' | null;
}
export interface Link extends Edge {
  task: Task | null;
}
export interface Flow {
  flowId: string;
  tasks: Task[];
  edges: Edge[];
  counts: Partial<Record<TaskStatus, number>>;
  truncated: boolean;
}

export interface UniqueHold {
  key: string;
  states: TaskStatus[];
  beforeFirstRunOnly: boolean;
  held: boolean;
}
export interface Attempt {
  attempt: number;
  workerId: string;
  startedAt: string;
  finishedAt: string | null;
  outcome: string | null;
  errorCode: string | null;
}
/** An operator's action on a task (GET /api/v1/tasks/:id/actions); a user sees the actor of its own actions only. */
export interface TaskAction {
  action: 'PAUSE' | 'RESUME' | 'CANCEL' | 'RETRY' | 'RESCHEDULE' | 'EDIT' | 'REPLAY' | 'ARCHIVE';
  fromStatus: TaskStatus | null;
  toStatus: TaskStatus | null;
  actor: string | null;
  actorName: string | null;
  detail: string | null;
  at: string;
}
/** A durable step the task's handler completed (GET /api/v1/tasks/:id/steps); a user does not see the worker. */
export interface TaskStep {
  name: string;
  /** false: a cycle an operator's retry or a replay ended (never replayed). */
  current: boolean;
  cycle: number;
  seq: number;
  attempt: number;
  workerId?: string;
  recordedAt: string;
  result?: unknown;
}
/** A line the task's handler logged (GET /api/v1/tasks/:id/logs): fields as stored (redacted); dropped > 0: a marker. */
export interface TaskLog {
  seq: number;
  attempt: number;
  level: 'info' | 'warn' | 'error';
  message: string;
  fields?: Record<string, unknown>;
  dropped: number;
  loggedAt: string;
}
export interface Failure {
  attempt: number;
  errorCode: string;
  message: string;
  failedAt: string;
  retryable: boolean;
}
export interface Diagnosis {
  task: Task;
  attempts: Attempt[];
  failures: Failure[];
  lease: { status: string; remainingSeconds: number | null; expiries: number; quarantined: boolean };
  causes: { code: string; message: string }[];
  verdict: string;
}
export interface DeadLetter {
  id: string;
  originalTaskId: string;
  taskType: string;
  owner: string | null;
  errorCode: string;
  errorMessage: string;
  attemptCount: number;
  movedAt: string;
  replayedAt: string | null;
  replayTaskId: string | null;
  archivedAt: string | null;
}
export interface Policy {
  policyKey: string;
  taskType: string | null;
  maxConcurrency: number | null;
  maxAttempts: number | null;
  retryBaseDelayMs: number | null;
  enabled: boolean;
  /** N starts per ratePeriodMs (rate limits); null: none. */
  rateLimit: number | null;
  ratePeriodMs: number | null;
}
export interface AdaptiveState {
  taskType: string;
  minLimit: number;
  maxLimit: number;
  enabled: boolean;
  overridden: boolean;
  overrideUntil: string | null;
  currentLimit: number;
  changedAt: string;
}

export interface LimitChange {
  id: string;
  taskType: string;
  fromLimit: number | null;
  toLimit: number | null;
  kind: string;
  cause: string;
  actor: string;
  actorName: string | null;
  changedAt: string;
}

export interface LimitBind {
  kind: string;
  position: number;
  ahead: number;
  aheadAtLeast: boolean;
  limit: number | null;
  running: number;
  throughputPerSecond: number | null;
  waitMs: number | null;
  reason: string;
}

export interface TaskEstimate {
  taskId: string;
  state: 'WAITING' | 'STARTED' | 'ENDED' | 'BLOCKED' | 'PAUSED';
  binds: LimitBind[];
  startsAt: string | null;
  startedAt: string | null;
  reason: string;
}

export interface Schedule {
  key: string;
  taskType: string;
  cron: string;
  timeZone: string;
  enabled: boolean;
  catchUp: number;
  lastTickAt: string;
  lastTaskId: string | null;
  nextRuns: string[];
}
export interface Subscription {
  event: string;
  taskType: string;
  priority: number | null;
  maxAttempts: number | null;
  createdAt: string;
  updatedAt: string;
}
export interface SequenceSummary {
  sequenceKey: string;
  onDeadLetter: 'BLOCK' | 'SKIP';
  head: { id: string; taskType: string; status: TaskStatus; lastErrorCode: string | null } | null;
  waiting: number;
  blocked: boolean;
  updatedAt: string;
}
export interface LimitUse {
  running: number;
  limit: number;
  enabled: boolean;
}
export interface Stats {
  at: string;
  counts: Record<TaskStatus, number>;
  backlog: number;
  deadLetters: number;
  global: LimitUse;
  types: (LimitUse & { taskType: string; backlog: number })[];
  workers: { live: number; concurrency: number };
  queueWait: { count: number; p50Ms: number; p99Ms: number } | null;
}
/** GET /stats/history (client.history): one point per minute or hour, counts summed over the writing processes. */
export interface HistoryPoint {
  at: string;
  submitted: number;
  started: number;
  succeeded: number;
  failed: number;
  deadLettered: number;
  waitP50Ms: number | null;
  waitP95Ms: number | null;
  runP50Ms: number | null;
  runP95Ms: number | null;
}
export interface HistorySeries {
  taskType: string | null;
  step: 'minute' | 'hour';
  from: string;
  to: string;
  points: HistoryPoint[];
}
export interface WorkerRecord {
  workerId: string;
  host: string;
  pid: number;
  taskTypes: string[];
  concurrency: number;
  startedAt: string;
  lastSeenAt: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const ADMIN = '/api/admin/async-task';

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) {
    if (response.status === 401 && path !== '/api/v1/session') window.dispatchEvent(new CustomEvent('tasklease:logged-out'));
    throw new ApiError(response.status, parsed?.code ?? 'HTTP_' + response.status, parsed?.message ?? response.statusText);
  }
  return parsed as T;
}

/** The admin API's envelope { success, data }: the data. */
export async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await api<{ data: T }>(method, `${ADMIN}${path}`, body)).data;
}

export const isOperator = (me: Me): boolean => me.role === 'admin' || me.role === 'operator';
