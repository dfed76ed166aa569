/**
 * Sequences on SQLite (rules/sequences.ts), inside the caller's BEGIN
 * IMMEDIATE: the single writer serializes every submit and every release, so
 * the key row needs no lock of its own — it numbers the key's tasks and holds
 * its policy. Keys travel as one JSON array parameter (json_each).
 */
import { scopeOwner, type Scope } from '../../core/scope.js';
import type { NewTask } from '../../core/task.js';
import { sequenceFromRow, taskFromRow, type Row } from '../rows.js';
import {
  holdsKeySql,
  numberingPlan,
  waitingKeysSql,
  releasedStatusSql,
  SEQUENCE_TABLE,
  sequenceHolderSql,
  sequenceLiveSql,
  sequenceNextSql,
  sequenceReleaseAssignments,
  STATUS_SQL,
  waitsSql,
  type SequenceOnDeadLetter,
  type SequenceSummary,
} from '../rules/index.js';
import type { InsertTaskResult } from '../types.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite } from './encode.js';

const TABLES = { task: 'system_async_task', sequence: SEQUENCE_TABLE };

/** Numbers the sequenced tasks, inserts them waiting through `insert`, then releases their keys; the released ones read again. */
export function insertSequenced(db: Db, tasks: readonly NewTask[], now: string, insert: (tasks: readonly NewTask[]) => InsertTaskResult[]): InsertTaskResult[] {
  const plan = numberingPlan(tasks);
  const take = statement(
    db,
    `INSERT INTO ${SEQUENCE_TABLE} (sequence_key, next_seq, on_dead_letter, updated_at) VALUES (?, ? + 1, COALESCE(?, 'BLOCK'), ?)
     ON CONFLICT (sequence_key) DO UPDATE SET next_seq = next_seq + excluded.next_seq - 1,
       on_dead_letter = COALESCE(?, on_dead_letter), updated_at = excluded.updated_at
     RETURNING next_seq`,
  );
  const next = new Map(plan.keys.map((key, i) => [key, Number((take.get(key, plan.counts[i], plan.policies[i], now, plan.policies[i]) as Row).next_seq)]));
  const results = insert(plan.assign((key, count) => next.get(key)! - count));
  releaseKeys(db, plan.keys, now);
  const reread = statement(db, 'SELECT * FROM system_async_task WHERE id = ?');
  return results.map((r) => (r.created && r.task.sequenceKey !== null ? { task: taskFromRow(reread.get(r.task.id) as Row, decodeSqlite), created: true } : r));
}

/** The keys of the heads among `ids` (tasks that just ended): what the settle releases. */
export function endedKeys(db: Db, ids: readonly string[]): string[] {
  if (ids.length === 0) return [];
  const rows = statement(
    db,
    `SELECT DISTINCT sequence_key FROM system_async_task WHERE id IN (SELECT value FROM json_each(?))
       AND sequence_key IS NOT NULL AND COALESCE(pending_parents, 0) = 0`,
  ).all(JSON.stringify(ids)) as Row[];
  return rows.map((row) => String(row.sequence_key));
}

/** For each key nothing holds, its first waiting task stops waiting; returns the types of the tasks it queued. */
export function releaseKeys(db: Db, keys: readonly string[], now: string): string[] {
  const holder = statement(db, sequenceHolderSql(TABLES, '?'));
  const next = statement(db, sequenceNextSql(TABLES.task, '?'));
  const release = statement(
    db,
    `UPDATE system_async_task AS t SET status = ${releasedStatusSql('t.status')}, ${sequenceReleaseAssignments('?', 'max').join(', ')}
     WHERE t.id = ? AND ${waitsSql('t')} RETURNING task_type, status`,
  );
  const queued: string[] = [];
  for (const key of [...new Set(keys)].sort()) {
    if (holder.get(key) !== undefined) continue;
    const row = next.get(key) as Row | undefined;
    if (!row) continue;
    const released = release.get(now, now, String(row.id)) as Row;
    if (released.status === 'QUEUED') queued.push(String(released.task_type));
  }
  return queued;
}

export function listSequences(db: Db, params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number }): SequenceSummary[] {
  const owner = scopeOwner(params.scope);
  const mine = (t: string): string => `(@owner IS NULL OR ${t}.owner = @owner)`;
  const rows = statement(
    db,
    `SELECT * FROM (
       SELECT k.sequence_key, k.on_dead_letter, k.updated_at,
         (SELECT count(*) FROM system_async_task t WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${waitsSql('t')} AND ${mine('t')}) AS waiting,
         h.id, h.task_type, h.status, h.last_error_code
       FROM ${SEQUENCE_TABLE} k
       LEFT JOIN system_async_task h ON h.id = (SELECT t.id FROM system_async_task t
         WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND ${mine('t')} ORDER BY t.sequence_seq LIMIT 1)
       WHERE ${params.key === undefined ? `@key IS NULL AND k.sequence_key IN (${waitingKeysSql('system_async_task')})` : 'k.sequence_key = @key'}
     ) s
     WHERE (@key IS NOT NULL OR s.waiting > 0)
       AND (NOT @blocked OR (s.waiting > 0 AND s.status IN (${STATUS_SQL.FAILED}, ${STATUS_SQL.PAUSED})))
       AND (@owner IS NULL OR s.waiting > 0 OR s.id IS NOT NULL)
     ORDER BY s.sequence_key LIMIT @limit`,
  ).all({ key: params.key ?? null, owner, blocked: params.blockedOnly ? 1 : 0, limit: params.limit }) as Row[];
  return rows.map((row) => sequenceFromRow(row, decodeSqlite));
}

/** The key's dead-lettered head stops holding it; the next task runs. The head skipped, or null. */
export function skipSequenceHead(db: Db, key: string, now: string): { skipped: string | null; released: string[] } {
  const head = statement(
    db,
    `SELECT t.id, t.sequence_seq FROM system_async_task t JOIN ${SEQUENCE_TABLE} k ON k.sequence_key = t.sequence_key
     WHERE t.sequence_key = ? AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND t.status = ${STATUS_SQL.FAILED} LIMIT 1`,
  ).get(key) as Row | undefined;
  if (!head) return { skipped: null, released: [] };
  statement(db, `UPDATE ${SEQUENCE_TABLE} SET skipped_through = ?, updated_at = ? WHERE sequence_key = ?`).run(Number(head.sequence_seq), now, key);
  return { skipped: String(head.id), released: releaseKeys(db, [key], now) };
}

export function setSequencePolicy(db: Db, key: string, onDeadLetter: SequenceOnDeadLetter, now: string): { found: boolean; released: string[] } {
  const changed = statement(db, `UPDATE ${SEQUENCE_TABLE} SET on_dead_letter = ?, updated_at = ? WHERE sequence_key = ?`).run(onDeadLetter, now, key).changes;
  return changed === 0 ? { found: false, released: [] } : { found: true, released: releaseKeys(db, [key], now) };
}
