/**
 * The measurements. Every workload starts from a fresh queue (setup) and
 * leaves nothing behind (teardown), so one cannot warm or bloat another.
 */
import { performance } from 'node:perf_hooks';
import { WorkerProcess } from './harness.js';
import { sleep } from './config.js';
import { perTask, type Meter, type Phase, type WorkPerTask } from './db-work.js';
import { mysqlMeter } from './mysql-work.js';
import { pgMeter } from './pg-work.js';
import type { Limits, SystemAdapter, WorkerStats, WorkerSpec } from './types.js';

export interface BenchOptions {
  quick: boolean;
  /** Interleaved rounds of enqueue, drain, latency and two-workers. */
  rounds: number;
  n: number;
  /** Untimed tasks enqueued and drained ahead of the timed ones. */
  warmupTasks: number;
  /** Timed tasks of the limits workload. */
  limitsN: number;
  concurrency: number;
  backlog: number;
  smallBacklog: number;
  samples: number;
  warmup: number;
  batch: number;
  drainTimeoutMs: number;
  scaleTimeoutMs: number;
  latencyBudgetMs: number;
  /** Idle pause before each latency probe: uniform in [0, latencyGapMs] ms (0 = back to back). */
  latencyGapMs: number;
  limits: Limits;
}

const wallClock = (): number => performance.timeOrigin + performance.now();

/** Every worker process alive, so that an interrupted run can kill them. */
export const liveWorkers = new Set<WorkerProcess>();

async function spawnWorkers(adapter: SystemAdapter, spec: WorkerSpec, count: number): Promise<WorkerProcess[]> {
  const workers = await Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const worker = await WorkerProcess.spawn(adapter.workerScript, spec, `${adapter.name} worker ${index + 1}`);
      liveWorkers.add(worker);
      return worker;
    }),
  );
  return workers;
}

async function stopWorkers(workers: WorkerProcess[]): Promise<WorkerStats[]> {
  try {
    return await Promise.all(workers.map((worker) => worker.stop()));
  } finally {
    for (const worker of workers) {
      worker.kill();
      liveWorkers.delete(worker);
    }
  }
}

/** The meter of a system's tables, or null (SQLite, Redis). */
export function workMeter(adapter: SystemAdapter): Meter | null {
  const scope = adapter.workScope;
  if (!scope) return null;
  return scope.dialect === 'postgres' ? pgMeter(scope.schema) : mysqlMeter();
}

/**
 * Begins measuring the database's work (after closing the producer's
 * connections, so that what they did before is counted before). A meter that
 * fails costs only the work figures, never the workload.
 */
async function beginWork(adapter: SystemAdapter): Promise<Phase | null> {
  await adapter.release();
  try {
    return (await workMeter(adapter)?.begin()) ?? null;
  } catch (error) {
    console.error(`[bench] ${adapter.name}: database work not measured: ${(error as Error).message}`);
    return null;
  }
}

/** Ends a phase begun by beginWork, once its connections have closed: per-task figures over `tasks`. */
async function endWork(adapter: SystemAdapter, phase: Phase | null, tasks: number): Promise<WorkPerTask | null> {
  if (!phase) return null;
  try {
    return perTask(await phase.end(tasks));
  } catch (error) {
    console.error(`[bench] ${adapter.name}: database work not measured: ${(error as Error).message}`);
    return null;
  }
}

export interface EnqueueResult {
  tasksPerSecond: number;
  seconds: number;
  /** CPU of the producing process per task, µs (the database's own CPU is not in it). */
  cpuUsPerTask: number;
}

export async function enqueue(adapter: SystemAdapter, count: number, batch: number): Promise<EnqueueResult> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  await adapter.enqueueBulk(count, batch);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  return { tasksPerSecond: count / seconds, seconds, cpuUsPerTask: round((used.user + used.system) / count, 1) };
}

/**
 * Fills a fresh queue: `warmup` untimed tasks, then `count` timed ones
 * (`enqueue`); the database's work is measured over both, per task, with the
 * producer's connections closed before and after.
 */
