/**
 * tasklease/testing: runTask through the real execute path, the TestClock
 * driving retries, delays, deadlines and schedules, drain's order, and what
 * enqueued()/assertEnqueued() answer and say.
 */
import { AssertionError } from 'node:assert';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createClient } from '../../src/client/client.js';
import { defineTask, TaskResult, type TaskDefinition } from '../../src/core/definition.js';
import { TaskFailure } from '../../src/core/errors.js';
import { createTestKit, type TestKit, type TestKitOptions } from '../../src/testing/index.js';
import { payloadEncryption } from '../../src/client/encryption.js';
import type { Middleware } from '../../src/client/middleware.js';
import { Scope } from '../../src/core/scope.js';

const START = new Date('2026-03-01T09:00:00.000Z');
const at = (ms: number): Date => new Date(START.getTime() + ms);
let kit: TestKit | null = null;
afterEach(async () => {
  await kit?.close();
  kit = null;
});
const open = async (options: TestKitOptions): Promise<TestKit> => (kit = await createTestKit({ startAt: START, ...options }));

/** Fails its first `failures` calls, then returns the payload's n doubled. */
function flaky(failures: number): { task: TaskDefinition<{ n: number }>; calls: Date[] } {
  const calls: Date[] = [];
  const definition = defineTask<{ n: number }>({
    type: 'flaky',
    execute: (_ctx, payload) => {
      calls.push(kit!.now());
      if (calls.length <= failures) throw new TaskFailure(`call ${calls.length} failed`, { code: 'UPSTREAM_DOWN' });
      return TaskResult.success({ result: { doubled: payload.n * 2 } });
    },
  });
  return { task: definition, calls };
}

