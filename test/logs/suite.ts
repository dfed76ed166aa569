/**
 * Per-task logs (ctx.log, worker/logs.ts, store/rules/logs.ts) on every store: lines persisted per attempt and
 * read back in order (by attempt, paged), nothing written for a handler that never logs, the bounds per attempt
 * and per task with their drop markers, messages and fields bounded, redaction (stored and in the process log),
 * the lease's fence (a stale, foreign or expired lease writes nothing; the attempt's end needs only the fence),
 * cleanup with the task, and the owner scope of client.logs.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import type { TaskContext } from '../../src/core/context.js';
import { defineTask } from '../../src/core/definition.js';
import { NotFoundError } from '../../src/core/errors.js';
import type { TaskLogLine } from '../../src/core/logs.js';
import { Scope } from '../../src/core/scope.js';
import { attachLogger } from '../../src/observe/logging.js';
import type { Store } from '../../src/store/types.js';
import { createWorker } from '../../src/worker/worker.js';
import type { StoreFactory } from '../helpers/factory.js';
import { perTestStore } from '../helpers/per-test.js';
import { waitFor } from '../helpers/wait.js';
import { FAST_WORKER } from '../helpers/worker-options.js';
import { claimParams, leaseOf, newTask } from '../store/fixtures.js';

const G = Scope.global();
const options = { ...FAST_WORKER, recoveryIntervalMs: 0, concurrency: 2 };

/** The store, counting appendTaskLogs calls. */
function counting(store: Store) {
  const calls = { appendTaskLogs: 0 };
  const overrides: PropertyDescriptorMap = {
    appendTaskLogs: {
      value: (params: Parameters<Store['appendTaskLogs']>[0]) => {
        calls.appendTaskLogs += 1;
        return store.appendTaskLogs(params);
      },
    },
  };
  return { store: Object.create(store, overrides) as Store, calls };
}

const line = (message: string, level: TaskLogLine['level'] = 'info'): TaskLogLine => ({ level, message, fieldsJson: null, loggedAt: new Date() });

