/**
 * Flows on PostgreSQL. The settle (rules/flows.ts) is a function installed
 * by migrate(), so that every write that may end a task calls it inside its
 * own statement or transaction: the outcome function after its outcomes, the
 * sweep and the operator's cancel after theirs (a VOLATILE function called
 * by a statement sees what the statement's CTEs wrote before it). It resolves
 * each unresolved edge of an ended parent once, locks the children in id
 * order, moves them by the rule, and goes on with the children it cancelled;
 * it answers the types of the children it queued (the caller NOTIFYs them).
 * The re-open of a retried parent's failed edges is its mirror.
 */
import type { Scope } from '../../core/scope.js';
import { scopeOwner } from '../../core/scope.js';
import type { Lease, NewTask } from '../../core/task.js';
import { dependenciesOf, edgeFromRow, otherEnds, taskFromRow, type Row } from '../rows.js';
import {
  cancelsChildSql,
  TERMINAL_SQL,
  fenceSql,
  resolutionSql,
  REVIVABLE_SQL,
  settledAssignments,
  settledStatusSql,
  STATUS_SQL,
  type OnParentFailure,
} from '../rules/index.js';
import type { AwaitChildrenResult, DependencyEdge, FlowGraph, InsertTaskResult, TaskDependencies } from '../types.js';
import { run, type PgContext, type Queryable } from './connection.js';
import { decodePostgres, uuidKey, uuidKeys } from './encode.js';
import { insertTasks } from './insert.js';
import { atomically } from './unique.js';
import { endedKeysSql, releaseCallSql, sequenceFunctionSql } from './sequences.js';

export const SETTLE_FUNCTION = 'tasklease_settle';
export const REOPEN_FUNCTION = 'tasklease_reopen';

