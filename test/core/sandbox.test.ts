import { describe, expect, it } from 'vitest';
import { defineTask } from '../../src/core/definition.js';
import { ErrorCode, ValidationError } from '../../src/core/errors.js';
import { moduleUrl } from '../../src/core/sandbox.js';

/** The code and field of what defineTask throws for this definition. */
function rejection(definition: Record<string, unknown>): { code: string; field: string | undefined } {
  try {
    defineTask({ type: 's', ...definition } as never);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return { code: (error as ValidationError).code, field: (error as ValidationError).field };
  }
  throw new Error('defineTask accepted it');
}

describe('sandbox definitions', () => {
  const module = '/srv/app/handlers/resize.js';

  it('accepts a module by absolute path or file: URL, with an export name and limits', () => {
    const t = defineTask({ type: 's', sandbox: { module, exportName: 'resize', maxOldGenerationSizeMb: 64, stackSizeMb: 4, idleTimeoutMs: 1000 } });
    expect(t.sandbox?.exportName).toBe('resize');
    expect(moduleUrl('s', module)).toBe('file:///srv/app/handlers/resize.js');
    expect(moduleUrl('s', new URL('file:///srv/x.mjs'))).toBe('file:///srv/x.mjs');
    expect(moduleUrl('s', 'file:///srv/x.mjs')).toBe('file:///srv/x.mjs');
  });

  it('rejects each bad key with a typed error naming its field', () => {
    expect(rejection({ sandbox: { module }, execute: () => undefined })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox' });
    expect(rejection({ sandbox: 'x' })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox' });
    expect(rejection({ sandbox: { module: 'handlers/resize.js' } })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox.module' });
    expect(rejection({ sandbox: { module: new URL('https://example.invalid/x.js') } })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox.module' });
    expect(rejection({ sandbox: { module, exportName: '' } })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox.exportName' });
    expect(rejection({ sandbox: { module, maxOldGenerationSizeMb: 0 } })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox.maxOldGenerationSizeMb' });
    expect(rejection({ sandbox: { module, terminateGraceMs: -1 } })).toEqual({ code: ErrorCode.VALIDATION, field: 'sandbox.terminateGraceMs' });
    expect(rejection({ sandbox: { module, memoryMb: 10 } }).field).toBe('sandbox.memoryMb');
  });
});
