/**
 * Operator status changes on SQLite, inside the caller's BEGIN IMMEDIATE:
 * per task, the check of `from` and the write with rules/: column rules,
 * and the operator's action row (rules/actions.ts) in the same transaction.
 */
import { scopeOwner } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { changeStatusAssignments, statusAfterChange, statusChangeActions } from '../rules/index.js';
import { reopen, settle } from './flows.js';
import type { ChangeStatusParams, ChangeStatusResult } from '../types.js';
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
