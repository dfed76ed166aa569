/**
 * Flows on SQLite, inside the caller's BEGIN IMMEDIATE: the edges of a flow,
 * the settle of the children of tasks that ended (rules/flows.ts decides,
 * planSettle groups), the re-opening of a retried parent's failed edges, and
 * the reads of a flow. Ids travel as one JSON array parameter (json_each).
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { TaskStatus } from '../../core/status.js';
import type { Lease, NewTask } from '../../core/task.js';
import { dependenciesOf, edgeFromRow, otherEnds, taskFromRow, type Row } from '../rows.js';
import {
  DEPENDENCY_TABLE,
  TERMINAL_SQL,
  fenceSql,
  planSettle,
  PARENT_FAILED_SQL,
  REVIVABLE_SQL,
  resolutionSql,
  STATUS_SQL,
  type EndedEdge,
  type OnParentFailure,
  type SettlingChild,
} from '../rules/index.js';
import type { DependencyEdge, FlowGraph, InsertTaskResult, TaskDependencies } from '../types.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite } from './encode.js';
import { closeAttempt } from './finish.js';
import { insertTasks } from './insert.js';
import { endedKeys, releaseKeys } from './sequences.js';

const IDS = 'SELECT value FROM json_each(?)';

/** Tasks and edges in the caller's transaction; then the edges whose parent ended already settle. */
export function insertFlow(db: Db, tasks: readonly NewTask[], edges: readonly DependencyEdge[], nowMs: number, now: string): InsertTaskResult[] {
  const results = insertTasks(db, tasks, nowMs);
  const created = new Set(results.filter((r) => r.created).map((r) => r.task.id));
  joinFlow(db, tasks, edges, created, now);
  insertEdges(
    db,
    edges.filter((edge) => created.has(edge.childId)),
    now,
  );
  const parents = [...new Set(edges.filter((edge) => created.has(edge.childId)).map((edge) => edge.parentId))];
  settle(db, parents, now);
  // What settling changed of the new children (a parent that had ended already).
  if (parents.length === 0) return results;
  const fresh = readTasks(db, [...created]);
  return results.map((r) => (r.created ? { task: fresh.get(r.task.id) ?? r.task, created: true } : r));
}

/** A parent that exists already joins its new child's flow unless it has one (its children settle only in a flow). */
function joinFlow(db: Db, tasks: readonly NewTask[], edges: readonly DependencyEdge[], created: ReadonlySet<string>, now: string): void {
  const flowOf = new Map(tasks.map((t) => [t.id, t.flowId ?? null]));
  const join = statement(db, 'UPDATE system_async_task SET flow_id = ?, update_time = ? WHERE id = ? AND flow_id IS NULL');
  for (const edge of edges) {
    const flowId = flowOf.get(edge.childId);
    if (created.has(edge.childId) && !flowOf.has(edge.parentId) && flowId) join.run(flowId, now, edge.parentId);
  }
}

function insertEdges(db: Db, edges: readonly DependencyEdge[], now: string): void {
  const insert = statement(db, `INSERT OR IGNORE INTO ${DEPENDENCY_TABLE} (parent_id, child_id, on_failure, fan_out, created_at) VALUES (?, ?, ?, ?, ?)`);
  for (const edge of edges) insert.run(edge.parentId, edge.childId, edge.onFailure, edge.fanOut ? 1 : 0, now);
}

/**
 * The children of `parentIds` whose parent has ended: each unresolved edge is
 * resolved once, and the children follow the rule, round after round (a
 * cancelled child's own children settle next). Returns the types of the
 * children it queued (the workers to wake).
 */
export function settle(db: Db, parentIds: readonly string[], now: string): string[] {
  // The keys whose head ended go on (sequences.ts): sequenced tasks are in no flow, so this is one round.
  const released = releaseKeys(db, endedKeys(db, parentIds), now);
  return [...new Set([...released, ...settleEdges(db, parentIds, now)])];
}