describe('runTask', () => {
  it('retries with backoff, the clock moved to each retry: attempts at +0, +1 s, +3 s (base 1 s, ×2, no jitter)', async () => {
    const { task, calls } = flaky(2);
    const k = await open({ tasks: [task], worker: { retry: { baseDelayMs: 1000, multiplier: 2, jitter: 0 } } });
    const run = await k.runTask(task, { n: 21 });
    expect(run.status).toBe('SUCCESS');
    expect(run.result).toEqual({ doubled: 42 });
    expect(run.error).toBeNull();
    expect(calls).toEqual([at(0), at(1000), at(3000)]);
    expect(run.attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.errorCode])).toEqual([
      [1, 'FAILED', 'UPSTREAM_DOWN'],
      [2, 'FAILED', 'UPSTREAM_DOWN'],
      [3, 'SUCCESS', null],
    ]);
    expect(run.failures.map((failure) => failure.message)).toEqual(['call 1 failed', 'call 2 failed']);
    expect(k.now()).toEqual(at(3000));
  });

  it('without advanceTime stops at the first backoff; run() goes on once the test moved the clock', async () => {
    const { task, calls } = flaky(1);
    const k = await open({ tasks: [task], worker: { retry: { baseDelayMs: 60_000, jitter: 0 } } });
    const first = await k.runTask(task, { n: 1 }, { advanceTime: false });
    expect(first.status).toBe('RETRY_WAIT');
    expect(first.error).toBeNull(); // not over yet
    expect(first.task.availableAt).toEqual(at(60_000));
    expect((await k.run(first.task.id, { advanceTime: false })).status).toBe('RETRY_WAIT'); // not due: nothing ran
    expect(calls).toHaveLength(1);
    await k.advance(60_000);
    const second = await k.run(first.task.id, { advanceTime: false });
    expect(second).toMatchObject({ status: 'SUCCESS', result: { doubled: 2 } });
    expect(calls).toEqual([at(0), at(60_000)]);
  });

  it('ends FAILED with the last error when the attempts are spent, and the dead letter holds it', async () => {
    const { task, calls } = flaky(5);
    const k = await open({ tasks: [task], worker: { retry: { baseDelayMs: 10, jitter: 0 } } });
    const run = await k.runTask(task, { n: 1 }, { submit: { maxAttempts: 2 } });
    expect(run).toMatchObject({ status: 'FAILED', result: undefined, error: { code: 'UPSTREAM_DOWN', message: 'call 2 failed', retryable: true } });
    expect(run.attempts).toHaveLength(2);
    expect(calls).toEqual([at(0), at(10)]);
    expect(await k.client.deadLetters.list()).toMatchObject([{ originalTaskId: run.task.id, errorCode: 'UPSTREAM_DOWN' }]);
  });

  it("runs the worker's checks: a payload its schema refuses at run time fails at once, not retried; validate() too", async () => {
    const strict = defineTask({ type: 'strict', schema: z.object({ email: z.string().email() }), execute: () => undefined });
    const guarded = defineTask<{ amount: number }>({
      type: 'guarded',
      validate: (payload) => {
        if (payload.amount <= 0) throw new TaskFailure('amount must be positive', { code: 'BAD_AMOUNT', retryable: false });
      },
      execute: () => undefined,
    });
    const k = await open({ tasks: [strict, guarded] });
    // The kit's client checks the schema at submit…
    await expect(k.runTask(strict, { email: 'nope' })).rejects.toMatchObject({ code: 'PAYLOAD_INVALID' });
    // …a task submitted by a client that knows no schema meets it in the worker.
    const loose = createClient({ store: k.store, tasks: [defineTask({ type: 'strict', execute: () => undefined })] });
    const { task } = await loose.submit('strict', { email: 'nope' });
    const run = await k.run(task.id);
    expect(run).toMatchObject({ status: 'FAILED', error: { code: 'PAYLOAD_INVALID', retryable: false } });
    expect(run.attempts).toHaveLength(1);
    expect(await k.runTask(guarded, { amount: 0 })).toMatchObject({ status: 'FAILED', error: { code: 'BAD_AMOUNT', message: 'amount must be positive' } });
    expect((await k.runTask(guarded, { amount: 5 })).status).toBe('SUCCESS');
  });

  it('a snooze is waited out like a retry, spending no attempt; the default backoff has no jitter (30 s, then 60 s)', async () => {
    const seen: Date[] = [];
    const poll = defineTask({
      type: 'poll',
      execute: () => {
        seen.push(kit!.now());
        if (seen.length === 1) return TaskResult.snooze(5_000);
        if (seen.length <= 3) throw new Error('not ready');
        return undefined;
      },
    });
    const k = await open({ tasks: [poll] });
    const run = await k.runTask(poll, {}, { submit: { maxAttempts: 3 } });
    expect(run.status).toBe('SUCCESS');
    expect(seen).toEqual([at(0), at(5_000), at(35_000), at(95_000)]);
    expect(run.attempts.map((attempt) => attempt.outcome)).toEqual(['SNOOZED', 'FAILED', 'FAILED', 'SUCCESS']);
  });

  it('does not run what the handler submits: it stays QUEUED for assertEnqueued, and drain() runs it', async () => {
    const sent: string[] = [];
    const mail = defineTask<{ to: string }>({ type: 'mail.send', execute: (_ctx, payload) => void sent.push(payload.to) });
    const signup = defineTask<{ email: string }>({
      type: 'user.signup',
      execute: async (_ctx, payload) => {
        await kit!.client.submit(mail, { to: payload.email });
      },
    });
    const k = await open({ tasks: [signup, mail] });
    expect((await k.runTask(signup, { email: 'ada@example.com' })).status).toBe('SUCCESS');
    const queued = await k.assertEnqueued('mail.send', { to: 'ada@example.com' });
    expect(queued.status).toBe('QUEUED');
    expect(sent).toEqual([]);
    const ran = await k.drain();
    expect(ran.map((attempt) => [attempt.taskType, attempt.outcome])).toEqual([['mail.send', 'SUCCESS']]);
    expect(sent).toEqual(['ada@example.com']);
  });

  it('refuses to run a task that another due task of its type would be claimed before', async () => {
    const { task, calls } = flaky(0);
    const k = await open({ tasks: [task] });
    const { task: first } = await k.client.submit(task, { n: 1 });
    await expect(k.runTask(task, { n: 2 })).rejects.toThrow(`task ${first.id} of type flaky is due before task`);
    expect(calls).toEqual([]);
  });

  it('a cancellation while the handler runs ends the task CANCELLED', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const slow = defineTask({
      type: 'slow',
      execute: async (ctx) => {
        started();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      },
    });
    const k = await open({ tasks: [slow] });
    const { task } = await k.client.submit(slow, {});
    const run = k.run(task.id);
    await running;
    await k.client.requestCancellation(task.id);
    expect((await run).status).toBe('CANCELLED');
  });
});