export function runLogSuite(factory: StoreFactory): void {
  describe(`per-task logs (ctx.log) on ${factory.dialect}`, () => {
    const env = perTestStore(factory);

    const finished = async (id: string, status = 'SUCCESS') =>
      waitFor(async () => (await env.store.getTask({ id, scope: G }))?.status === status, `task ${id} to be ${status}`);

    it('keeps each attempt’s lines with their level, fields and time, in order; reads by attempt and pages by seq', async () => {
      const t = defineTask({
        type: 'logs.attempts',
        maxAttempts: 2,
        execute: async (ctx: TaskContext) => {
          ctx.log.info('starting', { n: 1, at: new Date(0), tags: ['a', 'b'] });
          if (ctx.attempt === 1) {
            ctx.log.error('upstream refused', { status: 503 });
            throw new Error('retry me');
          }
          ctx.log.warn('second try');
          ctx.log.info('done');
        },
      });
      const counted = counting(env.store);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      const before = Date.now();
      worker.start();
      await finished(task.id);
      await worker.stop();
      const logs = await client.logs(task.id);
      expect(logs.map((l) => [l.attempt, l.level, l.message, l.fields, l.dropped])).toEqual([
        [1, 'info', 'starting', { n: 1, at: '1970-01-01T00:00:00.000Z', tags: ['a', 'b'] }, 0],
        [1, 'error', 'upstream refused', { status: 503 }, 0],
        [2, 'info', 'starting', { n: 1, at: '1970-01-01T00:00:00.000Z', tags: ['a', 'b'] }, 0],
        [2, 'warn', 'second try', undefined, 0],
        [2, 'info', 'done', undefined, 0],
      ]);
      expect(logs.map((l) => l.seq)).toEqual([1, 2, 3, 4, 5]);
      for (const l of logs) expect(l.loggedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
      // One batch per attempt here (a few lines, written at the attempt's end, before its outcome).
      expect(counted.calls.appendTaskLogs).toBe(2);
      expect((await client.logs(task.id, { attempt: 2 })).map((l) => l.message)).toEqual(['starting', 'second try', 'done']);
      expect((await client.logs(task.id, { afterSeq: 2, limit: 2 })).map((l) => l.seq)).toEqual([3, 4]);
      expect(await client.logs(task.id, { attempt: 3 })).toEqual([]);
      await expect(client.logs(task.id, { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    });

    it('writes nothing at all for a handler that never logs', async () => {
      const t = defineTask({ type: 'logs.silent', execute: async () => undefined });
      const counted = counting(env.store);
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const ids = (
        await client.submitMany([
          { type: t.type, payload: {} },
          { type: t.type, payload: {} },
          { type: t.type, payload: {} },
        ])
      ).map((r) => r.task.id);
      worker.start();
      for (const id of ids) await finished(id);
      await worker.stop();
      expect(counted.calls.appendTaskLogs).toBe(0);
      for (const id of ids) expect(await client.logs(id)).toEqual([]);
    });

    it('bounds lines per attempt and per task: the oldest go, a marker per attempt says how many', async () => {
      const t = defineTask({
        type: 'logs.bounded',
        maxAttempts: 2,
        execute: async (ctx: TaskContext) => {
          const prefix = ctx.attempt === 1 ? 'a' : 'b';
          const count = ctx.attempt === 1 ? 12 : 6;
          for (let i = 0; i < count; i += 1) {
            ctx.log.info(`${prefix}${i}`);
            // Batches mid-attempt too (each progress write flushes), so that the store trims what it holds.
            if (i % 4 === 3) ctx.reportProgress({ processed: i });
            await Promise.resolve();
          }
          if (ctx.attempt === 1) throw new Error('again');
        },
      });
      const worker = env.track(
        createWorker({ store: env.store, tasks: [t], ...options, maxLogLinesPerAttempt: 5, maxLogLinesPerTask: 8, progressFlushIntervalMs: 0 }),
      );
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      worker.start();
      await finished(task.id);
      await worker.stop();
      const logs = await client.logs(task.id);
      expect(logs.map((l) => [l.attempt, l.message, l.dropped])).toEqual([
        [1, '9 earlier log lines of attempt 1 dropped (log bounds: maxLogLinesPerAttempt, maxLogLinesPerTask)', 9],
        [1, 'a9', 0],
        [1, 'a10', 0],
        [1, 'a11', 0],
        [2, '1 earlier log line of attempt 2 dropped (log bounds: maxLogLinesPerAttempt, maxLogLinesPerTask)', 1],
        [2, 'b1', 0],
        [2, 'b2', 0],
        [2, 'b3', 0],
        [2, 'b4', 0],
        [2, 'b5', 0],
      ]);
      const markers = logs.filter((l) => l.dropped > 0);
      expect(markers.map((l) => [l.level, l.fields])).toEqual([
        ['warn', { dropped: 9 }],
        ['warn', { dropped: 1 }],
      ]);
      // Seqs grow; a marker sorts where the lines it stands for were.
      expect(logs.map((l) => l.seq)).toEqual([...logs.map((l) => l.seq)].sort((a, b) => a - b));
    });

    it('bounds messages and fields, and redacts secret-like fields, payloads and error messages — stored and in the process log', async () => {
      const processLog: Record<string, unknown>[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const text of chunk.toString().split('\n').filter(Boolean)) processLog.push(JSON.parse(text) as Record<string, unknown>);
          done();
        },
      });
      const t = defineTask({
        type: 'logs.redacted',
        execute: async (ctx: TaskContext) => {
          ctx.log.warn('charging card', {
            password: 'hunter2',
            user: { name: 'ann', Api_Key: 'k-1', accessToken: 't-1' },
            payload: { card: '4111' },
            iban: 'DE00 1234',
            err: new Error('card 4111 declined'),
            amount: 12.5,
          });
          ctx.log.info('x'.repeat(500));
          ctx.log.info('big fields', { blob: 'y'.repeat(2000) });
        },
      });
      const worker = env.track(
        createWorker({ store: env.store, tasks: [t], ...options, logRedactKeys: ['IBAN'], maxLogMessageBytes: 64, maxLogFieldsBytes: 256 }),
      );
      const detach = attachLogger(worker, pino({ level: 'info' }, sink));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {});
      worker.start();
      await finished(task.id);
      await worker.stop();
      detach();
      const [charging, long, big] = await client.logs(task.id);
      const redacted = {
        password: '[REDACTED]',
        user: { name: 'ann', Api_Key: '[REDACTED]', accessToken: '[REDACTED]' },
        payload: '[REDACTED]',
        iban: '[REDACTED]',
        err: { name: 'Error' },
        amount: 12.5,
      };
      expect(charging!.fields).toEqual(redacted);
      expect(long!.message.endsWith('…[truncated]')).toBe(true);
      expect(Buffer.byteLength(long!.message)).toBeLessThanOrEqual(64);
      expect(long!.message.startsWith('xxxx')).toBe(true);
      expect(big!.fields).toEqual({ truncated: true, bytes: expect.any(Number) });
      expect((big!.fields as { bytes: number }).bytes).toBeGreaterThan(2000);
      const logged = processLog.find((entry) => entry.msg === 'charging card');
      expect(logged).toMatchObject({ level: 40, taskId: task.id, taskType: 'logs.redacted', attempt: 1, fields: redacted });
      const everything = JSON.stringify(processLog) + JSON.stringify(await client.logs(task.id));
      for (const secret of ['hunter2', 'k-1', 't-1', '4111', 'DE00']) expect(everything).not.toContain(secret);
    });

    it('is fenced by the lease: a stale, foreign or expired lease writes nothing; the attempt’s end needs only the fence', async () => {
      const { store } = env;
      await store.insertTasks({ tasks: [newTask()] });
      const [stale] = await store.claimTasks(claimParams({ limit: 1, workerId: 'zombie', leaseMs: 150 }));
      const append = (lease: ReturnType<typeof leaseOf>, lines: TaskLogLine[], final = false) =>
        store.appendTaskLogs({ lease, lines, bufferDropped: 0, final, maxLinesPerAttempt: 100, maxLinesPerTask: 100 });
      expect(await append(leaseOf(stale!), [line('before')])).toBe(true);
      const progress = { total: 1, processed: 0, succeeded: 0, failed: 0, skipped: 0, message: null };
      await waitFor(async () => !(await store.saveProgress({ lease: leaseOf(stale!), progress })), 'the lease to expire');
      // Expired, not swept: a mid-attempt batch is refused (as progress), the attempt's last batch is kept (as its outcome).
      expect(await append(leaseOf(stale!), [line('late')])).toBe(false);
      expect(await append(leaseOf(stale!), [line('last words')], true)).toBe(true);
      await waitFor(async () => (await store.recover({ batchSize: 10 })).requeued === 1, 'expired lease to be requeued');
      const [fresh] = await store.claimTasks(claimParams({ limit: 1, workerId: 'healthy' }));
      expect(await append(leaseOf(stale!), [line('zombie')])).toBe(false);
      expect(await append(leaseOf(stale!), [line('zombie final')], true)).toBe(false);
      expect(await append({ ...leaseOf(fresh!), token: 'not-the-token' }, [line('forged')], true)).toBe(false);
      expect(await append({ ...leaseOf(fresh!), workerId: 'zombie' }, [line('forged')], true)).toBe(false);
      expect(await append(leaseOf(fresh!), [line('after', 'error')])).toBe(true);
      expect(await append({ ...leaseOf(fresh!), taskId: 'not-a-task' }, [line('nowhere')], true)).toBe(false);
      const rows = await store.listTaskLogs({ taskId: fresh!.id, limit: 100 });
      expect(rows.map((r) => [r.attempt, r.level, r.message])).toEqual([
        [1, 'info', 'before'],
        [1, 'info', 'last words'],
        [2, 'error', 'after'],
      ]);
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(fresh!), artifactId: null, resultJson: null, progress: null }] });
      expect(await append(leaseOf(fresh!), [line('after the end')], true)).toBe(false);
      expect((await store.listTaskLogs({ taskId: fresh!.id, limit: 100 })).length).toBe(3);
    });

    it('a worker whose lease was taken writes no line: the handler’s lines after the loss go nowhere', async () => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const refusing = Object.create(env.store, {
        // The store answers this worker's renewals "lost": the worker aborts the handler (LEASE_LOST).
        renewLeases: {
          value: async (params: Parameters<Store['renewLeases']>[0]) => {
            const answer = await env.store.renewLeases(params);
            return { ...answer, lost: [...answer.renewed, ...answer.lost], renewed: [] };
          },
        },
      }) as Store;
      const counted = counting(refusing);
      const t = defineTask({
        type: 'logs.lost',
        execute: async (ctx: TaskContext) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
          ctx.log.info('after the loss');
          release();
        },
      });
      const worker = env.track(createWorker({ store: counted.store, tasks: [t], ...options }));
      const lost: string[] = [];
      worker.on('leaseLost', ({ reason }) => lost.push(reason));
      const { task } = await createClient({ store: env.store, tasks: [t] }).submit(t, {});
      worker.start();
      await gate;
      await waitFor(() => lost.length > 0, 'the lease loss');
      await worker.stop();
      expect(counted.calls.appendTaskLogs).toBe(0);
      expect(await env.store.listTaskLogs({ taskId: task.id, limit: 10 })).toEqual([]);
    });

    it('cleanup deletes a purged task’s lines with it, and keeps a live task’s', async () => {
      const { store } = env;
      await store.insertTasks({ tasks: [newTask(), newTask()] });
      const [done, live] = await store.claimTasks(claimParams({ limit: 2 }));
      const append = (task: typeof done, message: string) =>
        store.appendTaskLogs({ lease: leaseOf(task!), lines: [line(message)], bufferDropped: 0, final: true, maxLinesPerAttempt: 10, maxLinesPerTask: 10 });
      expect(await append(done, 'finished work')).toBe(true);
      expect(await append(live, 'still working')).toBe(true);
      await store.finishAttempts({ outcomes: [{ kind: 'SUCCESS', lease: leaseOf(done!), artifactId: null, resultJson: null, progress: null }] });
      const client = createClient({ store, tasks: [] });
      const result = await client.cleanup({ finishedBefore: new Date((await store.now()).getTime() + 60_000) });
      expect(result.tasks).toBe(1);
      expect(await store.listTaskLogs({ taskId: done!.id, limit: 10 })).toEqual([]);
      expect((await store.listTaskLogs({ taskId: live!.id, limit: 10 })).map((r) => r.message)).toEqual(['still working']);
    });

    it('client.logs is scoped like the task’s other reads: another owner gets NOT_FOUND', async () => {
      const t = defineTask({ type: 'logs.owned', execute: async (ctx: TaskContext) => ctx.log.info('tenant line', { owner: ctx.owner }) });
      const worker = env.track(createWorker({ store: env.store, tasks: [t], ...options }));
      const client = createClient({ store: env.store, tasks: [t] });
      const { task } = await client.submit(t, {}, { owner: 'acme' });
      worker.start();
      await finished(task.id);
      await worker.stop();
      expect((await client.logs(task.id, { scope: Scope.owner('acme') })).map((l) => l.message)).toEqual(['tenant line']);
      await expect(client.logs(task.id, { scope: Scope.owner('globex') })).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.logs('0190a000-0000-7000-8000-000000000000')).rejects.toBeInstanceOf(NotFoundError);
    });
  });
}
