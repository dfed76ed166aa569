/**
 * The runtime every worker process shares. A system's script calls
 * `runChild(prepare)`; `prepare` connects and builds the worker but must not
 * take tasks yet. The parent sends `go` once every worker process is ready
 * (so that in the two-worker run neither starts ahead of the other), then
 * `stop`; the child answers with its counts and timestamps.
 *
 * Timestamps are taken here, in the worker process, with the wall clock at
 * sub-millisecond precision, so IPC delays never enter a measurement.
 */
import { performance } from 'node:perf_hooks';
import type { ChildMessage, LatencyPayload, ParentMessage, WorkerSpec, WorkerStats } from '../types.js';

export interface PreparedWorker {
  /** Begins taking tasks. */
  start(): Promise<void> | void;
  /** Stops taking tasks and flushes what the system buffers (completions). */
  stop(): Promise<void>;
}

/** Call at the start of every handler, with the task's payload. */
export type OnTask = (payload: unknown) => void;

export type Prepare = (spec: WorkerSpec, onTask: OnTask) => Promise<PreparedWorker>;

export const wallClock = (): number => performance.timeOrigin + performance.now();

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

export function runChild(prepare: Prepare): void {
  const raw = process.argv[2];
  if (!raw || !process.send) {
    console.error('worker scripts are started by bench/run.ts (they need argv[2] and an IPC channel)');
    process.exit(2);
  }
  const spec = JSON.parse(raw) as WorkerSpec;
  main(spec, prepare).catch(async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  });
}

async function main(spec: WorkerSpec, prepare: Prepare): Promise<void> {
  const stats: WorkerStats = { count: 0, firstAt: null, lastAt: null, checkpointAt: null, maxRssBytes: 0, cpuMs: 0, cpuTasks: 0 };
  const starts: number[] | null = spec.record ? [] : null;
  const cpuFrom = spec.cpuFrom ?? 0;
  // CPU from go (or from the end of this process's warm-up) to stop; counted per task by the parent.
  let cpuAt: NodeJS.CpuUsage | null = null;
  const onTask: OnTask =
    spec.mode === 'latency'
      ? (payload) => {
          const startedAt = wallClock();
          stats.count += 1;
          const enqueuedAt = (payload as LatencyPayload | null)?.enqueuedAt;
          if (typeof enqueuedAt === 'number') void send({ type: 'started', enqueuedAt, startedAt });
        }
      : () => {
          const now = wallClock();
          stats.count += 1;
          stats.firstAt ??= now;
          stats.lastAt = now;
          starts?.push(now);
          if (stats.count === spec.checkpoint) stats.checkpointAt = now;
          if (stats.count === cpuFrom) cpuAt = process.cpuUsage();
        };

  const worker = await prepare(spec, onTask);
  let reported = 0;
  // Progress lets the parent see the drain end; it never enters a figure.
  const progress = setInterval(() => {
    if (stats.count !== reported) {
      reported = stats.count;
      void send({ type: 'progress', count: reported });
    }
  }, 20);

  process.on('message', (message: ParentMessage) => {
    if (message.type === 'go') {
      if (cpuFrom === 0) cpuAt = process.cpuUsage();
      Promise.resolve(worker.start()).catch(fail);
    } else if (message.type === 'stop') {
      clearInterval(progress);
      if (cpuAt) {
        const used = process.cpuUsage(cpuAt);
        stats.cpuMs = (used.user + used.system) / 1000;
        stats.cpuTasks = stats.count - cpuFrom;
      }
      if (starts) stats.starts = starts;
      worker
        .stop()
        .then(async () => {
          stats.maxRssBytes = process.resourceUsage().maxRSS * 1024;
          await send({ type: 'final', stats });
          process.exit(0);
        })
        .catch(fail);
    }
  });
  await send({ type: 'ready' });
}

function fail(error: unknown): void {
  void send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }).then(() => process.exit(1));
}
