/**
 * Structured logging on a real SQLite store: the seed's fields, sensible
 * levels, and redaction — a payload and a raw exception message never reach
 * the log unless the operator opts in.
 */
import pino from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { Scope } from '../../src/core/scope.js';
import { isTerminal } from '../../src/core/status.js';
import { TaskAbortedError, TaskFailure } from '../../src/core/errors.js';
import { classifyFailure } from '../../src/core/failure.js';
import type { FailureRecord } from '../../src/core/task.js';
import { attachClientLogger, attachLogger, exceptionTypeOf } from '../../src/observe/logging.js';
import type { Store } from '../../src/store/types.js';
import { defineTask } from '../../src/core/definition.js';
import { createWorker } from '../../src/worker/worker.js';
import { perTestStore } from '../helpers/per-test.js';
import { sqliteFactory } from '../helpers/sqlite.js';
import { waitFor } from '../helpers/wait.js';
import { FAST, SETTLE_MS, untilAborted } from './suite.js';

type Line = Record<string, unknown> & { level: number; msg: string };

/** A pino logger writing into an array, at every level. */
function capture(): { logger: pino.Logger; lines: Line[]; text: () => string } {
  const raw: string[] = [];
  const logger = pino({ level: 'trace' }, { write: (chunk: string) => void raw.push(chunk) });
  const lines: Line[] = [];
  return {
    logger,
    lines,
    text: () => {
      lines.splice(0, lines.length, ...raw.map((chunk) => JSON.parse(chunk) as Line));
      return raw.join('');
    },
  };
}

class LedgerLookupError extends Error {
  override name = 'LedgerLookupError';
}

const SECRET_MESSAGE = 'secret-ssn-123';
const SECRET_PAYLOAD = 'secret-payload';
const INFO = 30;
const WARN = 40;
const ERROR = 50;