/** The settle and re-open functions, and the sequences' release the settle calls (installed by migrate after the migrations). */
export function flowFunctionsSql(ctx: PgContext): string {
  const { task, dependency } = ctx.tables;
  const s = ctx.schema;
  const newStatus = settledStatusSql('c.status', 'COALESCE(c.pending_parents, 0) - l.n', 'l.cancel');
  return `${sequenceFunctionSql(ctx)}

CREATE OR REPLACE FUNCTION ${s}.${SETTLE_FUNCTION}(ended uuid[]) RETURNS text[] LANGUAGE plpgsql VOLATILE AS $settle$
DECLARE
  parents uuid[] := ended;
  released text[] := '{}';
  round_released text[];
BEGIN
  -- The keys whose head ended go on (sequences.ts): sequenced tasks are in no flow, so this is one round.
  released := ${releaseCallSql(ctx, endedKeysSql(ctx, 'ended'))};
  WHILE cardinality(parents) > 0 LOOP
    WITH resolved AS (
      UPDATE ${dependency} d SET resolved = ${resolutionSql('p.status')}
      FROM ${task} p
      WHERE d.parent_id = ANY (parents) AND d.resolved IS NULL AND p.id = d.parent_id AND p.status IN ${TERMINAL_SQL}
      RETURNING d.child_id, d.resolved, d.on_failure
    ),
    per_child AS (
      SELECT r.child_id, count(*)::integer AS n, bool_or(${cancelsChildSql('r.resolved', 'r.on_failure')}) AS cancel FROM resolved r GROUP BY r.child_id
    ),
    locked AS MATERIALIZED (
      SELECT c.id, c.status AS old_status, pc.n, pc.cancel FROM ${task} c JOIN per_child pc ON pc.child_id = c.id ORDER BY c.id FOR UPDATE OF c
    ),
    changed AS (
      UPDATE ${task} c SET status = ${newStatus},
        pending_parents = GREATEST(0, COALESCE(c.pending_parents, 0) - l.n),
        ${settledAssignments(newStatus, 'c.status', 'now()').join(',\n        ')}
      FROM locked l WHERE c.id = l.id
      RETURNING c.id, c.task_type, c.status, l.old_status
    )
    SELECT COALESCE(array_agg(ch.id) FILTER (WHERE ch.status = ${STATUS_SQL.CANCELLED} AND ch.old_status <> ${STATUS_SQL.CANCELLED}), '{}'),
           COALESCE(array_agg(DISTINCT ch.task_type) FILTER (WHERE ch.status = ${STATUS_SQL.QUEUED} AND ch.old_status <> ${STATUS_SQL.QUEUED}), '{}')
      INTO parents, round_released FROM changed ch;
    released := released || round_released;
  END LOOP;
  IF cardinality(released) > 0 THEN
    PERFORM pg_notify('${ctx.channel}', json_build_object('k', 's', 't', (SELECT array_agg(DISTINCT r) FROM unnest(released) r))::text);
  END IF;
  RETURN released;
END
$settle$;

CREATE OR REPLACE FUNCTION ${s}.${REOPEN_FUNCTION}(retried uuid[]) RETURNS void LANGUAGE plpgsql VOLATILE AS $reopen$
DECLARE
  parents uuid[] := retried;
BEGIN
  WHILE cardinality(parents) > 0 LOOP
    WITH reopened AS (
      UPDATE ${dependency} d SET resolved = NULL WHERE d.parent_id = ANY (parents) AND d.resolved = 'FAILED' RETURNING d.child_id
    ),
    per_child AS (SELECT r.child_id, count(*)::integer AS n FROM reopened r GROUP BY r.child_id),
    locked AS MATERIALIZED (
      SELECT c.id, (c.${REVIVABLE_SQL}) AS revive, pc.n FROM ${task} c JOIN per_child pc ON pc.child_id = c.id ORDER BY c.id FOR UPDATE OF c
    ),
    changed AS (
      UPDATE ${task} c SET pending_parents = COALESCE(c.pending_parents, 0) + l.n,
        status = CASE WHEN l.revive THEN ${STATUS_SQL.BLOCKED} ELSE c.status END,
        finish_time = CASE WHEN l.revive THEN NULL ELSE c.finish_time END,
        last_error_code = CASE WHEN l.revive THEN NULL ELSE c.last_error_code END,
        update_time = now()
      FROM locked l WHERE c.id = l.id
      RETURNING c.id, l.revive
    )
    SELECT COALESCE(array_agg(ch.id) FILTER (WHERE ch.revive), '{}') INTO parents FROM changed ch;
  END LOOP;
END
$reopen$;`;
}

/** The settle of `ids` as an SQL expression (a text[] of released types), for a statement whose CTEs ended them. */
export function settleCallSql(ctx: PgContext, idsSql: string): string {
  return `${ctx.schema}.${SETTLE_FUNCTION}(${idsSql})`;
}
export function reopenCallSql(ctx: PgContext, idsSql: string): string {
  return `${ctx.schema}.${REOPEN_FUNCTION}(${idsSql})`;
}

