/**
 * Health checks (seed article 2, 健康检查设计): the control plane (database
 * reachable, schema at the version this code expects, queue depth) and one
 * worker (running, slot utilization). Plain functions: the HTTP server maps
 * them to probes, and anyone may call them directly.
 */
import { Scope } from '../core/scope.js';
import { checkKnownKeys, checkNumber } from '../core/validate.js';
import type { Store } from '../store/types.js';
import type { Worker, WorkerState, WorkerStats } from '../worker/worker.js';

export type HealthStatus = 'UP' | 'DEGRADED' | 'DOWN';

export interface HealthReport<Details> {
  status: HealthStatus;
  details: Details;
  /** Why the status is not UP, in plain words. */
  error?: string;
}

export interface ControlPlaneDetails {
  dialect: Store['dialect'];
  schemaVersion: number | null;
  expectedSchemaVersion: number;
  /** Counts (null when the database did not answer). */
  total: number | null;
  queued: number | null;
  running: number | null;
  retryWait: number | null;
  paused: number | null;
  deadLetters: number | null;
  backlogThreshold: number;
  /**
   * PostgreSQL only: whether LISTEN/NOTIFY wake-ups are heard
   * (PostgresStore.wakeups). 'deaf' makes the report DEGRADED.
   */
  wakeups?: string;
}

export interface ControlPlaneHealthOptions {
  /** DEGRADED when more than this many tasks are QUEUED (seed: 1000). */
  backlogThreshold?: number;
  /** DOWN when the database has not answered within this time; probes have short timeouts (seed: 3–5 s). Default 5000. */
  timeoutMs?: number;
}

export async function controlPlaneHealth(store: Store, options: ControlPlaneHealthOptions = {}): Promise<HealthReport<ControlPlaneDetails>> {
  checkKnownKeys('controlPlaneHealth', options, ['backlogThreshold', 'timeoutMs']);
  const backlogThreshold = options.backlogThreshold ?? 1000;
  const timeoutMs = options.timeoutMs ?? 5000;
  checkNumber('controlPlaneHealth', 'backlogThreshold', backlogThreshold, { min: 0, integer: true });
  checkNumber('controlPlaneHealth', 'timeoutMs', timeoutMs, { min: 1, integer: true });
  const details: ControlPlaneDetails = {
    dialect: store.dialect,
    schemaVersion: null,
    expectedSchemaVersion: store.expectedSchemaVersion,
    total: null,
    queued: null,
    running: null,
    retryWait: null,
    paused: null,
    deadLetters: null,
    backlogThreshold,
  };
  try {
    details.schemaVersion = await withTimeout(store.schemaVersion(), timeoutMs);
  } catch (error) {
    return { status: 'DOWN', details, error: `database unreachable: ${describeError(error)}` };
  }
  const schemaProblem = checkSchema(details.schemaVersion, details.expectedSchemaVersion);
  if (schemaProblem) return { status: 'DOWN', details, error: schemaProblem };
  try {
    const scope = Scope.global();
    const [counts, deadLetters] = await withTimeout(Promise.all([store.countByStatus({ scope }), store.countDeadLetters({ scope })]), timeoutMs);
    Object.assign(details, {
      total: Object.values(counts).reduce((sum, n) => sum + n, 0),
      queued: counts.QUEUED,
      running: counts.RUNNING + counts.CANCEL_REQUESTED,
      retryWait: counts.RETRY_WAIT,
      paused: counts.PAUSED,
      deadLetters,
    });
  } catch (error) {
    return { status: 'DOWN', details, error: `database query failed (tables missing or unreadable?): ${describeError(error)}` };
  }
  const wakeups = (store as { wakeups?: unknown }).wakeups;
  if (typeof wakeups === 'string') details.wakeups = wakeups;
  if (wakeups === 'deaf') {
    const fix = 'give the store listenConnectionString (direct or session-pooled) or pollOnly: true (docs/production.md)';
    return { status: 'DEGRADED', details, error: `wake-ups are not heard (LISTEN behind a transaction pooler?): workers poll instead; ${fix}` };
  }
  if (details.queued! > backlogThreshold) {
    return { status: 'DEGRADED', details, error: `backlog: ${details.queued} tasks queued, above the threshold of ${backlogThreshold}` };
  }
  return { status: 'UP', details };
}

function checkSchema(actual: number, expected: number): string | null {
  if (actual === expected) return null;
  if (actual === 0) return `schema not installed (expected version ${expected}): run store.migrate()`;
  if (actual < expected) return `schema version ${actual} is behind the version this code expects (${expected}): run store.migrate()`;
  return `schema version ${actual} is newer than this code expects (${expected}): upgrade tasklease on this host`;
}

export interface WorkerHealthDetails {
  workerId: string;
  state: WorkerState;
  running: boolean;
  active: number;
  buffered: number;
  maxConcurrency: number;
  /** active / maxConcurrency, 0–1. */
  utilization: number;
  registeredTaskTypes: string[];
  /** What the runtime policies let this worker hold (global, per type, usable). */
  limits: WorkerStats['limits'];
  /** The store operation failing now, if any. */
  storeProblem: WorkerStats['storeProblem'];
}

export interface WorkerHealthOptions {
  /** DEGRADED when utilization is above this fraction (seed: 0.9). */
  utilizationThreshold?: number;
}

export function workerHealth(worker: Worker, options: WorkerHealthOptions = {}): HealthReport<WorkerHealthDetails> {
  checkKnownKeys('workerHealth', options, ['utilizationThreshold']);
  const threshold = options.utilizationThreshold ?? 0.9;
  checkNumber('workerHealth', 'utilizationThreshold', threshold, { min: 0, max: 1 });
  const stats = worker.stats();
  const details: WorkerHealthDetails = {
    workerId: stats.workerId,
    state: stats.state,
    running: stats.state === 'running',
    active: stats.active,
    buffered: stats.buffered,
    maxConcurrency: stats.concurrency,
    utilization: stats.active / stats.concurrency,
    registeredTaskTypes: stats.taskTypes,
    limits: stats.limits,
    storeProblem: stats.storeProblem,
  };
  if (!details.running) return { status: 'DOWN', details, error: `worker ${stats.workerId} is not running (state ${stats.state})` };
  const problem = stats.storeProblem;
  if (problem) {
    return {
      status: 'DOWN',
      details,
      error: `worker ${stats.workerId} cannot use its store: ${problem.operation} failing since ${problem.since.toISOString()} (${problem.code ?? 'no code'}: ${problem.message})`,
    };
  }
  if (details.utilization > threshold) {
    const percent = (details.utilization * 100).toFixed(0);
    return {
      status: 'DEGRADED',
      details,
      error: `worker load ${percent}% is above ${(threshold * 100).toFixed(0)}% (${stats.active} of ${stats.concurrency} slots)`,
    };
  }
  return { status: 'UP', details };
}

const RANK: Record<HealthStatus, number> = { UP: 0, DEGRADED: 1, DOWN: 2 };

/** The worst of several statuses (one readiness probe over the control plane and every worker). */
export function worstStatus(reports: readonly HealthReport<unknown>[]): HealthStatus {
  return reports.reduce<HealthStatus>((worst, r) => (RANK[r.status] > RANK[worst] ? r.status : worst), 'UP');
}

function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' })), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Name, code and message, with any URL credentials masked (a health answer may be public). */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const text = `${error.name}${typeof code === 'string' ? ` [${code}]` : ''}: ${error.message}`;
  return text.replace(/\/\/[^/@\s]+@/g, '//***@').slice(0, 500);
}
