/**
 * Operator status changes on SQLite, inside the caller's BEGIN IMMEDIATE:
 * per task, the check of `from` and the write with rules/: column rules,
 * and the operator's action row (rules/actions.ts) in the same transaction.
 */
import { scopeOwner } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { changeStatusAssignments, editAction, editAssignments, editedFields, statusAfterChange, statusChangeActions, statusList } from '../rules/index.js';
import { reopen, settle } from './flows.js';
import type { ChangeStatusParams, ChangeStatusResult, EditTaskParams } from '../types.js';
import { statement, type Db } from './connection.js';
import { toSqliteTime } from './encode.js';
import { endStepCycle, recordActions } from './control.js';

export function changeStatus(db: Db, params: ChangeStatusParams, now: string): ChangeStatusResult[] {
  const owner = scopeOwner(params.scope);
  const select = statement(db, `SELECT status, pending_parents FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`);
  const sets = changeStatusAssignments(params, { now: '@now', availableAt: params.availableAt ? '@availableAt' : null });
  const update = statement(db, `UPDATE system_async_task SET ${sets.join(', ')} WHERE id = @id`);
  const availableAt = params.availableAt ? toSqliteTime(params.availableAt.getTime()) : null;
  const changed = new Map<string, TaskStatus>();
  const results = params.ids.map((id): ChangeStatusResult => {
    const row = select.get(...(owner === null ? [id] : [id, owner])) as { status: TaskStatus; pending_parents: number | null } | undefined;
    if (!row) return { id, applied: false, status: null };
    if (!params.from.includes(row.status)) return { id, applied: false, status: row.status };
    update.run(availableAt ? { id, now, availableAt } : { id, now });
    if (params.newCycle) endStepCycle(db, id);
    if (!changed.has(id)) changed.set(id, row.status);
    return { id, applied: true, status: statusAfterChange(params.to, row.pending_parents ?? 0) };
  });
  const ids = [...changed.keys()];
  if (params.to === 'CANCELLED') settle(db, ids, now);
  if (params.to === 'QUEUED') reopen(db, ids, now);
  recordActions(
    db,
    statusChangeActions(
      params.record,
      [...changed].map(([id, from]) => ({ id, from })),
      params.to,
    ),
    now,
  );
  return results;
}

/** An operator's edit (rules/edits.ts): one conditional UPDATE, its action row, and the status it left or found. */
export function editTask(db: Db, params: EditTaskParams, now: string): ChangeStatusResult {
  const owner = scopeOwner(params.scope);
  // Times are sortable text: MAX picks the later.
  const laterTime = "MAX(@now, strftime('%Y-%m-%d %H:%M:%f', update_time, '+0.001 seconds'))";
  const sets = editAssignments(params.changes, { laterTime, param: ({ key }) => `@${key}` });
  const values: Record<string, unknown> = { id: params.id, now };
  for (const { key } of editedFields(params.changes)) {
    const value = params.changes[key];
    values[key] = value instanceof Date ? toSqliteTime(value.getTime()) : value;
  }
  let where = `id = @id AND status IN ${statusList(params.from)}`;
  if (owner !== null) {
    where += ' AND owner = @owner';
    values.owner = owner;
  }
  if (params.expectUpdatedAt) {
    where += ' AND update_time = @expected';
    values.expected = toSqliteTime(params.expectUpdatedAt.getTime());
  }
  const edited = statement(db, `UPDATE system_async_task SET ${sets.join(', ')} WHERE ${where} RETURNING status`).get(values) as
    { status: TaskStatus } | undefined;
  if (edited) {
    recordActions(db, [editAction(params.record, params.id, edited.status)], now);
    return { id: params.id, applied: true, status: edited.status };
  }
  const row = statement(db, `SELECT status FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`).get(
    ...(owner === null ? [params.id] : [params.id, owner]),
  ) as { status: TaskStatus } | undefined;
  return { id: params.id, applied: false, status: row?.status ?? null };
}