function settleEdges(db: Db, parentIds: readonly string[], now: string): string[] {
  const edgesOf = statement(
    db,
    `SELECT d.child_id, d.on_failure, p.status AS parent_status FROM ${DEPENDENCY_TABLE} d JOIN system_async_task p ON p.id = d.parent_id
     WHERE d.parent_id IN (${IDS}) AND d.resolved IS NULL AND p.status IN ${TERMINAL_SQL}`,
  );
  const resolve = statement(
    db,
    `UPDATE ${DEPENDENCY_TABLE} SET resolved = (SELECT ${resolutionSql('p.status')} FROM system_async_task p WHERE p.id = parent_id)
     WHERE parent_id IN (${IDS}) AND resolved IS NULL
       AND EXISTS (SELECT 1 FROM system_async_task p WHERE p.id = parent_id AND p.status IN ${TERMINAL_SQL})`,
  );
  const childrenOf = statement(db, `SELECT id, status, pending_parents FROM system_async_task WHERE id IN (${IDS})`);
  const queued: string[] = [];
  let ids = [...parentIds];
  while (ids.length > 0) {
    const json = JSON.stringify(ids);
    const edges = (edgesOf.all(json) as Row[]).map((row): EndedEdge => ({
      childId: String(row.child_id),
      parentStatus: row.parent_status as TaskStatus,
      onFailure: row.on_failure as OnParentFailure,
    }));
    if (edges.length === 0) break;
    resolve.run(json);
    const childIds = [...new Set(edges.map((edge) => edge.childId))];
    const children = (childrenOf.all(JSON.stringify(childIds)) as Row[]).map((row): SettlingChild => ({
      id: String(row.id),
      status: row.status as TaskStatus,
      pendingParents: Number(row.pending_parents ?? 0),
    }));
    const plan = planSettle(edges, children);
    for (const update of plan.updates) {
      statement(
        db,
        `UPDATE system_async_task SET status = ?, pending_parents = MAX(0, COALESCE(pending_parents, 0) - ?),
           finish_time = CASE WHEN ? THEN ? ELSE finish_time END, last_error_code = CASE WHEN ? THEN ${PARENT_FAILED_SQL} ELSE last_error_code END,
           update_time = ? WHERE id IN (${IDS})`,
      ).run(update.status, update.resolved, update.cancels ? 1 : 0, now, update.cancels ? 1 : 0, now, JSON.stringify(update.ids));
      if (update.status === 'QUEUED') queued.push(...update.ids);
    }
    ids = plan.cancelled;
  }
  if (queued.length === 0) return [];
  const types = statement(db, `SELECT DISTINCT task_type FROM system_async_task WHERE id IN (${IDS})`).all(JSON.stringify(queued)) as Row[];
  return types.map((row) => String(row.task_type));
}

/**
 * A retried parent (FAILED → QUEUED) waits again for nothing, but its children
 * wait for it again: its FAILED edges re-open, their children count it
 * pending once more, and those it had cancelled wait (BLOCKED) again — and so
 * on down, for their own children.
 */
export function reopen(db: Db, parentIds: readonly string[], now: string): void {
  const edgesOf = statement(db, `SELECT child_id FROM ${DEPENDENCY_TABLE} WHERE parent_id IN (${IDS}) AND resolved = 'FAILED'`);
  const unresolve = statement(db, `UPDATE ${DEPENDENCY_TABLE} SET resolved = NULL WHERE parent_id IN (${IDS}) AND resolved = 'FAILED'`);
  const revive = statement(
    db,
    `UPDATE system_async_task SET pending_parents = COALESCE(pending_parents, 0) + ?,
       status = CASE WHEN ${REVIVABLE_SQL} THEN ${STATUS_SQL.BLOCKED} ELSE status END,
       finish_time = CASE WHEN ${REVIVABLE_SQL} THEN NULL ELSE finish_time END,
       last_error_code = CASE WHEN ${REVIVABLE_SQL} THEN NULL ELSE last_error_code END,
       update_time = ? WHERE id = ? RETURNING status`,
  );
  const revivable = statement(db, `SELECT id FROM system_async_task WHERE id IN (${IDS}) AND ${REVIVABLE_SQL}`);
  let ids = [...parentIds];
  while (ids.length > 0) {
    const json = JSON.stringify(ids);
    const counts = new Map<string, number>();
    for (const row of edgesOf.all(json) as Row[]) counts.set(String(row.child_id), (counts.get(String(row.child_id)) ?? 0) + 1);
    if (counts.size === 0) break;
    unresolve.run(json);
    const next = (revivable.all(JSON.stringify([...counts.keys()])) as Row[]).map((row) => String(row.id));
    for (const [child, count] of counts) revive.run(count, now, child);
    ids = next;
  }
}

