/**
 * Sequences on PostgreSQL (rules/sequences.ts). The release is a function
 * installed by migrate(), called by the settle (flows.ts) for the keys of the
 * heads that ended — so every write that ends a task releases its key in its
 * own transaction — and by a submit after its insert. It locks the key row,
 * then (when nothing holds the key) its first waiting task; a submit locks
 * the key row by its upsert, before it inserts. Each statement of the
 * function takes a fresh snapshot (VOLATILE, READ COMMITTED): after the key
 * row's lock is granted it sees every task a concurrent submit committed.
 */
import type { Scope } from '../../core/scope.js';
import { scopeOwner } from '../../core/scope.js';
import type { NewTask } from '../../core/task.js';
import { sequenceFromRow, taskFromRow, type Row } from '../rows.js';
import {
  holdsKeySql,
  releasedStatusSql,
  sequenceHolderSql,
  sequenceLiveSql,
  sequenceNextSql,
  numberingPlan,
  waitingKeysSql,
  sequenceReleaseAssignments,
  STATUS_SQL,
  waitsSql,
  type SequenceOnDeadLetter,
  type SequenceSummary,
} from '../rules/index.js';
import type { InsertTaskResult } from '../types.js';
import { run, type PgContext, type Queryable } from './connection.js';
import { decodePostgres } from './encode.js';
import { inTransaction } from './unique.js';

export const SEQUENCE_RELEASE_FUNCTION = 'tasklease_sequence_release';

export function sequenceFunctionSql(ctx: PgContext): string {
  const { task, sequence } = ctx.tables;
  return `
CREATE OR REPLACE FUNCTION ${ctx.schema}.${SEQUENCE_RELEASE_FUNCTION}(keys text[]) RETURNS text[] LANGUAGE plpgsql VOLATILE AS $release$
DECLARE
  v_key text;
  v_next uuid;
  v_type text;
  v_status text;
  released text[] := '{}';
BEGIN
  FOR v_key IN SELECT DISTINCT k FROM unnest(keys) AS k WHERE k IS NOT NULL ORDER BY k LOOP
    PERFORM 1 FROM ${sequence} WHERE sequence_key = v_key FOR UPDATE;
    CONTINUE WHEN EXISTS (${sequenceHolderSql({ task, sequence }, 'v_key')});
    LOOP
      v_next := (${sequenceNextSql(task, 'v_key')});
      EXIT WHEN v_next IS NULL;
      -- Re-checked under the row's lock: an operator may have cancelled it meanwhile (then the next one).
      UPDATE ${task} t SET status = ${releasedStatusSql('t.status')}, ${sequenceReleaseAssignments('now()', 'GREATEST').join(', ')}
      WHERE t.id = v_next AND ${waitsSql('t')}
      RETURNING t.task_type, t.status INTO v_type, v_status;
      IF FOUND THEN
        IF v_status = ${STATUS_SQL.QUEUED} THEN released := released || v_type; END IF;
        EXIT;
      END IF;
    END LOOP;
  END LOOP;
  RETURN released;
END
$release$;`;
}

/** The keys of the heads among `ids` (tasks that just ended) as an SQL text[] expression. */
export function endedKeysSql(ctx: PgContext, ids: string): string {
  return `ARRAY(SELECT DISTINCT t.sequence_key FROM ${ctx.tables.task} t
    WHERE t.id = ANY (${ids}) AND t.sequence_key IS NOT NULL AND COALESCE(t.pending_parents, 0) = 0)`;
}

export function releaseCallSql(ctx: PgContext, keys: string): string {
  return `${ctx.schema}.${SEQUENCE_RELEASE_FUNCTION}(${keys})`;
}

/**
 * Numbers the sequenced tasks (each key's row upserted and so locked, keys in
 * order), marks them waiting, inserts them through `insert`, then releases
 * their keys: all in one transaction. The released tasks are read again.
 */
export async function insertSequenced(
  ctx: PgContext,
  tasks: readonly NewTask[],
  on: Queryable,
  insert: (tasks: readonly NewTask[], on: Queryable) => Promise<InsertTaskResult[]>,
): Promise<InsertTaskResult[]> {
  return inTransaction(on, async (client) => {
    const plan = numberingPlan(tasks);
    const numbered = await run<Row>(
      client,
      'numbering sequenced tasks',
      // A key's row: next_seq is the next number to give; a batch of n takes next_seq … next_seq + n − 1.
      `INSERT INTO ${ctx.tables.sequence} AS s (sequence_key, next_seq, on_dead_letter, updated_at)
       SELECT k, n + 1, COALESCE(p, 'BLOCK'), now() FROM unnest($1::text[], $2::bigint[], $3::text[]) AS u(k, n, p) ORDER BY k
       ON CONFLICT (sequence_key) DO UPDATE SET next_seq = s.next_seq + EXCLUDED.next_seq - 1,
         on_dead_letter = COALESCE(($3::text[])[array_position($1::text[], EXCLUDED.sequence_key)], s.on_dead_letter), updated_at = now()
       RETURNING sequence_key, next_seq`,
      [plan.keys, plan.counts, plan.policies],
    );
    const next = new Map(numbered.rows.map((row) => [String(row.sequence_key), Number(row.next_seq)]));
    const prepared = plan.assign((key, count) => next.get(key)! - count);
    const results = await insert(prepared, client);
    // The insert's wake-up names these types already.
    await run(client, 'releasing sequences', `SELECT ${releaseCallSql(ctx, '$1::text[]')}`, [plan.keys]);
    const created = results.filter((r) => r.created && r.task.sequenceKey !== null).map((r) => r.task.id);
    if (created.length === 0) return results;
    const fresh = await run<Row>(client, 'reading sequenced tasks', `SELECT * FROM ${ctx.tables.task} WHERE id = ANY ($1::uuid[])`, [created]);
    const byId = new Map(fresh.rows.map((row) => [String(row.id), taskFromRow(row, decodePostgres)]));
    return results.map((r) => (r.created && byId.has(r.task.id) ? { task: byId.get(r.task.id)!, created: true } : r));
  });
}

