/**
 * The contracts of the benchmark: what a system adapter offers the
 * orchestrator (parent process), what a worker process is told, and what it
 * reports back over IPC. Every worker runs in its own OS process so that the
 * producer and the worker never share an event loop.
 */

import type { WorkScope } from './db-work.js';

export type WorkloadName = 'enqueue' | 'drain' | 'latency' | 'scale' | 'two-workers' | 'limits';

export const ALL_WORKLOADS: readonly WorkloadName[] = ['enqueue', 'drain', 'latency', 'scale', 'two-workers', 'limits'];

/** Cluster-wide and per-type concurrency limits (tasklease only). */
export interface Limits {
  global: number;
  perType: number;
}

/** The task type every system uses; one type keeps the per-type limit meaningful. */
export const TASK_TYPE = 'bench_noop';

/** Payload of a latency probe: the producer's wall clock (ms, sub-ms precision) just before enqueue. */
export interface LatencyPayload {
  enqueuedAt: number;
}

export interface SystemAdapter {
  readonly name: string;
  /** 'tasklease' systems run every workload; peers skip `limits` and, by default, `scale`. */
  readonly kind: 'peer' | 'tasklease';
  /** Absolute path of the worker process script (see bench/workers/child.ts). */
  readonly workerScript: string;
  /**
   * How often an idle worker polls when no wake-up reaches it across
   * processes; 0 when a notification wakes it. The latency probes pause a
   * random 0..max(gap, this) ms so that they arrive at a random phase of the
   * poll rather than in lock-step with it.
   */
  readonly pollPeriodMs: number;
  /** Whether the system can enforce global / per-type limits (workload 6). */
  readonly supportsLimits: boolean;
  /** Where its tables are, for the database's work per task (WAL, commits, rows); null: not measured (SQLite, Redis). */
  readonly workScope: WorkScope | null;
  /** Null when the backing service answers; otherwise why this system is skipped. */
  probe(): Promise<string | null>;
  /** A fresh, empty queue in the adapter's own schema / key prefix / database. */
  setup(): Promise<void>;
  /** Drops everything setup created and closes the producer's connections. Idempotent. */
  teardown(): Promise<void>;
  /**
   * Closes the producer's connections (their PostgreSQL backends flush their
   * statistics as they exit); the next call that needs them opens new ones.
   * Called around the measured phases, so that each phase's rows and commits
   * are counted in that phase.
   */
  release(): Promise<void>;
  /** Enqueues `count` empty tasks in calls of `batchSize`. */
  enqueueBulk(count: number, batchSize: number): Promise<void>;
  /** Enqueues one task carrying `payload` (latency probes). */
  enqueueOne(payload: LatencyPayload): Promise<void>;
  /** Tasks not yet finished (queued or running): checked after a drain. */
  remaining(): Promise<number>;
  /** Serializable options for the worker process. */
  workerOptions(params: { concurrency: number; limits: Limits | null }): Record<string, unknown>;
  /** Human-readable settings for RESULTS.md. */
  settings(params: { concurrency: number }): Record<string, string>;
  /** Package versions this adapter depends on (name → version). */
  packages(): string[];
}

/** What the orchestrator hands a worker process (JSON in argv[2]). */
export interface WorkerSpec {
  system: string;
  mode: 'drain' | 'latency';
  concurrency: number;
  options: Record<string, unknown>;
  /** Drain mode: stamp the handler start that brings the count to this number. */
  checkpoint?: number;
  /** Drain mode: keep every handler start's time (the parent drops the warm-up starts). */
  record?: boolean;
  /** Drain mode: the CPU figure counts from this process's handler start number `cpuFrom` (its share of the warm-up). */
  cpuFrom?: number;
}

/** Parent → child. */
export type ParentMessage = { type: 'go' } | { type: 'stop' };

/** Child → parent. Times are wall clock in ms (performance.timeOrigin + performance.now()). */
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'progress'; count: number }
  | { type: 'started'; enqueuedAt: number; startedAt: number }
  | { type: 'final'; stats: WorkerStats }
  | { type: 'error'; message: string };

export interface WorkerStats {
  /** Handlers run. */
  count: number;
  /** First and last handler start (null when none ran). */
  firstAt: number | null;
  lastAt: number | null;
  /** When the count reached spec.checkpoint (null when not asked or not reached). */
  checkpointAt: number | null;
  /** Peak resident set size of the worker process (bytes). */
  maxRssBytes: number;
  /** CPU (user + system, ms) of the worker process from handler start `cpuFrom` (or from go) to stop. */
  cpuMs: number;
  /** Handlers run within that CPU figure. */
  cpuTasks: number;
  /** Every handler start's wall-clock time, when spec.record. */
  starts?: number[];
}

/** One measured line; printed as JSON. */
export interface ResultLine {
  system: string;
  workload: string;
  value: number;
  unit: string;
  p50?: number;
  p95?: number;
  p99?: number;
  [extra: string]: unknown;
}
