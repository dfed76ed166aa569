/**
 * Per-task logs on MySQL/MariaDB (rules/logs.ts): a batch of lines written inside a transaction on the lease pool;
 * the task row is locked while its fence is judged (a locking read sees the newest version), so a sweep that takes
 * the lease waits for this commit or finds it refused. The listing.
 */
import { logFromRow } from '../rows.js';
import {
  boundLogBatch,
  fenceSql,
  LOG_MARKER_LEVEL,
  LOG_ORDER_SQL,
  liveLeaseSql,
  logMarkerFieldsJson,
  logMarkerMessage,
  planLogAppend,
  type LogAttemptStats,
} from '../rules/index.js';
import type { AppendTaskLogsParams, TaskLogRecord } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { decode, sqlTime } from './encode.js';

export async function appendTaskLogs(db: MysqlDatabase, conn: Conn, params: AppendTaskLogsParams): Promise<boolean> {
  const { lease } = params;
  const held = await db.rows(
    conn,
    `SELECT id FROM system_async_task WHERE id = ? AND ${fenceSql('?', '?', '?')}${params.final ? '' : ` AND ${liveLeaseSql('NOW(3)')}`} FOR UPDATE`,
    [lease.taskId, lease.workerId, lease.attempt, lease.token],
  );
  if (held.length === 0) return false;
  const batch = boundLogBatch(params.lines, params.bufferDropped, params.maxLinesPerAttempt);
  if (batch.lines.length === 0 && batch.bufferDropped === 0) return true;
  const stats = (
    await db.rows(
      conn,
      `SELECT attempt, SUM(CASE WHEN dropped = 0 THEN 1 ELSE 0 END) AS \`lines\`, MAX(seq) AS max_seq FROM system_async_task_log WHERE task_id = ? GROUP BY attempt`,
      [lease.taskId],
    )
  ).map((row): LogAttemptStats => ({ attempt: Number(row.attempt), lines: Number(row.lines), maxSeq: Number(row.max_seq) }));
  const plan = planLogAppend(stats, lease.attempt, batch.lines.length, batch.bufferDropped, params);
  const insert = 'INSERT INTO system_async_task_log (task_id, seq, attempt, level, message, fields_json, dropped, logged_at) VALUES ?';
  if (batch.lines.length > 0) {
    await db.exec(conn, insert, [
      batch.lines.map((line, i) => [lease.taskId, plan.seqs[i], lease.attempt, line.level, line.message, line.fieldsJson, 0, sqlTime(line.loggedAt)]),
    ]);
  }
  for (const drop of plan.drops) {
    let through = drop.phantomThroughSeq;
    if (drop.oldest > 0) {
      const [last] = await db.rows(
        conn,
        'SELECT seq FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped = 0 ORDER BY seq LIMIT 1 OFFSET ?',
        [lease.taskId, drop.attempt, drop.oldest - 1],
      );
      if (last) {
        through = Math.max(through, Number(last.seq));
        await db.exec(conn, 'DELETE FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped = 0 AND seq <= ?', [
          lease.taskId,
          drop.attempt,
          Number(last.seq),
        ]);
      }
    }
    const [marker] = await db.rows(conn, 'SELECT seq, dropped FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped > 0 FOR UPDATE', [
      lease.taskId,
      drop.attempt,
    ]);
    const dropped = Number(marker?.dropped ?? 0) + drop.oldest + drop.phantom;
    through = Math.max(through, Number(marker?.seq ?? 0));
    if (marker) await db.exec(conn, 'DELETE FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped > 0', [lease.taskId, drop.attempt]);
    await db.exec(conn, insert, [
      [
        [
          lease.taskId,
          through,
          drop.attempt,
          LOG_MARKER_LEVEL,
          logMarkerMessage(drop.attempt, dropped),
          logMarkerFieldsJson(dropped),
          dropped,
          sqlTime(new Date()),
        ],
      ],
    ]);
  }
  return true;
}

export async function listTaskLogs(
  db: MysqlDatabase,
  conn: Conn,
  params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number },
): Promise<TaskLogRecord[]> {
  const attempt = params.attempt == null ? '' : ' AND attempt = ?';
  const after = params.afterSeq == null ? '' : ' AND seq > ?';
  const values = [params.taskId, ...(params.attempt == null ? [] : [params.attempt]), ...(params.afterSeq == null ? [] : [params.afterSeq])];
  const rows = await db.rows(conn, `SELECT * FROM system_async_task_log WHERE task_id = ?${attempt}${after} ORDER BY ${LOG_ORDER_SQL} LIMIT ?`, [
    ...values,
    params.limit,
  ]);
  return rows.map((row) => logFromRow(row, decode));
}