/** A key's standing: its head, its waiting tasks, whether it needs an operator; `key` one key, else every key with waiting tasks. */
export async function listSequences(ctx: PgContext, params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): Promise<SequenceSummary[]> {
  const { task, sequence } = ctx.tables;
  const owner = scopeOwner(params.scope);
  const mine = (t: string): string => `($2::text IS NULL OR ${t}.owner = $2)`;
  const result = await run<Row>(
    ctx.pool,
    'listing sequences',
    `SELECT k.sequence_key, k.on_dead_letter, k.updated_at, w.waiting, h.id, h.task_type, h.status, h.last_error_code
     FROM ${sequence} k
     CROSS JOIN LATERAL (SELECT count(*)::integer AS waiting FROM ${task} t
       WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${waitsSql('t')} AND ${mine('t')}) w
     LEFT JOIN LATERAL (SELECT t.id, t.task_type, t.status, t.last_error_code FROM ${task} t
       WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND ${mine('t')}
       ORDER BY t.sequence_seq LIMIT 1) h ON true
     WHERE ${params.key === undefined ? `$1::text IS NULL AND k.sequence_key IN (${waitingKeysSql(task)})` : 'k.sequence_key = $1'}
       AND ($1::text IS NOT NULL OR w.waiting > 0)
       AND (NOT $3::boolean OR (w.waiting > 0 AND h.status IN (${STATUS_SQL.FAILED}, ${STATUS_SQL.PAUSED})))
       AND ($2::text IS NULL OR w.waiting > 0 OR h.id IS NOT NULL)
     ORDER BY k.sequence_key LIMIT $4`,
    [params.key ?? null, owner, params.blockedOnly ?? false, params.limit],
  );
  return result.rows.map((row) => sequenceFromRow(row, decodePostgres));
}

/** The key's dead-lettered head stops holding it (it stays a dead letter); the next task runs. The head skipped (or null), what it queued. */
export async function skipSequenceHead(ctx: PgContext, key: string): Promise<{ skipped: string | null; released: string[] }> {
  const { task, sequence } = ctx.tables;
  return inTransaction(ctx.pool, async (client) => {
    await run(client, 'locking a sequence', `SELECT 1 FROM ${sequence} WHERE sequence_key = $1 FOR UPDATE`, [key]);
    const head = await run<Row>(
      client,
      'skipping a sequence head',
      `WITH head AS (SELECT t.id, t.sequence_seq FROM ${task} t JOIN ${sequence} k ON k.sequence_key = t.sequence_key
         WHERE t.sequence_key = $1 AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND t.status = ${STATUS_SQL.FAILED} LIMIT 1)
       UPDATE ${sequence} k SET skipped_through = head.sequence_seq, updated_at = now() FROM head WHERE k.sequence_key = $1 RETURNING head.id`,
      [key],
    );
    if (head.rows.length === 0) return { skipped: null, released: [] };
    return { skipped: String(head.rows[0]!.id), released: await release(ctx, client, [key]) };
  });
}

/** Sets a key's policy (found: false when no such key); a key that turns to SKIP behind a dead-lettered head goes on at once. */
export async function setSequencePolicy(ctx: PgContext, key: string, onDeadLetter: SequenceOnDeadLetter): Promise<{ found: boolean; released: string[] }> {
  return inTransaction(ctx.pool, async (client) => {
    const updated = await run(
      client,
      'setting a sequence policy',
      `UPDATE ${ctx.tables.sequence} SET on_dead_letter = $2, updated_at = now() WHERE sequence_key = $1`,
      [key, onDeadLetter],
    );
    if (updated.rowCount === 0) return { found: false, released: [] };
    return { found: true, released: await release(ctx, client, [key]) };
  });
}

export async function releaseSequences(ctx: PgContext, keys: readonly string[]): Promise<string[]> {
  return inTransaction(ctx.pool, (client) => release(ctx, client, keys));
}

/** The types it queued: the store's wake-up after the commit names them (base.ts). */
async function release(ctx: PgContext, client: Queryable, keys: readonly string[]): Promise<string[]> {
  const result = await run<Row>(client, 'releasing sequences', `SELECT ${releaseCallSql(ctx, '$1::text[]')} AS released`, [keys]);
  return (result.rows[0]!.released as string[] | null) ?? [];
}