describe('the clock', () => {
  it('a delayed task is not due before its time: drain runs it once the clock reached it, or moves the clock with advanceTime', async () => {
    const { task, calls } = flaky(0);
    const k = await open({ tasks: [task] });
    await k.client.submit(task, { n: 1 }, { delayMs: 60_000 });
    await k.client.submit(task, { n: 2 }, { delayMs: 120_000 });
    expect(await k.drain()).toEqual([]);
    await k.advance(59_999);
    expect(await k.drain()).toEqual([]);
    await k.advance(1);
    expect((await k.drain()).map((attempt) => attempt.task.payload)).toEqual([{ n: 1 }]);
    const rest = await k.drain({ advanceTime: true });
    expect(rest.map((attempt) => [attempt.task.payload, attempt.outcome])).toEqual([[{ n: 2 }, 'SUCCESS']]);
    expect(calls).toEqual([at(60_000), at(120_000)]);
  });

  it('a deadline: a waiting task past it fails without running; a running one is aborted when the clock reaches it', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const report = defineTask<{ waitForAbort: boolean }>({
      type: 'report',
      execute: async (ctx, payload) => {
        if (!payload.waitForAbort) return;
        started();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      },
    });
    const k = await open({ tasks: [report] });
    const late = await k.runTask(report, { waitForAbort: false }, { submit: { delayMs: 10_000, deadlineAt: at(5_000) } });
    expect(late).toMatchObject({ status: 'FAILED', error: { code: 'DEADLINE_EXCEEDED' } });
    expect(late.attempts).toEqual([]);

    const { task } = await k.client.submit(report, { waitForAbort: true }, { deadlineAt: at(20_000) });
    const run = k.run(task.id);
    await running;
    await k.advance(10_000); // at 15 s: still running
    expect((await k.client.get(task.id))!.status).toBe('RUNNING');
    await k.advance(5_000);
    const aborted = await run;
    expect(aborted).toMatchObject({ status: 'FAILED', error: { code: 'TIMEOUT', message: 'task passed its deadline' } });
    expect(aborted.attempts).toHaveLength(1);
  });

  it('one long advance while a handler runs keeps its lease (heartbeats renew it on the way): a 10-minute timeout ends it, nothing else', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const leases: string[] = [];
    const export_ = defineTask({
      type: 'export',
      timeoutMs: 600_000,
      execute: async (ctx) => {
        started();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      },
    });
    const k = await open({ tasks: [export_] });
    k.worker.on('leaseLost', ({ reason }) => void leases.push(reason));
    const { task } = await k.client.submit(export_, {}, { maxAttempts: 1 });
    const run = k.run(task.id);
    await running;
    await k.advance(599_000); // ten lease periods, one call
    expect((await k.client.get(task.id))!.status).toBe('RUNNING');
    await k.advance(1_000);
    expect(await run).toMatchObject({ status: 'FAILED', error: { code: 'TIMEOUT' } });
    expect(leases).toEqual([]);
  });

  it('a periodic schedule submits its tick when the clock passes it; drain runs it', async () => {
    const ticks: Date[] = [];
    const digest = defineTask({ type: 'digest', execute: () => void ticks.push(kit!.now()) });
    const k = await open({ tasks: [digest], schedules: [{ key: 'hourly-digest', taskType: 'digest', cron: '0 * * * *', payload: { kind: 'hourly' } }] });
    expect(await k.advance(59 * 60_000)).toEqual([]); // 09:59
    expect(await k.enqueued('digest')).toEqual([]);
    const submitted = await k.advance(60_000); // 10:00
    expect(submitted.map((task) => task.payload)).toEqual([{ kind: 'hourly' }]);
    await k.assertEnqueued('digest', { kind: 'hourly' });
    expect((await k.drain()).map((attempt) => attempt.outcome)).toEqual(['SUCCESS']);
    await k.advance(60 * 60_000); // 11:00
    await k.drain();
    expect(ticks).toEqual([at(60 * 60_000), at(120 * 60_000)]);
  });

  it('setTime moves forward only', async () => {
    const k = await open({ tasks: [flaky(0).task] });
    await k.setTime(at(5000));
    expect(k.now()).toEqual(at(5000));
    await expect(k.setTime(at(4000))).rejects.toThrow('time only moves forward');
  });
});

