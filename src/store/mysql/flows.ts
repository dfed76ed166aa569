/**
 * Flows on MySQL/MariaDB, inside the caller's transaction (given as its
 * steps: one round trip per step). MariaDB's UPDATE has no RETURNING, so a
 * settle round reads the ended parents' unresolved edges under lock, marks
 * them, locks the children in id order, and moves them by the rule
 * (rules/flows.ts planSettle groups them: a fan-in of thousands is a few
 * statements); the children it cancelled settle next.
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask } from '../../core/task.js';
import { dependenciesOf, edgeFromRow, otherEnds, taskFromRow, type Row } from '../rows.js';
import {
  DEPENDENCY_TABLE,
  TERMINAL_SQL,
  PARENT_FAILED_SQL,
  planSettle,
  REVIVABLE_SQL,
  resolutionSql,
  STATUS_SQL,
  type EndedEdge,
  type OnParentFailure,
  type SettlingChild,
} from '../rules/index.js';
import type { AwaitChildrenResult, DependencyEdge, DependencyRecord, FlowGraph, InsertTaskResult, TaskDependencies } from '../types.js';
import type { Conn, MysqlDatabase, Steps } from './connection.js';
import { stepsOn } from './connection.js';
import { decode } from './encode.js';
import { insertTasks } from './insert.js';
import { endedKeys, releaseKeys } from './sequences.js';
import { sortedIds } from './sql.js';

export { stepsOn, type Steps } from './connection.js';

/** The children of `parentIds` that ended settle, round after round; returns the types of the children it queued. */
export async function settle(tx: Steps, parentIds: readonly string[]): Promise<string[]> {
  // The keys whose head ended go on (sequences.ts): sequenced tasks are in no flow, so this is one round.
  const queued = await releaseKeys(tx, await endedKeys(tx, parentIds));
  let ids = [...new Set(parentIds)];
  while (ids.length > 0) {
    const [edgeRows] = (await tx.step([
      {
        sql: `SELECT d.child_id, d.on_failure, p.status AS parent_status FROM ${DEPENDENCY_TABLE} d JOIN system_async_task p ON p.id = d.parent_id
              WHERE d.parent_id IN (?) AND d.resolved IS NULL AND p.status IN ${TERMINAL_SQL} ORDER BY d.parent_id, d.child_id FOR UPDATE`,
        values: [ids],
      },
    ])) as Row[][];
    const edges = edgeRows!.map((row): EndedEdge => ({
      childId: String(row.child_id),
      parentStatus: row.parent_status as TaskStatus,
      onFailure: row.on_failure as OnParentFailure,
    }));
    if (edges.length === 0) break;
    const childIds = sortedIds(edges.map((edge) => edge.childId));
    const [, childRows] = (await tx.step([
      {
        sql: `UPDATE ${DEPENDENCY_TABLE} d JOIN system_async_task p ON p.id = d.parent_id SET d.resolved = ${resolutionSql('p.status')}
              WHERE d.parent_id IN (?) AND d.resolved IS NULL AND p.status IN ${TERMINAL_SQL}`,
        values: [ids],
      },
      { sql: 'SELECT id, task_type, status, pending_parents FROM system_async_task WHERE id IN (?) ORDER BY id FOR UPDATE', values: [childIds] },
    ])) as Row[][];
    const children = childRows!.map((row): SettlingChild => ({
      id: String(row.id),
      status: row.status as TaskStatus,
      pendingParents: Number(row.pending_parents ?? 0),
    }));
    const typeOf = new Map(childRows!.map((row) => [String(row.id), String(row.task_type)]));
    const plan = planSettle(edges, children);
    await tx.step(
      plan.updates.map((update) => ({
        sql: `UPDATE system_async_task SET finish_time = CASE WHEN ? THEN NOW(3) ELSE finish_time END,
                last_error_code = CASE WHEN ? THEN ${PARENT_FAILED_SQL} ELSE last_error_code END,
                status = ?, pending_parents = GREATEST(0, COALESCE(pending_parents, 0) - ?), update_time = NOW(3) WHERE id IN (?)`,
        values: [update.cancels ? 1 : 0, update.cancels ? 1 : 0, update.status, update.resolved, update.ids],
      })),
    );
    for (const update of plan.updates) if (update.status === 'QUEUED') queued.push(...update.ids.map((id) => typeOf.get(id)!));
    ids = plan.cancelled;
  }
  return [...new Set(queued)];
}

