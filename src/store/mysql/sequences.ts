/**
 * Sequences on MySQL/MariaDB (rules/sequences.ts), in the caller's
 * transaction (READ COMMITTED): a submit's upsert of its key row, and the
 * release's SELECT … FOR UPDATE of it, take the key row's lock before anything
 * else of the key is read, so the reads after it see every commit before it.
 * MariaDB's UPDATE has no RETURNING: the release reads its candidate, then
 * updates it with the waiting check again (an operator may have cancelled it
 * meanwhile: then the next one).
 */
import type { Scope } from '../../core/scope.js';
import { scopeOwner } from '../../core/scope.js';
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
import { stepsOn, type Conn, type MysqlDatabase, type Steps } from './connection.js';
import { decode } from './encode.js';
import type { ResultSetHeader } from 'mysql2';

const TABLES = { task: 'system_async_task', sequence: SEQUENCE_TABLE };

/** Numbers the sequenced tasks, inserts them waiting through `insert`, then releases their keys; the released ones read again. */
export async function insertSequenced(
  db: MysqlDatabase,
  conn: Conn,
  tasks: readonly NewTask[],
  insert: (tasks: readonly NewTask[]) => Promise<InsertTaskResult[]>,
): Promise<InsertTaskResult[]> {
  const plan = numberingPlan(tasks);
  // Every key's upsert (which locks its row, keys in order) and read back, in one round trip.
  const answers = await db.batch(
    conn,
    plan.keys.flatMap((key, i) => [
      {
        sql: `INSERT INTO ${SEQUENCE_TABLE} (sequence_key, next_seq, on_dead_letter, updated_at) VALUES (?, ? + 1, COALESCE(?, 'BLOCK'), NOW(3))
              ON DUPLICATE KEY UPDATE next_seq = next_seq + VALUES(next_seq) - 1, on_dead_letter = COALESCE(?, on_dead_letter), updated_at = NOW(3)`,
        values: [key, plan.counts[i], plan.policies[i], plan.policies[i]],
      },
      { sql: `SELECT next_seq FROM ${SEQUENCE_TABLE} WHERE sequence_key = ?`, values: [key] },
    ]),
  );
  const next = new Map(plan.keys.map((key, i) => [key, Number((answers[2 * i + 1] as Row[])[0]!.next_seq)]));
  const results = await insert(plan.assign((key, count) => next.get(key)! - count));
  await releaseKeys(stepsOn(db, conn), plan.keys);
  const created = results.filter((r) => r.created && r.task.sequenceKey !== null).map((r) => r.task.id);
  if (created.length === 0) return results;
  const fresh = new Map(
    (await db.rows(conn, 'SELECT * FROM system_async_task WHERE id IN (?)', [created])).map((row) => [String(row.id), taskFromRow(row, decode)]),
  );
  return results.map((r) => (r.created && fresh.has(r.task.id) ? { task: fresh.get(r.task.id)!, created: true } : r));
}

/** The keys of the heads among `ids` (tasks that just ended): what the settle releases. */
export async function endedKeys(tx: Steps, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const [rows] = (await tx.step([
    {
      sql: `SELECT DISTINCT sequence_key FROM system_async_task WHERE id IN (?) AND sequence_key IS NOT NULL AND COALESCE(pending_parents, 0) = 0`,
      values: [ids],
    },
  ])) as Row[][];
  return rows!.map((row) => String(row.sequence_key));
}

/** For each key nothing holds, its first waiting task stops waiting; returns the types of the tasks it queued. */
export async function releaseKeys(tx: Steps, keys: readonly string[]): Promise<string[]> {
  const queued: string[] = [];
  for (const key of [...new Set(keys)].sort()) {
    const [, holder] = (await tx.step([
      { sql: `SELECT sequence_key FROM ${SEQUENCE_TABLE} WHERE sequence_key = ? FOR UPDATE`, values: [key] },
      { sql: sequenceHolderSql(TABLES, '?'), values: [key] },
    ])) as Row[][];
    if (holder!.length > 0) continue;
    for (;;) {
      const [candidates] = (await tx.step([{ sql: sequenceNextSql(TABLES.task, '?'), values: [key] }])) as Row[][];
      const id = candidates![0]?.id;
      if (id === undefined) break;
      const [updated, after] = (await tx.step([
        {
          // status last: MySQL assigns left to right, and the other assignments do not read it.
          sql: `UPDATE system_async_task t SET ${sequenceReleaseAssignments('NOW(3)', 'GREATEST').join(', ')}, status = ${releasedStatusSql('t.status')}
                WHERE t.id = ? AND ${waitsSql('t')}`,
          values: [id],
        },
        { sql: 'SELECT task_type, status FROM system_async_task WHERE id = ?', values: [id] },
      ])) as [ResultSetHeader, Row[]];
      if (updated.affectedRows === 0) continue;
      if (after[0]!.status === 'QUEUED') queued.push(String(after[0]!.task_type));
      break;
    }
  }
  return queued;
}