describe('drain', () => {
  it('runs the due tasks in claim order: priority first, then submit order', async () => {
    const order: string[] = [];
    const job = defineTask<{ name: string }>({ type: 'job', execute: (_ctx, payload) => void order.push(payload.name) });
    const k = await open({ tasks: [job] });
    for (const [name, priority] of [
      ['low', -5],
      ['normal-1', 0],
      ['urgent', 10],
      ['normal-2', 0],
      ['high', 5],
    ] as const) {
      await k.client.submit(job, { name }, { priority });
    }
    const ran = await k.drain();
    expect(order).toEqual(['urgent', 'high', 'normal-1', 'normal-2', 'low']);
    expect(ran.map((attempt) => attempt.task.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
  });

  it('with advanceTime runs retries to the end; without, stops when nothing is due', async () => {
    const { task, calls } = flaky(2);
    const k = await open({ tasks: [task], worker: { retry: { baseDelayMs: 500, jitter: 0 } } });
    await k.client.submit(task, { n: 1 });
    expect((await k.drain()).map((attempt) => attempt.outcome)).toEqual(['FAILED']);
    expect((await k.drain({ advanceTime: true })).map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [2, 'FAILED'],
      [3, 'SUCCESS'],
    ]);
    expect(calls).toEqual([at(0), at(500), at(1500)]);
  });

  it('stops with an error when tasks keep coming (maxAttempts)', async () => {
    const forever: TaskDefinition<object> = defineTask<object>({
      type: 'forever',
      execute: async () => {
        await kit!.client.submit(forever, {});
      },
    });
    const k = await open({ tasks: [forever] });
    await k.client.submit(forever, {});
    await expect(k.drain({ maxAttempts: 5 })).rejects.toThrow('ran 5 attempts and tasks are still due');
  });
});

describe('middleware', () => {
  it("runs the kit's middleware around submits and executions; what it answers is decoded (payloadEncryption)", async () => {
    const seen: unknown[] = [];
    const note = defineTask<{ text: string; tenant?: string }>({
      type: 'note',
      execute: (_ctx, payload) => {
        seen.push(payload);
        return TaskResult.success({ result: { length: payload.text.length } });
      },
    });
    const tenant: Middleware = {
      name: 'tenant',
      submit: (call, next) => next(call.requests.map((request) => ({ ...request, owner: 'acme' }))),
      execute: (call, next) => next({ ...(call.payload as object), tenant: call.context.owner ?? 'none' }),
    };
    const key = Buffer.alloc(32, 7);
    const k = await open({ tasks: [note], middleware: [tenant, payloadEncryption({ keys: { k1: key }, types: ['note'] })] });
    const run = await k.runTask(note, { text: 'secret' });
    expect(run).toMatchObject({ status: 'SUCCESS', result: { length: 6 }, task: { owner: 'acme', payload: { text: 'secret' } } });
    expect(seen).toEqual([{ text: 'secret', tenant: 'acme' }]);
    await k.assertEnqueued('note', { text: 'secret' });
    // At rest, sealed.
    const raw = await k.store.getTask({ id: run.task.id, scope: Scope.global() });
    expect(JSON.stringify(raw!.payload)).not.toContain('secret');
    expect(raw!.result).not.toEqual({ length: 6 });
  });
});

describe('close', () => {
  it('ends what is pending: a run whose handler ignores its abort is rejected, later calls too', async () => {
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const stuck = defineTask({
      type: 'stuck',
      execute: async () => {
        started();
        await new Promise(() => undefined); // never ends, ignores ctx.signal
      },
    });
    const k = await open({ tasks: [stuck] });
    const run = k.runTask(stuck, {});
    await running;
    await k.close();
    await expect(run).rejects.toThrow('the test kit closed while a task ran');
    await expect(k.drain()).rejects.toThrow('the test kit is closed');
  });
});

describe('options', () => {
  it('refuses bad options with INVALID_OPTIONS naming the field; the client refuses a clock that is not a function', async () => {
    const job = defineTask({ type: 'job', execute: () => undefined });
    await expect(createTestKit({ tasks: [] })).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringContaining('tasks') });
    await expect(createTestKit({ tasks: [job], startAt: START, nope: 1 } as TestKitOptions)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    const k = await open({ tasks: [job] });
    expect(() => createClient({ store: k.store, tasks: [job], clock: 5 as unknown as () => number })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('clock') }),
    );
  });

  it("the kit's own worker settings win: one attempt at a time, whatever concurrency is asked for", async () => {
    const job = defineTask({ type: 'job', execute: () => undefined });
    const k = await open({ tasks: [job], worker: { concurrency: 8, prefetch: 4 } as TestKitOptions['worker'] });
    expect(k.worker.options).toMatchObject({ concurrency: 1, prefetch: 0, recoveryIntervalMs: 0, scheduleRefreshMs: 0 });
  });
});