export async function insertFlow(
  ctx: PgContext,
  tasks: readonly NewTask[],
  edges: readonly DependencyEdge[],
  on: Queryable,
  channel: string | null,
): Promise<InsertTaskResult[]> {
  return atomically(on, 2, async (client) => {
    const results = await insertTasks(ctx, tasks, client, channel);
    const created = new Set(results.filter((r) => r.created).map((r) => r.task.id));
    const mine = edges.filter((edge) => created.has(edge.childId));
    if (mine.length === 0) return results;
    const flowOf = new Map(tasks.map((t) => [t.id, t.flowId ?? null]));
    const joining = mine.filter((edge) => !flowOf.has(edge.parentId) && flowOf.get(edge.childId));
    // Parents that exist already, locked first: one that ends meanwhile either commits before this lock is granted
    // (the statement below, a new snapshot, sees it ended and settles) or waits for this commit (its settle then sees
    // the edges). Without the lock both could miss each other, and the child would wait forever.
    const existing = [...new Set(mine.filter((e) => !flowOf.has(e.parentId)).map((e) => e.parentId))].sort();
    if (existing.length > 0) {
      await run(client, 'locking a flow’s existing parents', `SELECT 1 FROM ${ctx.tables.task} WHERE id = ANY ($1::uuid[]) ORDER BY id FOR UPDATE`, [existing]);
    }
    // One statement: the edges, parents that exist already joining their child's flow, then the settle of the parents
    // that have ended already (it sees the edges: they are written before it is called).
    await run(
      client,
      'inserting a flow’s edges',
      `WITH edges AS (
         INSERT INTO ${ctx.tables.dependency} (parent_id, child_id, on_failure, fan_out, created_at)
         SELECT * , now() FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[]) ON CONFLICT DO NOTHING RETURNING parent_id
       ),
       joined AS (
         UPDATE ${ctx.tables.task} t SET flow_id = j.flow_id, update_time = now()
         FROM unnest($5::uuid[], $6::uuid[]) AS j(id, flow_id) WHERE t.id = j.id AND t.flow_id IS NULL
       ),
       settled AS (SELECT ${settleCallSql(ctx, 'ARRAY(SELECT DISTINCT parent_id FROM edges)')} AS released)
       SELECT released FROM settled`,
      [
        mine.map((e) => e.parentId),
        mine.map((e) => e.childId),
        mine.map((e) => e.onFailure),
        mine.map((e) => e.fanOut ?? false),
        joining.map((e) => e.parentId),
        joining.map((e) => flowOf.get(e.childId)),
      ],
    );
    // Only a parent that existed before this submit can have ended: then what settling changed is read again.
    if (existing.length === 0) return results;
    const fresh = await readTasks(ctx, client, [...new Set(mine.map((e) => e.childId))]);
    return results.map((r) => (r.created ? { task: fresh.get(r.task.id) ?? r.task, created: true } : r));
  });
}

/** The fenced fan-out in one transaction: the parent locked under its fence, the children, the edges, the parent BLOCKED. */
export async function awaitChildren(
  ctx: PgContext,
  on: Queryable,
  lease: Lease,
  children: readonly NewTask[],
  onFailure: OnParentFailure,
): Promise<AwaitChildrenResult> {
  return atomically(on, 2, async (client) => {
    const parent = await run<{ flow_id: string | null; status: string }>(
      client,
      'locking a fan-out’s task',
      `SELECT flow_id, status FROM ${ctx.tables.task} WHERE id = $1 AND ${fenceSql('$2', '$3', '$4')} FOR UPDATE`,
      [uuidKey(lease.taskId), lease.workerId, lease.attempt, lease.token],
    );
    if (parent.rowCount === 0) return { applied: false, children: [] };
    if (parent.rows[0]!.status === STATUS_SQL.CANCEL_REQUESTED.slice(1, -1)) {
      // Cancelled meanwhile: the fan-out ends the task CANCELLED and makes nothing (as a snooze would).
      await run(
        client,
        'cancelling a fan-out',
        `WITH ended AS (
           UPDATE ${ctx.tables.task} SET status = ${STATUS_SQL.CANCELLED}, finish_time = now(), lease_owner = NULL, lease_until = NULL,
             update_time = now() WHERE id = $1::uuid RETURNING attempt_count
         ),
         attempt AS (
           UPDATE ${ctx.tables.attempt} a SET finished_at = now(), outcome = ${STATUS_SQL.CANCELLED}
           FROM ended e WHERE a.task_id = $1::uuid AND a.attempt = e.attempt_count
         )
         SELECT ${settleCallSql(ctx, 'ARRAY(SELECT $1::uuid FROM ended)')}`,
        [lease.taskId],
      );
      return { applied: true, children: [] };
    }
    const flowId = parent.rows[0]!.flow_id ?? lease.taskId;
    const results = await insertTasks(
      ctx,
      children.map((child) => ({ ...child, flowId })),
      client,
      ctx.channel,
    );
    const childIds = [...new Set(results.map((r) => r.task.id))];
    await run(
      client,
      'writing a fan-out',
      `WITH edges AS (
         INSERT INTO ${ctx.tables.dependency} (parent_id, child_id, on_failure, fan_out, created_at)
         SELECT c, $1::uuid, $3, true, now() FROM unnest($2::uuid[]) AS c ON CONFLICT DO NOTHING RETURNING parent_id
       ),
       blocked AS (
         UPDATE ${ctx.tables.task} SET status = ${STATUS_SQL.BLOCKED}, pending_parents = cardinality($2::uuid[]), flow_id = $4::uuid,
           lease_owner = NULL, lease_until = NULL, attempt_base = attempt_base + 1, update_time = now()
         WHERE id = $1::uuid RETURNING attempt_count
       ),
       attempt AS (
         UPDATE ${ctx.tables.attempt} a SET finished_at = now(), outcome = 'AWAITING'
         FROM blocked b WHERE a.task_id = $1::uuid AND a.attempt = b.attempt_count
       )
       SELECT count(*) FROM edges, blocked`,
      [lease.taskId, childIds, onFailure, flowId],
    );
    // Children that ended already (an idempotent repeat) count at once: after the edges are written.
    await run(client, 'settling a fan-out', `SELECT ${settleCallSql(ctx, '$1::uuid[]')}`, [childIds]);
    return { applied: true, children: results };
  });
}

