/** Every error the library throws on purpose carries a stable code (issue 12, item 8: the ones outside the worker and stores). */
import { describe, expect, it } from 'vitest';
import { DriverMissingError, ErrorCode, InvalidStateError, TaskLeaseError } from '../../src/core/errors.js';
import { Scope } from '../../src/core/scope.js';
import { leaseOf, type Task } from '../../src/core/task.js';

describe('typed errors', () => {
  it('Scope.owner without an owner is a ValidationError naming the field', () => {
    expect(() => Scope.owner('')).toThrowError(
      expect.objectContaining({ code: ErrorCode.VALIDATION, field: 'owner', message: 'Scope.owner needs a non-empty owner' }),
    );
  });

  it('the lease of a task that has none is an INVALID_STATE error', () => {
    const task = { id: 't-1', leaseOwner: null, attemptCount: 0 } as unknown as Task;
    const error = (() => {
      try {
        return leaseOf(task);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(InvalidStateError);
    expect(error).toMatchObject({ code: 'INVALID_STATE', message: 'task t-1 has no lease' });
  });

  it('a missing driver names the package and the command that installs it', () => {
    const error = new DriverMissingError('pg', 'tasklease/postgres');
    expect(error).toBeInstanceOf(TaskLeaseError);
    expect(error).toMatchObject({
      code: 'DRIVER_MISSING',
      packageName: 'pg',
      message: 'tasklease/postgres needs the pg package, which is not installed: npm install pg',
    });
  });
});