describe('enqueued and assertEnqueued', () => {
  const mail = defineTask<{ to: string; template: string; vars?: Record<string, unknown> }>({ type: 'mail.send', execute: () => undefined });
  const sms = defineTask<{ to: string }>({ type: 'sms.send', execute: () => undefined });

  it('reads what was submitted, oldest first, by type and by payload subset, status or predicate', async () => {
    const k = await open({ tasks: [mail, sms] });
    await k.client.submit(mail, { to: 'a@x', template: 'welcome', vars: { name: 'Ada', plan: 'pro' } });
    await k.client.submit(sms, { to: '+100' });
    await k.client.submit(mail, { to: 'b@x', template: 'welcome' }, { priority: 3 });
    expect((await k.enqueued()).map((task) => task.taskType)).toEqual(['mail.send', 'sms.send', 'mail.send']);
    expect((await k.enqueued<{ to: string }>('mail.send')).map((task) => task.payload.to)).toEqual(['a@x', 'b@x']);
    expect((await k.enqueued<{ to: string }>('mail.send', { payload: { vars: { plan: 'pro' } } })).map((task) => task.payload.to)).toEqual(['a@x']);
    expect(await k.enqueued<{ to: string }>('mail.send', { payload: { vars: { plan: 'free' } } })).toEqual([]);
    expect((await k.enqueued<{ to: string }>('mail.send', { priority: 3 })).map((task) => task.payload.to)).toEqual(['b@x']);
    expect((await k.enqueued(undefined, (task) => task.taskType === 'sms.send')).map((task) => task.payload)).toEqual([{ to: '+100' }]);
    await k.drain();
    expect(await k.enqueued<{ to: string }>('mail.send', { status: 'QUEUED' })).toEqual([]);
    expect(await k.enqueued<{ to: string }>('mail.send', { status: ['SUCCESS'] })).toHaveLength(2);
  });

  it('answers the matching task, and otherwise says what was expected and what was there', async () => {
    const k = await open({ tasks: [mail, sms] });
    const { task } = await k.client.submit(mail, { to: 'a@x', template: 'welcome', vars: { name: 'Ada' } });
    expect((await k.assertEnqueued('mail.send', { vars: { name: 'Ada' } })).id).toBe(task.id);
    expect((await k.assertEnqueued('mail.send')).id).toBe(task.id);

    const mismatch = await k.assertEnqueued('mail.send', { to: 'b@x' }).catch((error: unknown) => error);
    expect(mismatch).toBeInstanceOf(AssertionError);
    expect((mismatch as AssertionError).message).toBe(
      [
        "Expected a task of type mail.send enqueued with a payload matching { to: 'b@x' }",
        'but none of the 1 task(s) of that type matched:',
        `  - ${task.id} QUEUED payload { template: 'welcome', to: 'a@x', vars: { name: 'Ada' } }`,
      ].join('\n'),
    );
    const none = await k.assertEnqueued('sms.send', { to: '+1' }).catch((error: unknown) => error);
    expect((none as AssertionError).message).toBe(
      "Expected a task of type sms.send enqueued with a payload matching { to: '+1' }\nbut no task of type sms.send was enqueued (enqueued types: mail.send).",
    );
    await k.assertNotEnqueued('mail.send', { to: 'b@x' });
    const present = await k.assertNotEnqueued('mail.send', { template: 'welcome' }).catch((error: unknown) => error);
    expect((present as AssertionError).message).toContain(
      "Expected no task of type mail.send enqueued with a payload matching { template: 'welcome' }, but 1 matched:",
    );
  });
});