export async function listDependencies(ctx: PgContext, taskId: string, scope: Scope): Promise<TaskDependencies> {
  const id = uuidKey(taskId);
  const edges = (
    await run<Row>(
      ctx.pool,
      'reading dependencies',
      `SELECT * FROM ${ctx.tables.dependency} WHERE child_id = $1 OR parent_id = $1 ORDER BY created_at, parent_id, child_id`,
      [id],
    )
  ).rows.map(edgeFromRow);
  const others = await readTasks(ctx, ctx.pool, otherEnds(taskId, edges), scope);
  return dependenciesOf(taskId, edges, others);
}

export async function getFlow(ctx: PgContext, flowId: string, scope: Scope, limit: number): Promise<FlowGraph> {
  const owner = scopeOwner(scope);
  const rows = (
    await run<Row>(
      ctx.pool,
      'reading a flow',
      `SELECT * FROM ${ctx.tables.task} WHERE flow_id = $1 AND ($2::text IS NULL OR owner = $2) ORDER BY create_time, id LIMIT $3`,
      [uuidKey(flowId), owner, limit + 1],
    )
  ).rows;
  const tasks = rows.slice(0, limit).map((row) => taskFromRow(row, decodePostgres));
  const ids = tasks.map((task) => task.id);
  const edges = (
    await run<Row>(
      ctx.pool,
      'reading a flow’s edges',
      `SELECT * FROM ${ctx.tables.dependency} WHERE child_id = ANY ($1::uuid[]) AND parent_id = ANY ($1::uuid[]) ORDER BY created_at, parent_id, child_id`,
      [ids],
    )
  ).rows.map(edgeFromRow);
  return { tasks, edges, truncated: rows.length > limit };
}

async function readTasks(ctx: PgContext, on: Queryable, ids: readonly string[], scope?: Scope): Promise<Map<string, ReturnType<typeof taskFromRow>>> {
  if (ids.length === 0) return new Map();
  const owner = scope ? scopeOwner(scope) : null;
  const rows = (
    await run<Row>(on, 'reading tasks', `SELECT * FROM ${ctx.tables.task} WHERE id = ANY ($1::uuid[]) AND ($2::text IS NULL OR owner = $2)`, [
      uuidKeys(ids),
      owner,
    ])
  ).rows;
  return new Map(rows.map((row) => [String(row.id), taskFromRow(row, decodePostgres)]));
}
