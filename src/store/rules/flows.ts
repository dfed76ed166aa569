/**
 * Flows: what a dependency edge and its parent's end do to the child, once
 * for every dialect (DESIGN §4: "a flow's release rule … written once in
 * store/rules/").
 *
 * An edge (parent → child) is unresolved until its parent ends; then it is
 * resolved SUCCEEDED (SUCCESS, PARTIAL_SUCCESS) or FAILED (FAILED,
 * CANCELLED), exactly once: marking the edge is what makes the count of the
 * child's unresolved parents (pending_parents) go down once per parent, even
 * when a parent ends twice (an operator's retry of a FAILED parent).
 *
 * The child's status follows (settle): a FAILED resolution on an edge whose
 * onFailure is CANCEL cancels a BLOCKED or PAUSED child at once (its error
 * code PARENT_FAILED), which is itself an end its own children settle on; a
 * BLOCKED child with no unresolved parent left becomes QUEUED. A child in any
 * other status keeps it (a resumed child finds its count right).
 *
 * The same rule as functions (SQLite and MySQL decide in code) and as SQL
 * (PostgreSQL settles inside its outcome function, in the outcome's transaction).
 *
 * Every task an edge names is in a flow (flow_id set): a flow's nodes get
 * theirs at submit, a task that existed joins its new child's flow, a fan-out's
 * task joins (or starts) the flow of the children it makes. The outcome writes
 * of SQLite and MySQL rely on it: they settle only the ends of flow tasks, so a
 * plain drain pays nothing for flows there (PostgreSQL probes the edges' key).
 */
import { ErrorCode } from '../../core/errors.js';
import { TERMINAL_STATUSES, type TaskStatus } from '../../core/status.js';
import { literal, STATUS_SQL, statusList, SUCCESS_STATUSES } from './sql.js';

export const DEPENDENCY_TABLE = 'system_async_task_dependency';

/** What a parent's failure (FAILED or CANCELLED) does to a child: cancel it (the default), or run it anyway. */
export type OnParentFailure = 'CANCEL' | 'CONTINUE';
export const ON_PARENT_FAILURE: readonly OnParentFailure[] = ['CANCEL', 'CONTINUE'];

export type EdgeResolution = 'SUCCEEDED' | 'FAILED';

/** An edge's resolution once its parent is in `status`; null while the parent has not ended. */
export function resolutionOf(status: TaskStatus): EdgeResolution | null {
  if (SUCCESS_STATUSES.includes(status)) return 'SUCCEEDED';
  return TERMINAL_STATUSES.includes(status) ? 'FAILED' : null;
}

/** resolutionOf as SQL over a status column (NULL while the parent runs or waits). */
export function resolutionSql(status: string): string {
  return `CASE WHEN ${status} IN ${statusList(SUCCESS_STATUSES)} THEN ${literal('SUCCEEDED')} WHEN ${status} IN ${statusList(TERMINAL_STATUSES)} THEN ${literal('FAILED')} END`;
}

/** Whether a resolution on an edge cancels its child. */
export function cancelsChild(resolution: EdgeResolution, onFailure: OnParentFailure): boolean {
  return resolution === 'FAILED' && onFailure === 'CANCEL';
}
/** cancelsChild as SQL over the edge's columns. */
export function cancelsChildSql(resolution: string, onFailure: string): string {
  return `(${resolution} = ${literal('FAILED')} AND ${onFailure} = ${literal('CANCEL')})`;
}

/** Statuses a parent's failure cancels (a child that runs, or has ended, keeps its course). */
const CANCELLED_BY_PARENT: readonly TaskStatus[] = ['BLOCKED', 'PAUSED'];

/** The child's status once `resolved` more of its parents ended (`cancel`: one of them cancels it). */
export function settledStatus(current: TaskStatus, pendingAfter: number, cancel: boolean): TaskStatus {
  if (cancel && CANCELLED_BY_PARENT.includes(current)) return 'CANCELLED';
  if (current === 'BLOCKED' && pendingAfter <= 0) return 'QUEUED';
  return current;
}

