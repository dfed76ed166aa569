/**
 * An operator's edit of a waiting task (client.edit), written once: which
 * statuses may be edited, the column each field sets, and the action row it
 * leaves. The edit is one conditional UPDATE whose WHERE clause holds the
 * status: nobody holds a lease on a waiting task, so the status is the fence —
 * a task a worker claimed between the operator's read and the write is RUNNING
 * by then and the UPDATE changes nothing (answered as a conflict).
 */
import type { TaskStatus } from '../../core/status.js';
import type { ActionRecordInput, TaskEdit } from '../types.js';
import { actionValues } from './actions.js';

/**
 * Waiting, unclaimed tasks. BLOCKED too: nothing claims it, and its release
 * (a flow's last parent ending, its sequence's turn) keeps the available_at
 * an edit set (rules/sequences.ts takes the later of it and now).
 */
export const EDITABLE_STATUSES: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT', 'PAUSED', 'BLOCKED'];

/** The fields an edit may change, in the order the action row names them, with their columns. */
export const EDIT_FIELDS = [
  { field: 'payload', key: 'payloadJson', column: 'payload_json' },
  { field: 'priority', key: 'priority', column: 'priority' },
  { field: 'availableAt', key: 'availableAt', column: 'available_at' },
  { field: 'deadlineAt', key: 'deadlineAt', column: 'deadline_at' },
  { field: 'maxAttempts', key: 'maxAttempts', column: 'max_attempts' },
] as const satisfies readonly { field: string; key: keyof TaskEdit; column: string }[];

export type EditField = (typeof EDIT_FIELDS)[number];

/** The fields `changes` sets, in EDIT_FIELDS order. */
export function editedFields(changes: TaskEdit): EditField[] {
  return EDIT_FIELDS.filter(({ key }) => changes[key] !== undefined);
}

/**
 * The SET list of an edit: each changed column from its parameter (`param` renders one), and update_time as
 * `laterTime` renders it: the later of now and the old update_time plus one millisecond. An edit always moves
 * update_time forward by a millisecond at least, so an expectation (expect.updatedAt, compared to the
 * millisecond) never mistakes a task edited within the same millisecond for the one its caller read.
 */
export function editAssignments(changes: TaskEdit, sql: { laterTime: string; param: (edit: EditField) => string }): string[] {
  return [...editedFields(changes).map((edit) => `${edit.column} = ${sql.param(edit)}`), `update_time = ${sql.laterTime}`];
}

/** The action row's detail: the names of the fields changed (never their values: a payload may be sensitive). */
export function editDetail(changes: TaskEdit): string {
  return editedFields(changes)
    .map(({ field }) => field)
    .join(',');
}

/** The EDIT row of a task the edit changed: its status before and after are the same. */
export function editAction(record: ActionRecordInput, taskId: string, status: TaskStatus): unknown[] {
  return actionValues(record, { taskId, from: status, to: status });
}