export async function fill(
  adapter: SystemAdapter,
  params: { warmup: number; count: number; batch: number },
): Promise<EnqueueResult & { work: WorkPerTask | null }> {
  const phase = await beginWork(adapter);
  if (params.warmup > 0) await adapter.enqueueBulk(params.warmup, params.batch);
  const result = await enqueue(adapter, params.count, params.batch);
  await adapter.release();
  return { ...result, work: await endWork(adapter, phase, params.warmup + params.count) };
}

export interface DrainResult {
  tasksPerSecond: number;
  processed: number;
  seconds: number;
  /** The drain hit its time limit; the rate is over what was done. */
  partial: boolean;
  /** Tasks not finished in the store after the workers stopped (0 expected unless partial). */
  remaining: number;
  /** Peak RSS per worker process, MB. */
  peakRssMB: number[];
  /** Handlers run per worker process. */
  perWorker: number[];
  /** One process with a checkpoint: tasks/s over the first `checkpoint` tasks. */
  firstRate: number | null;
  /** CPU of the worker process(es) per task after the warm-up, µs (survives a loaded machine better than the rate). */
  cpuUsPerTask: number | null;
  /** The database's work per task drained, from before the workers started to after they exited (warm-up included); null: not measured. */
  work: WorkPerTask | null;
}

/**
 * Drains `count` already-queued tasks with `processes` worker processes.
 * The rate is taken over [first handler start, last handler start] across
 * all processes, from their own clocks; startup is excluded. With `warmup`,
 * the first `warmup` of the `count` starts (across processes) only warm the
 * workers up (JIT, connections, caches): the rate runs from the next one.
 */
export async function drain(
  adapter: SystemAdapter,
  options: BenchOptions,
  params: { count: number; processes: number; limits: Limits | null; timeoutMs: number; checkpoint?: number; warmup?: number },
): Promise<DrainResult> {
  const warmup = params.warmup ?? 0;
  const spec: WorkerSpec = {
    system: adapter.name,
    mode: 'drain',
    concurrency: options.concurrency,
    options: adapter.workerOptions({ concurrency: options.concurrency, limits: params.limits }),
    ...(params.checkpoint ? { checkpoint: params.checkpoint } : {}),
    ...(warmup > 0 ? { record: true, cpuFrom: Math.floor(warmup / params.processes) } : {}),
  };
  const phase = await beginWork(adapter);
  const workers = await spawnWorkers(adapter, spec, params.processes);
  let partial = false;
  let stats: WorkerStats[];
  try {
    const done = new Promise<void>((resolve) => {
      const check = (): void => {
        if (workers.reduce((sum, worker) => sum + worker.count, 0) >= params.count) resolve();
      };
      for (const worker of workers) worker.onProgress = check;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), params.timeoutMs);
    });
    for (const worker of workers) worker.go();
    const outcome = await Promise.race([done, timeout, ...workers.map((worker) => worker.failed())]);
    clearTimeout(timer);
    partial = outcome === 'timeout';
  } finally {
    stats = await stopWorkers(workers);
  }
  const started = stats.reduce((sum, s) => sum + s.count, 0);
  if (started === 0) throw new Error(`no task started within ${params.timeoutMs / 1000} s (see the worker's stderr above)`);
  const { processed, seconds } = timedSpan(stats, warmup);
  const cpuTasks = stats.reduce((sum, s) => sum + s.cpuTasks, 0);
  const work = await endWork(adapter, phase, started); // before remaining(), which opens the producer again
  return {
    tasksPerSecond: seconds > 0 ? processed / seconds : 0,
    cpuUsPerTask: cpuTasks > 0 ? round((stats.reduce((sum, s) => sum + s.cpuMs, 0) * 1000) / cpuTasks, 1) : null,
    processed,
    seconds,
    partial,
    remaining: await adapter.remaining(),
    peakRssMB: stats.map((s) => round(s.maxRssBytes / 1024 / 1024, 1)),
    perWorker: stats.map((s) => s.count),
    firstRate: firstRate(stats, params.checkpoint),
    work,
  };
}

