/**
 * A worker process for the fault suite (spawned by test/process/harness.ts
 * with this script; config as JSON in env TL_CHILD). Its handler follows
 * FAULTS.md's conventions: it logs an `executions` row in autocommit when it
 * starts, does what the task's payload says, and then writes the task's
 * effect in its own transaction — unless its signal fired (lease lost,
 * shutdown): a handler that honours its signal never writes a stale effect.
 *
 * Payload: { mode: 'sleep' | 'hold' | 'busy' | 'exit' | 'throw' | 'pool', ms, completeAnyway }
 *  - sleep: waits ms (the signal ends the wait early);
 *  - hold:  waits until the signal fires (or ms);
 *  - busy:  blocks the event loop for ms;
 *  - exit:  the poison pill, process.exit(1);
 *  - throw: fails at once with an ordinary (retryable) error;
 *  - pool:  holds a connection of the store's main pool for ms (FAULTS.md 18).
 * completeAnyway: after an abort, return a result all the same (without the
 * effect), so the fenced outcome write must be the one to drop it.
 * steps: runs `steps` durable steps (ctx.step 's1', 's2', …), each fn logging a
 * step_runs row first; the fn of step `holdStep` then waits `ms` — on the
 * signal too unless `deafStep` (a zombie's fn that does not listen) — before
 * it returns; then the effect as usual.
 * onlyAttempt: the mode applies to that attempt only.
 * strictTypes: these types check their payload against that shape at run
 * time (fault-payload.ts); a payload that fails it is not the handler's.
 *
 * sandboxTypes: of `types`, those whose handler runs in a worker thread
 * (sandbox-handler.ts, core/sandbox.ts) with `sandbox` options and the timeout
 * `sandboxTimeoutMs`.
 *
 * clockSkewMs: this process's clocks run that far off — its wall clock
 * (Date.now, what a misconfigured host would show) and the worker's Clock.
 * The store is opened before the skew: its clock is the database's (on
 * SQLite, the machine's, which one process cannot skew without libfaketime).
 *
 * stdout: JSON lines ready, started, aborted (with `at`, Date.now()), completed, batch (a batch handler's call and its size),
 * leaseLost, heartbeat (leases renewed, its wait for a connection and round
 * trip), error, sigterm, and on stop `stopped` with the ids it completed.
 */
import { defineTask } from '../../src/core/definition.js';
import type { SandboxOptions } from '../../src/core/sandbox.js';
import type { TaskContext } from '../../src/core/context.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import type { WorkerOptions } from '../../src/worker/options.js';
import { createWorker } from '../../src/worker/worker.js';
import { holdPoolConnection, openChildStore, type ChildStoreConfig } from '../process/child-store.js';
import { FAULT_PAYLOAD_SCHEMA } from './fault-payload.js';
import { openHandlerTables, type HandlerDb } from './handler-tables.js';

export interface FaultChildConfig {
  label: string;
  store: ChildStoreConfig;
  handlerDb: HandlerDb;
  types: string[];
  /** Of `types`, those defined with FAULT_PAYLOAD_SCHEMA. */
  strictTypes?: string[];
  /** Of `types`, those run by batch handlers (executeBatch, up to 4 tasks a call): each task of a call runs the handler above, its own part. */
  batchTypes?: string[];
  /** Of `types`, those run in a sandbox (sandbox-handler.ts): each with these sandbox options and timeout. */
  sandboxTypes?: string[];
  sandbox?: Omit<SandboxOptions, 'module' | 'exportName'>;
  sandboxTimeoutMs?: number;
  clockSkewMs?: number;
  worker: Partial<Omit<WorkerOptions, 'store' | 'tasks' | 'clock' | 'logger' | 'workerId'>>;
}

export interface FaultPayload {
  /** hog: the sandboxed handler's only (sandbox-handler.ts). */
  mode?: 'sleep' | 'hold' | 'busy' | 'exit' | 'throw' | 'pool' | 'steps' | 'hog';
  ms?: number;
  /** mode steps: how many steps, which one holds, and whether its hold ignores the signal. */
  steps?: number;
  holdStep?: number;
  deafStep?: boolean;
  completeAnyway?: boolean;
  /** The mode applies to this attempt only; other attempts sleep 10 ms (a rescuer is not caught by the same fault). */
  onlyAttempt?: number;
}