describe('structured logging', () => {
  const env = perTestStore(sqliteFactory);
  let store: Store;
  beforeEach(() => {
    store = env.store;
  });

  it('logs the seed fields at sensible levels and redacts payloads and messages unless opted in', async () => {
    const ok = defineTask({ type: 'log.ok', execute: () => undefined });
    const leaky = defineTask({
      type: 'log.leaky',
      maxAttempts: 2,
      execute: () => {
        throw new LedgerLookupError(`no customer with ${SECRET_MESSAGE}`);
      },
    });
    const sleepy = defineTask({ type: 'log.sleepy', timeoutMs: 100, execute: (ctx) => untilAborted(ctx.signal) });
    const tasks = [ok, leaky, sleepy];
    const client = createClient({ store, tasks });
    // The worker stores raw messages, so only the logger stands between them and the log.
    const worker = createWorker({ store, tasks, ...FAST, exposeErrorMessages: true });
    env.track(worker);
    const plain = capture();
    const open = capture();
    attachLogger(worker, plain.logger);
    attachLogger(worker, open.logger, { exposePayloads: true, exposeErrorMessages: true });
    attachClientLogger(client, plain.logger);

    const payload = { note: SECRET_PAYLOAD };
    const results = await client.submitMany([
      { type: ok.type, payload, traceId: 'trace-ok' },
      { type: leaky.type, payload },
      { type: sleepy.type, payload },
    ]);
    const [okTask, leakyTask, sleepyTask] = results.map((r) => r.task);
    worker.start();
    await waitFor(
      async () =>
        (await Promise.all(results.map((r) => store.getTask({ id: r.task.id, scope: Scope.global() })))).every((t) => t !== null && isTerminal(t.status)),
      'the tasks to finish',
      SETTLE_MS,
    );
    await worker.stop();

    // Default: neither secret anywhere, at any level.
    const plainText = plain.text();
    expect(plainText).not.toContain(SECRET_MESSAGE);
    expect(plainText).not.toContain(SECRET_PAYLOAD);
    const find = (lines: Line[], msg: string, taskId: string) => lines.find((l) => l.msg === msg && l.taskId === taskId);

    expect(find(plain.lines, 'task submitted', okTask!.id)).toMatchObject({ level: 20, taskType: ok.type, traceId: 'trace-ok' });
    expect(find(plain.lines, 'task started', okTask!.id)).toMatchObject({ level: 20, attempt: 1, queueWaitMs: expect.any(Number) });
    expect(find(plain.lines, 'task completed', okTask!.id)).toMatchObject({
      level: INFO,
      taskType: ok.type,
      attempt: 1,
      status: 'SUCCESS',
      durationMs: expect.any(Number),
      traceId: 'trace-ok',
      workerId: worker.workerId,
    });
    const retry = find(plain.lines, 'task attempt failed, will retry', leakyTask!.id);
    expect(retry).toMatchObject({
      level: WARN,
      taskType: leaky.type,
      attempt: 1,
      status: 'RETRY_WAIT',
      errorCode: 'HANDLER_ERROR',
      exceptionType: 'LedgerLookupError',
      traceId: expect.any(String),
    });
    expect(retry).not.toHaveProperty('errorMessage');
    const [letter] = await client.deadLetters.list({ taskType: leaky.type });
    expect(find(plain.lines, 'task failed and moved to the dead letter queue', leakyTask!.id)).toMatchObject({
      level: ERROR,
      attempt: 2,
      status: 'FAILED',
      errorCode: 'HANDLER_ERROR',
      exceptionType: 'LedgerLookupError',
      deadLetterId: letter!.id,
    });
    expect(find(plain.lines, 'task timed out', sleepyTask!.id)).toMatchObject({
      level: ERROR,
      errorCode: 'TIMEOUT',
      exceptionType: 'TaskAbortedError',
      durationMs: expect.any(Number),
    });
    expect(plain.lines.find((l) => l.msg === 'worker stopping')).toMatchObject({ level: INFO, active: 0, buffered: 0 });
    expect(plain.lines.find((l) => l.msg === 'worker stopped')).toMatchObject({ level: INFO });

    // Opted in: both secrets appear, and at warn/error where they help.
    open.text();
    const loud = open.lines.filter((l) => l.level >= WARN && l.taskId === leakyTask!.id);
    expect(loud.length).toBeGreaterThanOrEqual(2);
    for (const line of loud) {
      expect(String(line.errorMessage)).toContain(SECRET_MESSAGE);
      expect(line.payload).toEqual(payload);
    }
  });

  it('logs a failed store operation by name only unless opted in', async () => {
    const t = defineTask({ type: 'log.any', execute: () => undefined });
    const worker = createWorker({ store, tasks: [t], ...FAST });
    env.track(worker);
    const plain = capture();
    const open = capture();
    attachLogger(worker, plain.logger);
    attachLogger(worker, open.logger, { exposeErrorMessages: true });
    const failed = worker.waitFor('error');
    worker.start();
    await store.close(); // the next claim, heartbeat or sweep fails
    const { operation } = await failed;

    plain.text();
    const line = plain.lines.find((l) => l.msg.startsWith('store operation failed') && l.operation === operation);
    expect(line).toMatchObject({ level: ERROR, errorName: 'StoreClosedError' });
    expect(line).not.toHaveProperty('err');
    expect(JSON.stringify(line)).not.toContain('after close()');
    open.text();
    const detailed = open.lines.find((l) => l.msg.startsWith('store operation failed') && l.operation === operation);
    expect(JSON.stringify(detailed)).toContain('after close()');
  });

  it('names the exception type of every kind of failure, without any message, whether messages are withheld or exposed', () => {
    class CsvParseError extends Error {
      override name = 'CsvParseError';
    }
    for (const exposeErrorMessages of [false, true]) {
      const typeOf = (error: unknown) => exceptionTypeOf(classifyFailure(error, { exposeErrorMessages, traceId: null }));
      expect(typeOf(new CsvParseError('row 7: bad date'))).toBe('CsvParseError');
      expect(typeOf(new TypeError('x is undefined'))).toBe('TypeError');
      expect(typeOf(new Error('plain'))).toBe('Error');
      expect(typeOf(new TaskFailure('upstream down', { code: 'UPSTREAM_DOWN' }))).toBe('TaskFailure');
      expect(typeOf(new TaskAbortedError('TIMEOUT', 'too slow'))).toBe('TaskAbortedError');
      // The classifier records the class itself, so a deliberate failure without its own code is named too.
      expect(typeOf(new TaskFailure('Upstream: unavailable'))).toBe('TaskFailure');
    }
    // A record read back from the store carries no type: it is told from the code and the classifier's text.
    const stored = (record: FailureRecord) => exceptionTypeOf(record);
    expect(stored({ errorCode: 'TIMEOUT', message: 'too slow', traceId: null, retryable: false })).toBe('TaskAbortedError');
    expect(stored({ errorCode: 'HANDLER_ERROR', message: 'CsvParseError (message withheld; traceId t)', traceId: 't', retryable: true })).toBe('CsvParseError');
    expect(stored({ errorCode: 'HANDLER_ERROR', message: 'Upstream: unavailable', traceId: null, retryable: true })).toBeUndefined();
  });
});