/** The fenced fan-out: children in, edges up to the parent, the parent BLOCKED on them; false when the lease is gone. */
export function awaitChildren(
  db: Db,
  lease: Lease,
  children: readonly NewTask[],
  onFailure: OnParentFailure,
  nowMs: number,
  now: string,
): { applied: boolean; children: InsertTaskResult[] } {
  const parent = statement(db, `SELECT flow_id FROM system_async_task WHERE id = ? AND ${fenceSql('?', '?', '?')}`).get(
    lease.taskId,
    lease.workerId,
    lease.attempt,
    lease.token,
  ) as Row | undefined;
  if (!parent) return { applied: false, children: [] };
  const flowId = parent.flow_id === null || parent.flow_id === undefined ? lease.taskId : String(parent.flow_id);
  const results = insertTasks(
    db,
    children.map((child) => ({ ...child, flowId })),
    nowMs,
  );
  const childIds = [...new Set(results.map((r) => r.task.id))];
  insertEdges(
    db,
    childIds.map((childId) => ({ parentId: childId, childId: lease.taskId, onFailure, fanOut: true })),
    now,
  );
  // The fan-out's own row: blocked on every child, the lease gone, the attempt free (as a snooze); in its flow.
  statement(
    db,
    `UPDATE system_async_task SET status = ${STATUS_SQL.BLOCKED}, pending_parents = ?, flow_id = ?, lease_owner = NULL, lease_until = NULL,
       attempt_base = attempt_base + 1, update_time = ? WHERE id = ?`,
  ).run(childIds.length, flowId, now, lease.taskId);
  closeAttempt(db, lease.taskId, lease.attempt, 'AWAITING', null, now);
  // Children that ended already (an idempotent repeat) count at once.
  settle(db, childIds, now);
  return { applied: true, children: results };
}

export function listDependencies(db: Db, taskId: string, scope: Scope): TaskDependencies {
  const edges = (
    statement(db, `SELECT * FROM ${DEPENDENCY_TABLE} WHERE child_id = ? OR parent_id = ? ORDER BY created_at, parent_id, child_id`).all(taskId, taskId) as Row[]
  ).map(edgeFromRow);
  const others = readTasks(db, otherEnds(taskId, edges), scope);
  return dependenciesOf(taskId, edges, others);
}

export function getFlow(db: Db, flowId: string, scope: Scope, limit: number): FlowGraph {
  const owner = scopeOwner(scope);
  const rows = statement(db, `SELECT * FROM system_async_task WHERE flow_id = ? ${owner === null ? '' : 'AND owner = ?'} ORDER BY create_time, id LIMIT ?`).all(
    ...(owner === null ? [flowId, limit + 1] : [flowId, owner, limit + 1]),
  ) as Row[];
  const tasks = rows.slice(0, limit).map((row) => taskFromRow(row, decodeSqlite));
  const ids = JSON.stringify(tasks.map((task) => task.id));
  const edges = (
    statement(db, `SELECT * FROM ${DEPENDENCY_TABLE} WHERE child_id IN (${IDS}) AND parent_id IN (${IDS}) ORDER BY created_at, parent_id, child_id`).all(
      ids,
      ids,
    ) as Row[]
  ).map(edgeFromRow);
  return { tasks, edges, truncated: rows.length > limit };
}

function readTasks(db: Db, ids: readonly string[], scope?: Scope): Map<string, ReturnType<typeof taskFromRow>> {
  const owner = scope ? scopeOwner(scope) : null;
  const rows = statement(db, `SELECT * FROM system_async_task WHERE id IN (${IDS}) ${owner === null ? '' : 'AND owner = ?'}`).all(
    ...(owner === null ? [JSON.stringify(ids)] : [JSON.stringify(ids), owner]),
  ) as Row[];
  return new Map(rows.map((row) => [String(row.id), taskFromRow(row, decodeSqlite)]));
}