const config = JSON.parse(process.env.TL_CHILD!) as FaultChildConfig;
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ ...line, at: Date.now() })}\n`);
const completed: string[] = [];
const tables = await openHandlerTables(config.handlerDb, config.label);
const opened = await openChildStore(config.store, config.label);
// Every durable step's record and the store's answer (a zombie's is refused: its fence no longer holds).
const store = Object.create(opened, {
  recordStep: {
    value: async (params: Parameters<typeof opened.recordStep>[0]) => {
      const recorded = await opened.recordStep(params);
      say({ event: recorded ? 'stepRecorded' : 'stepRefused', id: params.lease.taskId, attempt: params.lease.attempt, name: params.name });
      return recorded;
    },
  },
}) as typeof opened;
const skew = config.clockSkewMs ?? 0;
if (skew !== 0) {
  const wallClock = Date.now.bind(Date);
  Date.now = () => wallClock() + skew;
}
const clock: Clock = { ...systemClock, now: () => systemClock.now() + skew };

const wait = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Resolves with the promise, or when the signal fires (a frozen database must not hold an aborted handler). */
const orAbort = <T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> =>
  Promise.race([promise, wait(2 ** 31 - 1, signal).then(() => undefined)]);

async function execute(ctx: TaskContext, given: FaultPayload): Promise<{ status: 'SUCCESS'; result: unknown }> {
  const { signal } = ctx;
  const payload: FaultPayload =
    given.onlyAttempt === undefined || given.onlyAttempt === ctx.attempt ? given : given.mode === 'steps' ? { mode: 'steps', steps: given.steps } : { ms: 10 };
  await orAbort(tables.logExecution(ctx.taskId, ctx.attempt, config.label), signal);
  const ms = payload.ms ?? 10;
  if (payload.mode === 'exit') process.exit(1);
  if (payload.mode === 'throw') throw new Error('the handler failed on purpose');
  if (payload.mode === 'steps') {
    for (let i = 1; i <= (payload.steps ?? 3); i += 1) {
      const name = `s${i}`;
      try {
        await ctx.step(name, async () => {
          await tables.logStepRun(ctx.taskId, name, ctx.attempt, config.label);
          say({ event: 'stepRun', id: ctx.taskId, attempt: ctx.attempt, name });
          if (i === payload.holdStep) await (payload.deafStep ? new Promise((resolve) => setTimeout(resolve, ms)) : wait(ms, signal));
          return { name, by: config.label, attempt: ctx.attempt };
        });
      } catch (error) {
        say({ event: 'aborted', id: ctx.taskId, attempt: ctx.attempt, reason: (error as { code?: string })?.code, step: name });
        throw error;
      }
    }
  } else if (payload.mode === 'busy') for (const end = Date.now() + ms; Date.now() < end;);
  else if (payload.mode === 'pool') {
    const release = await holdPoolConnection(store);
    await wait(ms, signal);
    release();
  } else await wait(payload.mode === 'hold' ? ms || 600_000 : ms, signal);
  // Let due timers run first (the local lease deadline after a blocked loop).
  await new Promise((resolve) => setTimeout(resolve, 0));
  if (signal.aborted) {
    say({ event: 'aborted', id: ctx.taskId, attempt: ctx.attempt, reason: (signal.reason as { code?: string })?.code });
    if (!payload.completeAnyway) throw signal.reason;
    return { status: 'SUCCESS', result: { by: config.label, attempt: ctx.attempt, stale: true } };
  }
  await tables.writeEffect(ctx.taskId, ctx.attempt, config.label);
  completed.push(ctx.taskId);
  return { status: 'SUCCESS', result: { by: config.label, attempt: ctx.attempt } };
}

const strict = new Set(config.strictTypes ?? []);
const batched = new Set(config.batchTypes ?? []);
const sandboxed = new Set(config.sandboxTypes ?? []);
const SANDBOX_MODULE = new URL('./sandbox-handler.ts', import.meta.url);
const tasks = config.types.map((type) =>
  sandboxed.has(type)
    ? defineTask({ type, timeoutMs: config.sandboxTimeoutMs, sandbox: { module: SANDBOX_MODULE, exportName: 'run', ...config.sandbox } })
    : batched.has(type)
      ? defineTask({
          type,
          batch: { maxSize: 4, maxWaitMs: 500 },
          // Each task's part with its own context: an aborted part returns its abort (its outcome is the abort's anyway).
          executeBatch: (_ctx, items) =>
            Promise.all(items.map((item) => execute(item.ctx, (item.ctx.task.payload ?? {}) as FaultPayload).catch((error: Error) => error))),
        })
      : defineTask({
          type,
          ...(strict.has(type) ? { schema: FAULT_PAYLOAD_SCHEMA } : {}),
          execute: (ctx) => execute(ctx, (ctx.task.payload ?? {}) as FaultPayload),
        }),
);
const worker = createWorker({ store, tasks, clock, workerId: config.label, ...config.worker });
worker.on('started', ({ task }) => say({ event: 'started', id: task.id, attempt: task.attemptCount }));
worker.on('completed', ({ task }) => say({ event: 'completed', id: task.id, attempt: task.attemptCount }));
worker.on('batchStarted', ({ taskType, size }) => say({ event: 'batch', taskType, size }));
worker.on('leaseLost', ({ task, reason }) => say({ event: 'leaseLost', id: task.id, reason }));
worker.on('heartbeat', ({ renewed, waitMs, roundTripMs }) => say({ event: 'heartbeat', renewed, waitMs, roundTripMs }));
worker.on('error', ({ operation, error }) => say({ event: 'error', operation, message: String((error as Error)?.message ?? error) }));
worker.start();
say({ event: 'ready', pid: process.pid });

let sigterms = 0;
process.on('SIGTERM', () => {
  say({ event: 'sigterm', n: ++sigterms });
  if (sigterms > 1) return; // stop() is already under way: further SIGTERMs change nothing
  void worker.stop().then(async () => {
    await store.close().catch(() => undefined);
    await tables.close().catch(() => undefined);
    // Exit once the line is written: a long one outgrows the pipe's buffer, and process.exit would cut its tail.
    process.stdout.write(`${JSON.stringify({ event: 'stopped', completed })}\n`, () => process.exit(0));
  });
});