/** settledStatus as SQL: `current` the row's status, `pendingAfter` and `cancel` SQL expressions. */
export function settledStatusSql(current: string, pendingAfter: string, cancel: string): string {
  return `CASE WHEN ${cancel} AND ${current} IN ${statusList(CANCELLED_BY_PARENT)} THEN ${STATUS_SQL.CANCELLED}
    WHEN ${current} = ${STATUS_SQL.BLOCKED} AND ${pendingAfter} <= 0 THEN ${STATUS_SQL.QUEUED} ELSE ${current} END`;
}

/** The error code a child cancelled by its parent carries. */
export const PARENT_FAILED_SQL = literal(ErrorCode.PARENT_FAILED);

/**
 * The column rules of a settled child, as SQL assignments (after `status`, which MySQL assigns first and the others
 * read as the old value: so these take `newStatus`, an expression of the new status, and `oldStatus`).
 */
export function settledAssignments(newStatus: string, oldStatus: string, now: string): string[] {
  const cancelled = `(${newStatus}) = ${STATUS_SQL.CANCELLED} AND ${oldStatus} <> ${STATUS_SQL.CANCELLED}`;
  return [
    `finish_time = CASE WHEN ${cancelled} THEN ${now} ELSE finish_time END`,
    `last_error_code = CASE WHEN ${cancelled} THEN ${PARENT_FAILED_SQL} ELSE last_error_code END`,
    `update_time = ${now}`,
  ];
}

/** The status a new task starts in: BLOCKED while it has parents to wait for. */
export function initialStatus(task: { pendingParents?: number }): TaskStatus {
  return (task.pendingParents ?? 0) > 0 ? 'BLOCKED' : 'QUEUED';
}

/**
 * A flow's retry revives the nodes its failure cancelled: a CANCELLED child
 * whose last_error_code is PARENT_FAILED waits (BLOCKED) for its parents
 * again when one of its FAILED edges is re-opened.
 */
export const REVIVABLE_SQL = `status = ${STATUS_SQL.CANCELLED} AND last_error_code = ${PARENT_FAILED_SQL}`;

/** An unresolved edge whose parent has ended, as a settle round reads it. */
export interface EndedEdge {
  childId: string;
  parentStatus: TaskStatus;
  onFailure: OnParentFailure;
}

/** A child of those edges, as read (locked) before it is settled. */
export interface SettlingChild {
  id: string;
  status: TaskStatus;
  pendingParents: number;
}

/** One UPDATE of a settle round: these children get `status` and lose `resolved` unresolved parents each. */
export interface SettleUpdate {
  ids: string[];
  status: TaskStatus;
  resolved: number;
  /** The children this update cancels (their own children settle next). */
  cancels: boolean;
}

/**
 * One round of settling, planned in code (SQLite, MySQL): children grouped by
 * what they become, so a fan-in of thousands is a few statements. The
 * children this round cancels are the parents of the next round.
 */
export function planSettle(edges: readonly EndedEdge[], children: readonly SettlingChild[]): { updates: SettleUpdate[]; cancelled: string[] } {
  const perChild = new Map<string, { resolved: number; cancel: boolean }>();
  for (const edge of edges) {
    const entry = perChild.get(edge.childId) ?? { resolved: 0, cancel: false };
    entry.resolved += 1;
    entry.cancel ||= cancelsChild(resolutionOf(edge.parentStatus) ?? 'SUCCEEDED', edge.onFailure);
    perChild.set(edge.childId, entry);
  }
  const groups = new Map<string, SettleUpdate>();
  const cancelled: string[] = [];
  for (const child of children) {
    const entry = perChild.get(child.id);
    if (!entry) continue;
    const status = settledStatus(child.status, child.pendingParents - entry.resolved, entry.cancel);
    const cancels = status === 'CANCELLED' && child.status !== 'CANCELLED';
    if (cancels) cancelled.push(child.id);
    const key = `${status}/${entry.resolved}/${cancels}`;
    const group = groups.get(key) ?? { ids: [], status, resolved: entry.resolved, cancels };
    group.ids.push(child.id);
    groups.set(key, group);
  }
  return { updates: [...groups.values()], cancelled };
}
