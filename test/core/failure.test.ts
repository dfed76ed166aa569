import { describe, expect, it } from 'vitest';
import { PayloadInvalidError, TaskAbortedError, TaskFailure } from '../../src/core/errors.js';
import { classifyFailure } from '../../src/core/failure.js';
import { uuidv7 } from '../../src/core/ids.js';

describe('failure classification', () => {
  const opts = { exposeErrorMessages: false, traceId: null };

  it('withholds raw exception text unless the operator opts in', () => {
    const failure = classifyFailure(new TypeError('password=hunter2 for patient 42'), opts);
    expect(failure).toMatchObject({ errorCode: 'HANDLER_ERROR', retryable: true });
    expect(failure.message).not.toContain('hunter2');
    expect(failure.message).toContain('TypeError');
    expect(failure.traceId).toMatch(/^[0-9a-f]{16}$/);
    expect(classifyFailure(new Error('visible'), { ...opts, exposeErrorMessages: true }).message).toBe('Error: visible');
  });

  it('honours TaskFailure codes and retryability, with bounded codes', () => {
    expect(classifyFailure(new TaskFailure('no such file', { code: 'missing-file', retryable: false }), { ...opts, traceId: 't1' })).toEqual({
      errorCode: 'MISSING-FILE',
      message: 'no such file',
      traceId: 't1',
      retryable: false,
      exceptionType: 'TaskFailure',
    });
    expect(classifyFailure(new TaskFailure('x'.repeat(5000), { code: 'a b;c' }), opts).errorCode).toBe('A_B_C');
    expect(classifyFailure(new TaskFailure('x'.repeat(5000)), opts).message.length).toBeLessThanOrEqual(1001);
  });

  it('never retries timeouts, cancellations or schema failures; respects retryable:false on plain errors', () => {
    expect(classifyFailure(new TaskAbortedError('TIMEOUT', 't'), opts).retryable).toBe(false);
    expect(classifyFailure(new TaskAbortedError('CANCELLED', 'c'), opts).retryable).toBe(false);
    expect(classifyFailure(new PayloadInvalidError('t', [{ message: 'bad' }]), opts)).toMatchObject({ errorCode: 'PAYLOAD_INVALID', retryable: false });
    expect(classifyFailure(Object.assign(new Error('x'), { retryable: false }), opts).retryable).toBe(false);
    expect(classifyFailure('a string', opts)).toMatchObject({ errorCode: 'HANDLER_ERROR', retryable: true });
  });
});

describe('uuidv7', () => {
  it('is a v7 UUID that sorts by creation order', () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7());
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carries its millisecond in the first 48 bits and random bits after the counter', () => {
    const at = Date.UTC(2031, 4, 6, 7, 8, 9, 123);
    const ids = Array.from({ length: 3000 }, () => uuidv7(at)); // crosses the 4 KiB random pool several times
    for (const id of ids) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      // The counter may borrow the next milliseconds, never go back.
      expect(ms).toBeGreaterThanOrEqual(at);
      expect(ms).toBeLessThan(at + 10);
    }
    expect([...ids].sort()).toEqual(ids);
    // The last 62 bits are random: no two ids share them.
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(ids.length);
  });
});
