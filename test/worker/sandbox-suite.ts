/**
 * Sandboxed handlers (issue 27, part 5; worker/sandbox/) on every store: the
 * handler runs in a worker thread named by its module (sandbox-handlers.ts);
 * results, errors (name, code, retryable), progress and durable steps cross;
 * a warm thread is reused; a busy loop is terminated at its timeout while the
 * worker's other tasks run on; memory exhaustion and a crash fail the attempt
 * with stable codes, retried per policy; a lost lease and a cancel end the
 * thread for real; what cannot work in a thread (ctx.complete(tx), a result
 * structured clone cannot carry) fails for good.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { defineTask, type AnyTaskDefinition } from '../../src/core/definition.js';
import type { SandboxOptions } from '../../src/core/sandbox.js';
import { Scope } from '../../src/core/scope.js';
import type { Task } from '../../src/core/task.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';

const G = Scope.global();
const HANDLERS = new URL('./sandbox-handlers.ts', import.meta.url);
/** A thread's start through tsx takes a fraction of a second on a quiet machine; far more on a loaded one. */
const SLOW = 60_000;

function sandboxed(type: string, exportName: string, extra: Partial<AnyTaskDefinition> = {}, sandbox: Partial<SandboxOptions> = {}) {
  return defineTask({ type, maxAttempts: 1, ...extra, sandbox: { module: HANDLERS, exportName, ...sandbox } });
}

