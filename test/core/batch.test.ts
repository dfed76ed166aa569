import { describe, expect, it } from 'vitest';
import { defineTask } from '../../src/core/definition.js';
import { ErrorCode, ValidationError } from '../../src/core/errors.js';

/** The code and field of what defineTask throws for this definition. */
function rejection(definition: Record<string, unknown>): { code: string; field: string | undefined } {
  try {
    defineTask({ type: 'b', ...definition } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return { code: (error as ValidationError).code, field: (error as ValidationError).field };
  }
  throw new Error('defineTask accepted it');
}

describe('batch definitions', () => {
  const executeBatch = (): void => undefined;

  it('accepts executeBatch with batch { maxSize, maxWaitMs }', () => {
    const t = defineTask({ type: 'b', executeBatch, batch: { maxSize: 100, maxWaitMs: 0 } });
    expect(t.batch).toEqual({ maxSize: 100, maxWaitMs: 0 });
  });

  it('rejects each bad key with a typed error naming its field', () => {
    expect(rejection({ executeBatch: 'no' as never, batch: { maxSize: 1, maxWaitMs: 0 } })).toEqual({ code: ErrorCode.VALIDATION, field: 'executeBatch' });
    expect(rejection({ executeBatch })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch' });
    expect(rejection({ batch: { maxSize: 1, maxWaitMs: 0 } })).toEqual({ code: ErrorCode.VALIDATION, field: 'executeBatch' });
    expect(rejection({ execute: executeBatch, executeBatch, batch: { maxSize: 1, maxWaitMs: 0 } })).toEqual({
      code: ErrorCode.VALIDATION,
      field: 'executeBatch',
    });
    expect(rejection({ executeBatch, batch: { maxSize: 0, maxWaitMs: 0 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxSize' });
    expect(rejection({ executeBatch, batch: { maxSize: 10_001, maxWaitMs: 0 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxSize' });
    expect(rejection({ executeBatch, batch: { maxSize: 1.5, maxWaitMs: 0 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxSize' });
    expect(rejection({ executeBatch, batch: { maxSize: 5 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxWaitMs' });
    expect(rejection({ executeBatch, batch: { maxSize: 5, maxWaitMs: 60_001 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxWaitMs' });
    expect(rejection({ executeBatch, batch: { maxSize: 5, maxWait: 10 } })).toEqual({ code: ErrorCode.INVALID_OPTIONS, field: 'batch.maxWait' });
  });
});
