/**
 * Editing a waiting task (client.edit): payload, priority, start time,
 * deadline or max attempts of a QUEUED, RETRY_WAIT, PAUSED or BLOCKED task.
 * Every value is checked as a submit checks it (submit.ts: the type's schema
 * when this client knows the definition, the ranges, the payload's size) and
 * the payload is stored through the client's encode hooks (middleware.ts), so
 * an encrypted type stays encrypted. The store writes it with one conditional
 * UPDATE (store/rules/edits.ts): a task claimed meanwhile changes nothing.
 */
import { ErrorCode, InvalidTransitionError, NotFoundError, PayloadInvalidError, TaskChangedError, ValidationError } from '../core/errors.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { runSchema } from '../core/standard-schema.js';
import type { TaskStatus } from '../core/status.js';
import type { Task } from '../core/task.js';
import { checkKnownKeys, keysOf } from '../core/validate.js';
import { EDITABLE_STATUSES } from '../store/rules/edits.js';
import type { TaskEdit } from '../store/types.js';
import { isEncrypted } from './encryption.js';
import { checkDate, checkDeadline, checkMaxAttempts, checkPriority, storedPayload, type SubmitLimits } from './submit.js';

/** What an edit changes; a field left out keeps its value. */
export interface TaskChanges {
  /** The new payload, as a submit gives it (checked against the type's schema, then encoded). */
  payload?: unknown;
  /** -1000 to 1000. */
  priority?: number;
  /** Start no earlier than this time (a RETRY_WAIT task: its retry's time). */
  availableAt?: Date;
  /** A time still ahead, or null: no deadline any more. */
  deadlineAt?: Date | null;
  /** 1 to 100. Lowered to the attempts already spent, the next failure ends the task for good. */
  maxAttempts?: number;
}

const CHANGE_KEYS = keysOf<TaskChanges>({ payload: true, priority: true, availableAt: true, deadlineAt: true, maxAttempts: true });

export { EDITABLE_STATUSES };

/** The changes' own checks (no read needed): known keys, at least one, ranges and dates. */
export function checkChanges(changes: TaskChanges, now?: () => number): void {
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) throw new ValidationError('edit takes an object of changes', 'changes');
  checkKnownKeys('edit', changes, CHANGE_KEYS);
  if (CHANGE_KEYS.every((key) => (changes as Record<string, unknown>)[key] === undefined)) {
    throw new ValidationError(`edit needs at least one of ${CHANGE_KEYS.join(', ')}`, 'changes');
  }
  if (changes.priority !== undefined) checkPriority('edit', changes.priority);
  if (changes.maxAttempts !== undefined) checkMaxAttempts('edit', changes.maxAttempts);
  checkDate('edit', 'availableAt', changes.availableAt);
  if (changes.deadlineAt !== null) checkDeadline('edit', changes.deadlineAt, now);
}

/** `expect: { updatedAt }` checked: the time the caller read the task at (Task.updatedAt), or null. */
export function expectedUpdate(expect: unknown): Date | null {
  if (expect === undefined) return null;
  if (typeof expect !== 'object' || expect === null) throw new ValidationError('edit: expect must be { updatedAt: Date }', 'expect');
  checkKnownKeys('edit expect', expect, ['updatedAt']);
  const { updatedAt } = expect as { updatedAt?: unknown };
  if (!(updatedAt instanceof Date) || Number.isNaN(updatedAt.getTime()))
    throw new ValidationError('edit: expect.updatedAt must be a valid Date', 'expect.updatedAt');
  return updatedAt;
}

/** The columns to write for `task`: the payload checked by its type's schema (when known) and encoded. */
export async function editOf(task: Task, changes: TaskChanges, definition: AnyTaskDefinition | undefined, limits: SubmitLimits): Promise<TaskEdit> {
  if (!EDITABLE_STATUSES.includes(task.status)) throw new InvalidTransitionError(task.id, task.status, 'edit');
  const edit: TaskEdit = {};
  if (changes.payload !== undefined) {
    if (definition?.schema) {
      const checked = await runSchema(definition.schema, changes.payload);
      if (!checked.ok) throw new PayloadInvalidError(task.taskType, checked.issues);
    }
    const { payloadJson } = storedPayload(task.taskType, changes.payload, limits, 'edit');
    if (isEncrypted(task.payload) && !isEncrypted(JSON.parse(payloadJson))) {
      throw new ValidationError(
        `edit: the payload of task ${task.id} is encrypted, and this client would store the new one in clear: give it the type's encryption middleware (the task modules: --tasks, the server's middleware option)`,
        'payload',
        ErrorCode.PAYLOAD_NOT_SEALED,
      );
    }
    edit.payloadJson = payloadJson;
  }
  if (changes.priority !== undefined) edit.priority = changes.priority;
  if (changes.availableAt !== undefined) edit.availableAt = changes.availableAt;
  if (changes.deadlineAt !== undefined) edit.deadlineAt = changes.deadlineAt;
  if (changes.maxAttempts !== undefined) edit.maxAttempts = changes.maxAttempts;
  return edit;
}

/** Why an edit changed nothing: the task is gone (or out of scope), no longer waiting, or changed since `expected`. */
export function editRefusal(id: string, status: TaskStatus | null, expected: Date | null): Error {
  if (status === null) return new NotFoundError('task', id);
  if (!EDITABLE_STATUSES.includes(status) || expected === null) return new InvalidTransitionError(id, status, 'edit');
  return new TaskChangedError(id, expected);
}