export function runSandboxSuite(factory: StoreFactory): void {
  describe(`sandboxed handlers on ${factory.dialect}`, () => {
    const env = perTestStore(factory);
    const scratch = mkdtempSync(join(tmpdir(), 'tasklease-sandbox-'));
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    function start(tasks: AnyTaskDefinition[], options: Record<string, unknown> = {}) {
      return env.track(createWorker({ store: env.store, tasks, ...FAST_WORKER, ...options })).start();
    }

    async function ended(id: string, timeoutMs = SLOW): Promise<Task> {
      return waitFor(
        async () => {
          const task = await env.store.getTask({ id, scope: G });
          return task && ['SUCCESS', 'FAILED', 'CANCELLED'].includes(task.status) ? task : null;
        },
        `task ${id} to end`,
        timeoutMs,
        20,
      );
    }

    async function submit(store: Store, type: AnyTaskDefinition, payload: unknown = {}, maxAttempts?: number): Promise<string> {
      const { task } = await createClient({ store, tasks: [type] }).submit(type, payload, maxAttempts ? { maxAttempts } : {});
      return task.id;
    }

    it(
      'runs the handler in a thread: payload in, result out by structured clone; one warm thread serves the next task',
      async () => {
        const echo = sandboxed('sbx.echo', 'default');
        start([echo], { concurrency: 1 });
        const first = await ended(await submit(env.store, echo, { n: 1, list: [1, 2] }));
        const second = await ended(await submit(env.store, echo, { n: 2 }));
        expect(first.status).toBe('SUCCESS');
        expect(first.result).toEqual({ payload: { n: 1, list: [1, 2] }, attempt: 1, taskId: first.id, calls: 1 });
        expect(second.result).toMatchObject({ payload: { n: 2 }, calls: 2 }); // the same thread, its module state kept
      },
      SLOW,
    );

    it(
      'a thread idle past idleTimeoutMs ends: the next task starts a fresh one (its module state anew)',
      async () => {
        const echo = sandboxed('sbx.echo-idle', 'default', {}, { idleTimeoutMs: 50 });
        start([echo], { concurrency: 1 });
        expect((await ended(await submit(env.store, echo))).result).toMatchObject({ calls: 1 });
        // Polled, not slept: a later task finds no warm thread once the idle time has run out.
        const fresh = await waitFor(
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            const task = await ended(await submit(env.store, echo));
            return (task.result as { calls: number }).calls === 1 ? task : null;
          },
          'a task on a fresh thread',
          SLOW,
        );
        expect(fresh.status).toBe('SUCCESS');
      },
      SLOW,
    );

    it(
      'errors cross with their code and retryability: a TaskFailure and a foreign error with retryable false fail for good',
      async () => {
        const refused = sandboxed('sbx.failure', 'failure', { maxAttempts: 3 });
        const plain = sandboxed('sbx.plain', 'plainError', { maxAttempts: 3 });
        start([refused, plain]);
        const [a, b] = await Promise.all([ended(await submit(env.store, refused)), ended(await submit(env.store, plain))]);
        expect([a.status, a.lastErrorCode, a.attemptCount]).toEqual(['FAILED', 'REFUSED', 1]);
        expect([b.status, b.lastErrorCode, b.attemptCount]).toEqual(['FAILED', 'HANDLER_ERROR', 1]);
        const [failure] = await env.store.listFailures({ taskId: b.id });
        expect(failure).toMatchObject({ errorCode: 'HANDLER_ERROR', retryable: false });
      },
      SLOW,
    );

    it(
      'progress, ctx.log lines, durable steps and cancellation checks go through the worker: a retry replays the recorded step',
      async () => {
        const steps = sandboxed('sbx.steps', 'steps', { maxAttempts: 2 });
        start([steps]);
        const task = await ended(await submit(env.store, steps));
        expect(task.status).toBe('SUCCESS');
        expect(task.attemptCount).toBe(2);
        expect(task.result).toEqual({ first: { attempt: 1 }, second: 2, parents: 0 }); // step 'first' recorded by attempt 1
        expect(task.progress).toMatchObject({ total: 2, processed: 2, message: 'done' });
        expect((await env.store.listFailures({ taskId: task.id }))[0]).toMatchObject({ errorCode: 'STEP_ONCE', attempt: 1 });
        // ctx.log lines are posted to the worker's thread, kept per attempt and redacted there (fields structured clone
        // cannot carry keep what JSON keeps of them).
        const logs = await env.store.listTaskLogs({ taskId: task.id, limit: 10 });
        expect(logs.map((l) => [l.attempt, l.level, l.message, JSON.parse(l.fieldsJson!)])).toEqual([
          [1, 'info', 'sandboxed line', { attempt: 1, secret: '[REDACTED]' }],
          [2, 'info', 'sandboxed line', { attempt: 2, secret: '[REDACTED]' }],
        ]);
      },
      SLOW,
    );

    it(
      'a busy loop past its timeout is terminated (TIMEOUT) while the worker runs its other tasks and keeps their leases',
      async () => {
        const busy = sandboxed('sbx.busy', 'busy', { timeoutMs: 5000 }, { terminateGraceMs: 100 });
        const quick = defineTask({ type: 'sbx.quick', execute: async () => ({ status: 'SUCCESS' }) });
        const worker = start([busy, quick], { concurrency: 2, leaseMs: 2000, heartbeatIntervalMs: 100 }); // the loop outlives two leases
        const lost: string[] = [];
        worker.on('leaseLost', ({ task }) => lost.push(task.id));
        const busyId = await submit(env.store, busy);
        await waitFor(async () => (await env.store.getTask({ id: busyId, scope: G }))?.status === 'RUNNING', 'the busy task to start', SLOW);
        const quickIds = await Promise.all(Array.from({ length: 5 }, () => submit(env.store, quick)));
        for (const id of quickIds) expect((await ended(id)).status).toBe('SUCCESS');
        const task = await ended(busyId);
        expect([task.status, task.lastErrorCode, task.attemptCount]).toEqual(['FAILED', 'TIMEOUT', 1]);
        expect(lost).toEqual([]);
        // A thread in `for (;;);` never answers: no handler left running means it was terminated.
        await waitFor(() => worker.stats().active === 0, 'the busy thread to be gone', SLOW);
        // The slot came back once the thread was gone: the next task runs.
        expect((await ended(await submit(env.store, quick))).status).toBe('SUCCESS');
      },
      SLOW,
    );

    it(
      'memory exhaustion fails the attempt with SANDBOX_OUT_OF_MEMORY, retried per policy; the worker lives on',
      async () => {
        const hog = sandboxed('sbx.hog', 'hog', { maxAttempts: 2, retry: { baseDelayMs: 10, maxDelayMs: 20, jitter: 0 } }, { maxOldGenerationSizeMb: 32 });
        const echo = sandboxed('sbx.after-hog', 'default');
        start([hog, echo]);
        const task = await ended(await submit(env.store, hog));
        expect([task.status, task.lastErrorCode, task.attemptCount]).toEqual(['FAILED', 'SANDBOX_OUT_OF_MEMORY', 2]);
        expect((await env.store.listFailures({ taskId: task.id })).map((f) => [f.errorCode, f.retryable])).toEqual([
          ['SANDBOX_OUT_OF_MEMORY', true],
          ['SANDBOX_OUT_OF_MEMORY', true],
        ]);
        expect((await ended(await submit(env.store, echo))).status).toBe('SUCCESS');
      },
      SLOW,
    );

    it(
      'a thread that crashes (an error thrown outside the handler, process.exit in the thread) fails the attempt with SANDBOX_CRASHED; the process lives on',
      async () => {
        const retry = { baseDelayMs: 10, maxDelayMs: 20, jitter: 0 };
        const crash = sandboxed('sbx.crash', 'crash', { maxAttempts: 2, retry });
        const exit = sandboxed('sbx.exit', 'exit', { maxAttempts: 2, retry });
        start([crash, exit]);
        const [thrown, exited] = await Promise.all([ended(await submit(env.store, crash)), ended(await submit(env.store, exit))]);
        expect([thrown.status, thrown.lastErrorCode, thrown.attemptCount]).toEqual(['FAILED', 'SANDBOX_CRASHED', 2]);
        expect([exited.status, exited.lastErrorCode, exited.attemptCount]).toEqual(['FAILED', 'SANDBOX_CRASHED', 2]);
        const [failure] = await env.store.listFailures({ taskId: exited.id });
        expect(failure?.message).toContain('exit code 3');
      },
      SLOW,
    );

    it(
      'a lost lease terminates the thread for real: a handler deaf to its signal stops writing',
      async () => {
        const file = join(scratch, `counter-${factory.dialect}`);
        // The default grace (1 s), capped after a lost lease at half the lease's safety margin (50 ms here).
        const counter = sandboxed('sbx.counter', 'counter');
        // Once the handler writes, renewals never reach the database (a partition): the lease is given up at its local deadline.
        const partitioned: Store = Object.create(env.store, {
          renewLeases: {
            value: (params: Parameters<Store['renewLeases']>[0]) =>
              existsSync(file) ? Promise.reject(new Error('network partition')) : env.store.renewLeases(params),
          },
        });
        const worker = env
          .track(createWorker({ store: partitioned, tasks: [counter], ...FAST_WORKER, leaseMs: 1000, heartbeatIntervalMs: 100, recoveryIntervalMs: 0 }))
          .start();
        const lost: string[] = [];
        worker.on('leaseLost', ({ task }) => lost.push(task.id));
        const id = await submit(env.store, counter, { file });
        await waitFor(() => lost.includes(id), 'the lease to be given up', SLOW);
        await waitFor(() => worker.stats().active === 0, 'the slot to be freed (the thread gone)', SLOW);
        const stopped = Number(readFileSync(file, 'utf8'));
        expect(stopped).toBeGreaterThan(0);
        // Still the same value after the thread would have written many times more (one write each 10 ms).
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(Number(readFileSync(file, 'utf8'))).toBe(stopped);
      },
      SLOW,
    );

    it(
      'stop() past its grace terminates a busy sandboxed handler: the task is handed back (QUEUED), the stop completes',
      async () => {
        const busy = sandboxed('sbx.busy-stop', 'busy', {}, { terminateGraceMs: 100 });
        const worker = start([busy], { shutdownGraceMs: 200, shutdownAbortWaitMs: 5000 });
        const started: string[] = [];
        worker.on('started', ({ task }) => started.push(task.id));
        const id = await submit(env.store, busy);
        await waitFor(() => started.includes(id), 'the handler to start', SLOW);
        await worker.stop();
        expect(worker.stats().active).toBe(0);
        expect((await env.store.getTask({ id, scope: G }))?.status).toBe('QUEUED');
      },
      SLOW,
    );

    it(
      'a cancel reaches the thread as an abort; a handler honouring it ends CANCELLED',
      async () => {
        const listening = sandboxed('sbx.listening', 'listening');
        const worker = start([listening], { cancelCheckIntervalMs: 0 });
        const started: string[] = [];
        worker.on('started', ({ task }) => started.push(task.id));
        const id = await submit(env.store, listening);
        await waitFor(() => started.includes(id), 'the handler to start', SLOW);
        expect(await createClient({ store: env.store, tasks: [listening] }).requestCancellation(id)).toBe('CANCEL_REQUESTED');
        expect((await ended(id)).status).toBe('CANCELLED');
      },
      SLOW,
    );

    it(
      'what a sandbox cannot do fails for good: ctx.complete(tx) (SANDBOX_UNSUPPORTED), a result with a function (RESULT_NOT_SERIALIZABLE), a step result with one (SANDBOX_NOT_CLONEABLE)',
      async () => {
        const complete = sandboxed('sbx.complete', 'complete', { maxAttempts: 3 });
        const unclonable = sandboxed('sbx.unclonable', 'unclonable', { maxAttempts: 3 });
        const missing = sandboxed('sbx.missing', 'noSuchExport', { maxAttempts: 1 });
        const step = sandboxed('sbx.unclonable-step', 'unclonableStep', { maxAttempts: 3 });
        start([complete, unclonable, missing, step]);
        const [a, b, c, d] = await Promise.all([complete, unclonable, missing, step].map(async (t) => ended(await submit(env.store, t))));
        expect([a!.status, a!.lastErrorCode, a!.attemptCount]).toEqual(['FAILED', 'SANDBOX_UNSUPPORTED', 1]);
        expect([b!.status, b!.lastErrorCode, b!.attemptCount]).toEqual(['FAILED', 'RESULT_NOT_SERIALIZABLE', 1]);
        expect([c!.status, c!.lastErrorCode]).toEqual(['FAILED', 'SANDBOX_MODULE_INVALID']);
        expect([d!.status, d!.lastErrorCode, d!.attemptCount]).toEqual(['FAILED', 'SANDBOX_NOT_CLONEABLE', 1]);
      },
      SLOW,
    );
  });
}
