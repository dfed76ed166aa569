/**
 * Operator status changes (pause, resume, cancel, retry): the rows are locked
 * first (SELECT … FOR UPDATE), so the check of `from` and the write are one
 * atomic step per task even against a worker finishing it at that moment;
 * the operator's action rows (rules/actions.ts) go in the same transaction.
 */
import { scopeOwner } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import { changeStatusAssignments, checkStatusTarget, editAction, editAssignments, statusAfterChange, statusChangeActions, statusList } from '../rules/index.js';
import { reopen, settle, stepsOn } from './flows.js';
import type { ChangeStatusParams, ChangeStatusResult, EditTaskParams } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { sqlTime } from './encode.js';
import { endStepCycle, recordActions } from './control.js';
import { sortedIds } from './sql.js';

export async function changeStatus(db: MysqlDatabase, conn: Conn, params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
  checkStatusTarget(params.to);
  const ids = sortedIds(params.ids);
  const owner = scopeOwner(params.scope);
  const rows = await db.rows(
    conn,
    `SELECT id, status, pending_parents FROM system_async_task WHERE id IN (?) ${owner === null ? '' : 'AND owner = ?'} ORDER BY id FOR UPDATE`,
    owner === null ? [ids] : [ids, owner],
  );
  const current = new Map(rows.map((row) => [String(row.id), String(row.status) as TaskStatus]));
  const pending = new Map(rows.map((row) => [String(row.id), Number(row.pending_parents ?? 0)]));
  const applicable = ids.filter((id) => {
    const status = current.get(id);
    return status !== undefined && params.from.includes(status);
  });
  if (applicable.length > 0) {
    const sets = changeStatusAssignments(params, { now: 'NOW(3)', availableAt: params.availableAt ? '?' : null });
    const values = params.availableAt ? [sqlTime(params.availableAt)] : [];
    await db.exec(conn, `UPDATE system_async_task SET ${sets.join(', ')} WHERE id IN (?)`, [...values, applicable]);
    if (params.newCycle) await endStepCycle(db, conn, applicable);
    const changed = applicable.map((id) => ({ id, from: current.get(id)! }));
    await recordActions(db, conn, statusChangeActions(params.record, changed, params.to));
    // A cancel settles the flow children of what it ended; a retry re-opens the edges its failure resolved.
    if (params.to === 'CANCELLED') await settle(stepsOn(db, conn), applicable);
    if (params.to === 'QUEUED') await reopen(stepsOn(db, conn), applicable);
  }
  const applied = new Set(applicable);
  // Answers follow the input order (duplicates included); only the first mention of an id reports the change.
  const reported = new Set<string>();
  return params.ids.map((id) => {
    const changed = applied.has(id) && !reported.has(id);
    reported.add(id);
    return { id, applied: changed, status: applied.has(id) ? statusAfterChange(params.to, pending.get(id) ?? 0) : (current.get(id) ?? null) };
  });
}

/** An operator's edit (rules/edits.ts): one conditional UPDATE, then (same transaction) its action row and the status now. */
export async function editTask(db: MysqlDatabase, conn: Conn, params: EditTaskParams): Promise<ChangeStatusResult> {
  const owner = scopeOwner(params.scope);
  const values: unknown[] = [];
  const sets = editAssignments(params.changes, {
    laterTime: 'GREATEST(NOW(3), update_time + INTERVAL 1000 MICROSECOND)',
    param: ({ key }) => {
      const value = params.changes[key];
      values.push(value instanceof Date ? sqlTime(value) : value);
      return '?';
    },
  });
  let where = `id = ? AND status IN ${statusList(params.from)}`;
  values.push(params.id);
  if (owner !== null) {
    where += ' AND owner = ?';
    values.push(owner);
  }
  if (params.expectUpdatedAt) {
    where += ' AND update_time = ?';
    values.push(sqlTime(params.expectUpdatedAt));
  }
  const edited = await db.exec(conn, `UPDATE system_async_task SET ${sets.join(', ')} WHERE ${where}`, values);
  const [row] = await db.rows(
    conn,
    `SELECT status FROM system_async_task WHERE id = ? ${owner === null ? '' : 'AND owner = ?'}`,
    owner === null ? [params.id] : [params.id, owner],
  );
  const status = row ? (String(row.status) as TaskStatus) : null;
  // The UPDATE matched the row (mysql2 counts found rows); the status read after it in this transaction is the one it left.
  if (edited.affectedRows === 1 && status !== null) {
    await recordActions(db, conn, [editAction(params.record, params.id, status)]);
    return { id: params.id, applied: true, status };
  }
  return { id: params.id, applied: false, status };
}