export async function listSequences(
  db: MysqlDatabase,
  conn: Conn,
  params: { scope: Scope; key?: string; blockedOnly?: boolean; limit: number },
): Promise<SequenceSummary[]> {
  const owner = scopeOwner(params.scope);
  const mine = (t: string): string => `(? IS NULL OR ${t}.owner = ?)`;
  const rows = await db.rows(
    conn,
    `SELECT * FROM (
       SELECT k.sequence_key, k.on_dead_letter, k.updated_at,
         (SELECT count(*) FROM system_async_task t WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${waitsSql('t')} AND ${mine('t')}) AS waiting,
         h.id, h.task_type, h.status, h.last_error_code
       FROM ${SEQUENCE_TABLE} k
       LEFT JOIN system_async_task h ON h.id = (SELECT t.id FROM system_async_task t
         WHERE t.sequence_key = k.sequence_key AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND ${mine('t')} ORDER BY t.sequence_seq LIMIT 1)
       WHERE ${params.key === undefined ? `? IS NULL AND k.sequence_key IN (${waitingKeysSql('system_async_task')})` : 'k.sequence_key = ?'}
     ) s
     WHERE (? IS NOT NULL OR s.waiting > 0)
       AND (NOT ? OR (s.waiting > 0 AND s.status IN (${STATUS_SQL.FAILED}, ${STATUS_SQL.PAUSED})))
       AND (? IS NULL OR s.waiting > 0 OR s.id IS NOT NULL)
     ORDER BY s.sequence_key LIMIT ?`,
    [owner, owner, owner, owner, params.key ?? null, params.key ?? null, params.blockedOnly ? 1 : 0, owner, params.limit],
  );
  return rows.map((row) => sequenceFromRow(row, decode));
}

/** The key's dead-lettered head stops holding it; the next task runs. The head skipped (or null), and what it queued. */
export async function skipSequenceHead(tx: Steps, key: string): Promise<{ skipped: string | null; released: string[] }> {
  const [, heads] = (await tx.step([
    { sql: `SELECT sequence_key FROM ${SEQUENCE_TABLE} WHERE sequence_key = ? FOR UPDATE`, values: [key] },
    {
      sql: `SELECT t.id, t.sequence_seq FROM system_async_task t JOIN ${SEQUENCE_TABLE} k ON k.sequence_key = t.sequence_key
            WHERE t.sequence_key = ? AND ${sequenceLiveSql('t')} AND ${holdsKeySql('t', 'k')} AND t.status = ${STATUS_SQL.FAILED} LIMIT 1`,
      values: [key],
    },
  ])) as Row[][];
  const head = heads![0];
  if (!head) return { skipped: null, released: [] };
  await tx.step([{ sql: `UPDATE ${SEQUENCE_TABLE} SET skipped_through = ?, updated_at = NOW(3) WHERE sequence_key = ?`, values: [head.sequence_seq, key] }]);
  return { skipped: String(head.id), released: await releaseKeys(tx, [key]) };
}

export async function setSequencePolicy(tx: Steps, key: string, onDeadLetter: SequenceOnDeadLetter): Promise<{ found: boolean; released: string[] }> {
  // affectedRows counts changed rows only (no CLIENT_FOUND_ROWS): a policy set to what it was is found by the read.
  const [, rows] = (await tx.step([
    { sql: `UPDATE ${SEQUENCE_TABLE} SET on_dead_letter = ?, updated_at = NOW(3) WHERE sequence_key = ?`, values: [onDeadLetter, key] },
    { sql: `SELECT 1 AS found FROM ${SEQUENCE_TABLE} WHERE sequence_key = ?`, values: [key] },
  ])) as [unknown, Row[]];
  if (rows!.length === 0) return { found: false, released: [] };
  return { found: true, released: await releaseKeys(tx, [key]) };
}