/** A retried parent's FAILED edges re-open; the children its failure cancelled wait (BLOCKED) again, and so on down. */
export async function reopen(tx: Steps, parentIds: readonly string[]): Promise<void> {
  let ids = [...new Set(parentIds)];
  while (ids.length > 0) {
    const [edgeRows] = (await tx.step([
      { sql: `SELECT child_id FROM ${DEPENDENCY_TABLE} WHERE parent_id IN (?) AND resolved = 'FAILED' ORDER BY parent_id, child_id FOR UPDATE`, values: [ids] },
    ])) as Row[][];
    if (edgeRows!.length === 0) break;
    const counts = new Map<string, number>();
    for (const row of edgeRows!) counts.set(String(row.child_id), (counts.get(String(row.child_id)) ?? 0) + 1);
    const childIds = sortedIds([...counts.keys()]);
    const [, revivable] = (await tx.step([
      { sql: `UPDATE ${DEPENDENCY_TABLE} SET resolved = NULL WHERE parent_id IN (?) AND resolved = 'FAILED'`, values: [ids] },
      { sql: `SELECT id FROM system_async_task WHERE id IN (?) AND ${REVIVABLE_SQL} ORDER BY id FOR UPDATE`, values: [childIds] },
    ])) as Row[][];
    const revive = new Set(revivable!.map((row) => String(row.id)));
    await tx.step(
      childIds.map((id) => ({
        sql: `UPDATE system_async_task SET finish_time = CASE WHEN ? THEN NULL ELSE finish_time END,
                last_error_code = CASE WHEN ? THEN NULL ELSE last_error_code END,
                status = CASE WHEN ? THEN ${STATUS_SQL.BLOCKED} ELSE status END,
                pending_parents = COALESCE(pending_parents, 0) + ?, update_time = NOW(3) WHERE id = ?`,
        values: [revive.has(id) ? 1 : 0, revive.has(id) ? 1 : 0, revive.has(id) ? 1 : 0, counts.get(id), id],
      })),
    );
    ids = [...revive];
  }
}

export async function insertFlow(db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[], edges: readonly DependencyEdge[]): Promise<InsertTaskResult[]> {
  // Parents that exist already, locked first (in id order): concurrent submits of children of one parent take turns
  // on its row instead of deadlocking between their edges and its flow_id, and a parent that ends meanwhile either
  // commits first (the settle below reads it ended) or waits for this commit (its settle then reads the edges).
  const inputIds = new Set(tasks.map((t) => t.id));
  const parents = sortedIds(edges.filter((e) => !inputIds.has(e.parentId)).map((e) => e.parentId));
  if (parents.length > 0) await db.rows(conn, 'SELECT id FROM system_async_task WHERE id IN (?) ORDER BY id FOR UPDATE', [parents]);
  const results = await insertTasks(db, conn, tasks);
  const created = new Set(results.filter((r) => r.created).map((r) => r.task.id));
  const mine = edges.filter((edge) => created.has(edge.childId));
  if (mine.length === 0) return results;
  const flowOf = new Map(tasks.map((t) => [t.id, t.flowId ?? null]));
  await insertEdges(db, conn, mine);
  for (const edge of mine) {
    const flowId = flowOf.get(edge.childId);
    if (!flowOf.has(edge.parentId) && flowId) {
      await db.exec(conn, 'UPDATE system_async_task SET flow_id = ?, update_time = NOW(3) WHERE id = ? AND flow_id IS NULL', [flowId, edge.parentId]);
    }
  }
  const existing = [...new Set(mine.filter((edge) => !flowOf.has(edge.parentId)).map((edge) => edge.parentId))];
  if (existing.length === 0) return results;
  await settle(stepsOn(db, conn), existing);
  const fresh = await readTasks(db, conn, [...created]);
  return results.map((r) => (r.created ? { task: fresh.get(r.task.id) ?? r.task, created: true } : r));
}

async function insertEdges(db: MysqlDatabase, conn: Conn, edges: readonly DependencyEdge[]): Promise<void> {
  for (let i = 0; i < edges.length; i += 1000) {
    const rows = edges.slice(i, i + 1000).map((e) => [e.parentId, e.childId, e.onFailure, e.fanOut ? 1 : 0]);
    await db.exec(
      conn,
      `INSERT INTO ${DEPENDENCY_TABLE} (parent_id, child_id, on_failure, fan_out, created_at)
       SELECT v.*, NOW(3) FROM (${rows.map(() => 'SELECT ? AS p, ? AS c, ? AS f, ? AS o').join(' UNION ALL ')}) v
       ON DUPLICATE KEY UPDATE parent_id = ${DEPENDENCY_TABLE}.parent_id`,
      rows.flat(),
    );
  }
}

