/**
 * Operator status changes on SQLite, inside the caller's BEGIN IMMEDIATE:
 * per task, the check of `from` and the write with rules/: column rules.
 */
import { scopeOwner } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { changeStatusAssignments } from '../rules/index.js';
import type { ChangeStatusParams, ChangeStatusResult } from '../types.js';
import { statement, type Db } from './connection.js';
import { toSqliteTime } from './encode.js';

export function changeStatus(db: Db, params: ChangeStatusParams, now: string): ChangeStatusResult[] {
  const owner = scopeOwner(params.scope);
  const select = statement(db, `SELECT status FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`);
  const sets = changeStatusAssignments(params, { now: '@now', availableAt: params.availableAt ? '@availableAt' : null });
  const update = statement(db, `UPDATE system_async_task SET ${sets.join(', ')} WHERE id = @id`);
  const availableAt = params.availableAt ? toSqliteTime(params.availableAt.getTime()) : null;
  return params.ids.map((id): ChangeStatusResult => {
    const row = select.get(...(owner === null ? [id] : [id, owner])) as { status: TaskStatus } | undefined;
    if (!row) return { id, applied: false, status: null };
    if (!params.from.includes(row.status)) return { id, applied: false, status: row.status };
    update.run(availableAt ? { id, now, availableAt } : { id, now });
    return { id, applied: true, status: params.to };
  });
}