/** Tasks and seconds of the timed part: all starts, or those after the first `warmup` (merged across processes). */
function timedSpan(stats: WorkerStats[], warmup: number): { processed: number; seconds: number } {
  if (warmup > 0) {
    const starts = stats.flatMap((s) => s.starts ?? []).sort((a, b) => a - b);
    const from = starts[warmup];
    const to = starts.at(-1);
    if (from === undefined || to === undefined) return { processed: 0, seconds: 0 };
    return { processed: starts.length - warmup - 1, seconds: (to - from) / 1000 };
  }
  const firsts = stats.flatMap((s) => (s.firstAt === null ? [] : [s.firstAt]));
  const lasts = stats.flatMap((s) => (s.lastAt === null ? [] : [s.lastAt]));
  const processed = stats.reduce((sum, s) => sum + s.count, 0);
  return { processed, seconds: firsts.length > 0 ? (Math.max(...lasts) - Math.min(...firsts)) / 1000 : 0 };
}

function firstRate(stats: WorkerStats[], checkpoint: number | undefined): number | null {
  const [only] = stats;
  if (stats.length !== 1 || !only || !checkpoint || only.checkpointAt === null || only.firstAt === null) return null;
  const seconds = (only.checkpointAt - only.firstAt) / 1000;
  return seconds > 0 ? checkpoint / seconds : null;
}

export interface LatencyResult {
  /** Every sample kept (ms), sorted. */
  values: number[];
  samples: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  max: number;
  /** Stopped early at the time budget. */
  partial: boolean;
}

/**
 * One idle worker; the producer enqueues one task, waits until its handler
 * has started, then enqueues the next. Latency = handler start (worker's
 * clock) − time just before the enqueue call (producer's clock).
 */
export async function latency(adapter: SystemAdapter, options: BenchOptions): Promise<LatencyResult> {
  const spec: WorkerSpec = {
    system: adapter.name,
    mode: 'latency',
    concurrency: options.concurrency,
    options: adapter.workerOptions({ concurrency: options.concurrency, limits: null }),
  };
  const [worker] = await spawnWorkers(adapter, spec, 1);
  if (!worker) throw new Error('no worker');
  const values: number[] = [];
  let partial = false;
  try {
    worker.go();
    await sleep(500); // let the worker finish its start-up (LISTEN, first poll) and go idle
    const deadline = performance.now() + options.latencyBudgetMs;
    const crashed = worker.failed();
    const gapMs = Math.max(options.latencyGapMs, adapter.pollPeriodMs);
    for (let index = 0; index < options.warmup + options.samples; index += 1) {
      if (performance.now() > deadline) {
        partial = true;
        break;
      }
      const started = new Promise<number>((resolve) => {
        worker.onStarted = (enqueuedAt, startedAt) => resolve(startedAt - enqueuedAt);
      });
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${adapter.name}: a latency probe did not start within 10 s`)), 10_000);
      });
      const enqueuedAt = wallClock();
      const [value] = await Promise.race([Promise.all([started, adapter.enqueueOne({ enqueuedAt })]), stuck, crashed]);
      clearTimeout(timer);
      if (index >= options.warmup) values.push(value);
      if (gapMs > 0) await sleep(Math.random() * gapMs);
    }
  } finally {
    worker.onStarted = null;
    await stopWorkers([worker]);
  }
  values.sort((a, b) => a - b);
  return { values, ...percentiles(values), partial };
}

/** Nearest-rank p50 / p95 / p99, mean and max of samples (ms). */
export function percentiles(values: number[]): { samples: number; p50: number; p95: number; p99: number; mean: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50: round(percentile(sorted, 50), 2),
    p95: round(percentile(sorted, 95), 2),
    p99: round(percentile(sorted, 99), 2),
    mean: round(sorted.reduce((sum, v) => sum + v, 0) / Math.max(1, sorted.length), 2),
    max: round(sorted.at(-1) ?? Number.NaN, 2),
  };
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export function round(value: number, digits = 0): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
