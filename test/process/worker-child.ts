/**
 * A worker process for the fault tests. Configured by env TL_CHILD (JSON,
 * see ChildConfig); reports on stdout as JSON lines: ready, started,
 * aborted, leaseLost, error, and on SIGTERM a final `stopped` line with the
 * ids its handlers ran to completion.
 *
 * Handlers:
 *  - empty: returns at once;
 *  - sleep: waits sleepMs (honouring ctx.signal);
 *  - hold:  waits until ctx.signal aborts (or holdMs), reports `aborted`,
 *           then returns a result anyway — the fenced write must drop it;
 *  - sequence: waits sleepMs, then fails while the attempt is at most the
 *           payload's `failAttempts` (an ordinary, retryable error).
 *
 * With `trace`, an in-memory OpenTelemetry SDK is registered and every span
 * that ends is reported as a `span` line.
 */
import { createWorker } from '../../src/worker/worker.js';
import { defineTask } from '../../src/core/definition.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { openChildStore, type ChildStoreConfig } from './child-store.js';

export interface ChildConfig {
  label: string;
  store: ChildStoreConfig;
  types: string[];
  handler: 'empty' | 'sleep' | 'hold' | 'sequence';
  trace?: boolean;
  sleepMs?: number;
  holdMs?: number;
  worker: Partial<
    Pick<
      WorkerOptions,
      | 'concurrency'
      | 'prefetch'
      | 'claimBatchSize'
      | 'pollIntervalMs'
      | 'leaseMs'
      | 'heartbeatIntervalMs'
      | 'recoveryIntervalMs'
      | 'globalConcurrency'
      | 'typeConcurrency'
      | 'ownerConcurrency'
      | 'fairOwners'
      | 'shutdownGraceMs'
      | 'retry'
    >
  >;
}

const config = JSON.parse(process.env.TL_CHILD!) as ChildConfig;
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const completed: string[] = [];

const wait = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

if (config.trace) {
  const { registerMemoryTracer } = await import('../helpers/memory-tracer.js');
  registerMemoryTracer((span) => say({ event: 'span', span }));
}
const store = await openChildStore(config.store, config.label);
const tasks = config.types.map((type) =>
  defineTask({
    type,
    execute: async (ctx, payload) => {
      if (config.handler === 'sleep' || config.handler === 'sequence') await wait(config.sleepMs ?? 10, ctx.signal);
      if (config.handler === 'sequence' && ctx.attempt <= ((payload as { failAttempts?: number } | null)?.failAttempts ?? 0)) {
        throw new Error(`injected failure of attempt ${ctx.attempt}`);
      }
      if (config.handler === 'hold') {
        await wait(config.holdMs ?? 60_000, ctx.signal);
        if (ctx.signal.aborted) say({ event: 'aborted', id: ctx.taskId, reason: (ctx.signal.reason as { code?: string })?.code });
        completed.push(ctx.taskId);
        return { status: 'SUCCESS' as const, result: { by: config.label } };
      }
      completed.push(ctx.taskId);
      return { status: 'SUCCESS' as const, result: { by: config.label } };
    },
  }),
);
const worker = createWorker({ store, tasks, workerId: config.label, ...config.worker });
worker.on('started', ({ task }) => say({ event: 'started', id: task.id }));
worker.on('leaseLost', ({ task, reason }) => say({ event: 'leaseLost', id: task.id, reason }));
worker.on('error', ({ operation, error }) => say({ event: 'error', operation, message: String((error as Error)?.message ?? error) }));
worker.start();
say({ event: 'ready', pid: process.pid });

process.on('SIGTERM', () => {
  void worker.stop().then(async () => {
    await store.close();
    // Exit once the line is written: a long one outgrows the pipe's buffer, and process.exit would cut its tail.
    process.stdout.write(`${JSON.stringify({ event: 'stopped', completed })}\n`, () => process.exit(0));
  });
});
