/**
 * Operator status changes (pause, resume, cancel, retry) in one statement:
 * lock the matching rows in id order, change them with rules/: column
 * rules, record the operator's action for each task changed (rules/actions.ts;
 * the row's `from_status` is the locked row's), NOTIFY (cancel requests by id,
 * in chunks under the payload limit; requeues as a wake-up for every type),
 * and answer for every id.
 */
import { scopeOwner } from '../../core/scope.js';
import { TaskStatus } from '../../core/status.js';
import { ACTION_COLUMNS, changeStatusAssignments, editAssignments } from '../rules/index.js';
import type { ChangeStatusParams, ChangeStatusResult, EditTaskParams } from '../types.js';
import { run, type PgContext } from './connection.js';
import { uuidKeys } from './encode.js';
import { reopenCallSql, settleCallSql } from './flows.js';
import { WAKE_ALL_PAYLOAD } from './wakeups.js';
import { endStepCycleCte } from './control.js';

export async function changeStatus(ctx: PgContext, params: ChangeStatusParams): Promise<ChangeStatusResult[]> {
  const owner = scopeOwner(params.scope);
  // $4 is always referenced: every $n needs a type.
  const sets = changeStatusAssignments(params, { now: 'now()', availableAt: 'COALESCE($4::timestamptz, t.available_at)', row: 't.' });
  const inScope = owner === null ? '$3::text IS NULL' : 'owner = $3';
  const sql = `
WITH input AS (SELECT * FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, ord)),
locked AS MATERIALIZED (
  SELECT id, status FROM ${ctx.tables.task} WHERE id = ANY($1::uuid[]) AND ${inScope} AND status = ANY($2::text[])
  ORDER BY id FOR UPDATE
),
changed AS (
  UPDATE ${ctx.tables.task} t SET ${sets.join(', ')} WHERE t.id = ANY (ARRAY(SELECT id FROM locked)) RETURNING t.id, t.status, t.attempt_count
),${params.newCycle ? `\nstepped AS (${endStepCycleCte(ctx, 'changed')}),` : ''}
acted AS (
  INSERT INTO ${ctx.tables.action} ${ACTION_COLUMNS}
  SELECT c.id, $6::text, l.status, c.status, $7::text, $8::text, $9::text, now() FROM changed c JOIN locked l ON l.id = c.id
  WHERE $6::text IS NOT NULL
),
notified AS (${notifySql(params.to)}),
flows AS (${flowSql(ctx, params.to)})
SELECT c.id IS NOT NULL AS applied, COALESCE(c.status, cur.status) AS status, note.n AS notified
FROM input i
LEFT JOIN changed c ON c.id = i.id
LEFT JOIN ${ctx.tables.task} cur ON cur.id = i.id AND ${inScope.replace('owner', 'cur.owner')}
CROSS JOIN (SELECT count(*) AS n FROM notified) AS note
CROSS JOIN (SELECT count(*) FROM flows) AS flowed
ORDER BY i.ord`;
  const { record } = params;
  // One row per id asked for, in order; an id that is not a UUID is a null key, found nowhere, and answered as given.
  const values: unknown[] = [
    uuidKeys(params.ids),
    [...params.from],
    owner,
    params.availableAt ?? null,
    ctx.channel,
    record?.action ?? null,
    record?.actor.id ?? null,
    record?.actor.name ?? null,
    record?.detail ?? null,
  ];
  const result = await run<{ applied: boolean; status: TaskStatus | null }>(ctx.pool, 'changing task status', sql, values);
  return result.rows.map((row, i) => ({ id: params.ids[i]!, applied: row.applied, status: row.status }));
}

/** A cancel settles the flow children of what it ended; a retry re-opens the edges its failure resolved (flows.ts). */
function flowSql(ctx: PgContext, to: TaskStatus): string {
  if (to === TaskStatus.CANCELLED) return `SELECT ${settleCallSql(ctx, 'ARRAY(SELECT id FROM changed)')}`;
  if (to === TaskStatus.QUEUED) return `SELECT ${reopenCallSql(ctx, 'ARRAY(SELECT id FROM changed)')}`;
  return 'SELECT 1';
}

function notifySql(to: TaskStatus): string {
  if (to === TaskStatus.CANCEL_REQUESTED) {
    // A uuid is 36 characters as text, 39 with its quotes and comma: chunks of 7000 bytes stay under the payload limit.
    return `SELECT pg_notify($5, json_build_object('k', 'c', 'i', array_agg(id))::text) FROM (
      SELECT id, (39 * row_number() OVER (ORDER BY id)) / 7000 AS chunk FROM changed) AS ids GROUP BY chunk`;
  }
  if (to === TaskStatus.QUEUED) return `SELECT pg_notify($5, '${WAKE_ALL_PAYLOAD}') FROM changed HAVING count(*) > 0`;
  return `SELECT 1 WHERE $5::text IS NOT NULL AND false`;
}

/** The SQL type of each edited column's parameter. */
const EDIT_CASTS: Record<string, string> = {
  payload_json: 'text',
  priority: 'integer',
  available_at: 'timestamptz',
  deadline_at: 'timestamptz',
  max_attempts: 'integer',
};

/**
 * An operator's edit (rules/edits.ts) in one statement: the conditional UPDATE, its action row, and the status it
 * left (or, when it changed nothing, the status the statement's snapshot saw). update_time is kept to the
 * microsecond; the expectation compares what a reader was given, the millisecond (the driver truncates).
 */
export async function editTask(ctx: PgContext, params: EditTaskParams): Promise<ChangeStatusResult> {
  const owner = scopeOwner(params.scope);
  const { record } = params;
  const values: unknown[] = [
    uuidKeys([params.id])[0],
    [...params.from],
    owner,
    params.expectUpdatedAt ?? null,
    record.action,
    record.actor.id,
    record.actor.name ?? null,
    record.detail ?? null,
  ];
  const sets = editAssignments(params.changes, {
    laterTime: "GREATEST(now(), t.update_time + interval '1 millisecond')",
    // Each parameter's number is its place in `values`.
    param: ({ key, column }) => `$${values.push(params.changes[key])}::${EDIT_CASTS[column]}`,
  });
  const inScope = owner === null ? '$3::text IS NULL' : 'owner = $3';
  const sql = `
WITH changed AS (
  UPDATE ${ctx.tables.task} t SET ${sets.join(', ')}
  WHERE t.id = $1::uuid AND t.status = ANY($2::text[]) AND ${inScope.replace('owner', 't.owner')}
    AND ($4::timestamptz IS NULL OR date_trunc('milliseconds', t.update_time) = $4::timestamptz)
  RETURNING t.id, t.status
),
acted AS (
  INSERT INTO ${ctx.tables.action} ${ACTION_COLUMNS}
  SELECT c.id, $5::text, c.status, c.status, $6::text, $7::text, $8::text, now() FROM changed c
)
SELECT (SELECT count(*) FROM changed) > 0 AS applied,
  COALESCE((SELECT status FROM changed), (SELECT status FROM ${ctx.tables.task} WHERE id = $1::uuid AND ${inScope})) AS status`;
  const result = await run<{ applied: boolean; status: TaskStatus | null }>(ctx.pool, 'editing a task', sql, values);
  const row = result.rows[0]!;
  return { id: params.id, applied: row.applied, status: row.status };
}