/** The fenced fan-out, in the caller's transaction (the store opens one): false, writing nothing, when the lease is gone. */
export async function awaitChildren(
  db: MysqlDatabase,
  conn: Conn,
  lease: Lease,
  children: readonly NewTask[],
  onFailure: OnParentFailure,
): Promise<AwaitChildrenResult> {
  const [parent] = await db.rows(
    conn,
    `SELECT flow_id, status, attempt_count FROM system_async_task WHERE id = ? AND lease_owner = ? AND attempt_count = ? AND lease_token = ?
       AND status IN (${STATUS_SQL.RUNNING}, ${STATUS_SQL.CANCEL_REQUESTED}) FOR UPDATE`,
    [lease.taskId, lease.workerId, lease.attempt, lease.token],
  );
  if (!parent) return { applied: false, children: [] };
  const closeAttempt = (outcome: string) =>
    db.exec(conn, 'UPDATE system_async_task_attempt SET finished_at = NOW(3), outcome = ? WHERE task_id = ? AND attempt = ?', [
      outcome,
      lease.taskId,
      lease.attempt,
    ]);
  if (parent.status === 'CANCEL_REQUESTED') {
    // Cancelled meanwhile: the fan-out ends the task CANCELLED and makes nothing (as a snooze would).
    await db.exec(
      conn,
      `UPDATE system_async_task SET status = ${STATUS_SQL.CANCELLED}, finish_time = NOW(3), lease_owner = NULL, lease_until = NULL, update_time = NOW(3) WHERE id = ?`,
      [lease.taskId],
    );
    await closeAttempt('CANCELLED');
    await settle(stepsOn(db, conn), [lease.taskId]);
    return { applied: true, children: [] };
  }
  const flowId = parent.flow_id === null ? lease.taskId : String(parent.flow_id);
  const results = await insertTasks(
    db,
    conn,
    children.map((child) => ({ ...child, flowId })),
  );
  const childIds = [...new Set(results.map((r) => r.task.id))];
  await insertEdges(
    db,
    conn,
    childIds.map((childId) => ({ parentId: childId, childId: lease.taskId, onFailure, fanOut: true })),
  );
  await db.exec(
    conn,
    `UPDATE system_async_task SET status = ${STATUS_SQL.BLOCKED}, pending_parents = ?, flow_id = ?, lease_owner = NULL, lease_until = NULL,
       attempt_base = attempt_base + 1, update_time = NOW(3) WHERE id = ?`,
    [childIds.length, flowId, lease.taskId],
  );
  await closeAttempt('AWAITING');
  await settle(stepsOn(db, conn), childIds);
  return { applied: true, children: results };
}

export async function listDependencies(db: MysqlDatabase, conn: Conn, taskId: string, scope: Scope): Promise<TaskDependencies> {
  const edges = (
    await db.rows(conn, `SELECT * FROM ${DEPENDENCY_TABLE} WHERE child_id = ? OR parent_id = ? ORDER BY created_at, parent_id, child_id`, [taskId, taskId])
  ).map(edgeFromRow);
  const others = await readTasks(db, conn, otherEnds(taskId, edges), scope);
  return dependenciesOf(taskId, edges, others);
}

export async function getFlow(db: MysqlDatabase, conn: Conn, flowId: string, scope: Scope, limit: number): Promise<FlowGraph> {
  const owner = scopeOwner(scope);
  const rows = await db.rows(
    conn,
    `SELECT * FROM system_async_task WHERE flow_id = ? ${owner === null ? '' : 'AND owner = ?'} ORDER BY create_time, id LIMIT ?`,
    owner === null ? [flowId, limit + 1] : [flowId, owner, limit + 1],
  );
  const tasks = rows.slice(0, limit).map((row) => taskFromRow(row, decode));
  const ids = tasks.map((task) => task.id);
  const edges: DependencyRecord[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const part = ids.slice(i, i + 1000);
    const found = await db.rows(conn, `SELECT * FROM ${DEPENDENCY_TABLE} WHERE child_id IN (?) ORDER BY created_at, parent_id, child_id`, [part]);
    edges.push(...found.map(edgeFromRow));
  }
  const inFlow = new Set(ids);
  return { tasks, edges: edges.filter((e) => inFlow.has(e.parentId)), truncated: rows.length > limit };
}

async function readTasks(db: MysqlDatabase, conn: Conn, ids: readonly string[], scope?: Scope): Promise<Map<string, ReturnType<typeof taskFromRow>>> {
  if (ids.length === 0) return new Map();
  const owner = scope ? scopeOwner(scope) : null;
  const rows = await db.rows(
    conn,
    `SELECT * FROM system_async_task WHERE id IN (?) ${owner === null ? '' : 'AND owner = ?'}`,
    owner === null ? [ids] : [ids, owner],
  );
  return new Map(rows.map((row) => [String(row.id), taskFromRow(row, decode)]));
}
