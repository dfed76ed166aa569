/**
 * Per-task logs on SQLite (rules/logs.ts): a batch of lines written fenced by its lease inside the caller's
 * BEGIN IMMEDIATE (the write lock keeps the fence true until the batch and its bounds are applied); the listing.
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
import { statement, type Db } from './connection.js';
import { decodeSqlite, toSqliteTime } from './encode.js';

type Row = Record<string, unknown>;

export function appendTaskLogs(db: Db, params: AppendTaskLogsParams, now: string): boolean {
  const { lease } = params;
  const live = params.final ? '' : ` AND ${liveLeaseSql('?')}`;
  const held = statement(db, `SELECT id FROM system_async_task WHERE id = ? AND ${fenceSql('?', '?', '?')}${live}`).get(
    lease.taskId,
    lease.workerId,
    lease.attempt,
    lease.token,
    ...(params.final ? [] : [now]),
  );
  if (!held) return false;
  const batch = boundLogBatch(params.lines, params.bufferDropped, params.maxLinesPerAttempt);
  if (batch.lines.length === 0 && batch.bufferDropped === 0) return true;
  const stats = (
    statement(
      db,
      `SELECT attempt, SUM(CASE WHEN dropped = 0 THEN 1 ELSE 0 END) AS lines, MAX(seq) AS max_seq
       FROM system_async_task_log WHERE task_id = ? GROUP BY attempt`,
    ).all(lease.taskId) as Row[]
  ).map((row): LogAttemptStats => ({ attempt: Number(row.attempt), lines: Number(row.lines), maxSeq: Number(row.max_seq) }));
  const plan = planLogAppend(stats, lease.attempt, batch.lines.length, batch.bufferDropped, params);
  const insert = statement(
    db,
    `INSERT INTO system_async_task_log (task_id, seq, attempt, level, message, fields_json, dropped, logged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  batch.lines.forEach((line, i) =>
    insert.run(lease.taskId, plan.seqs[i], lease.attempt, line.level, line.message, line.fieldsJson, 0, toSqliteTime(line.loggedAt.getTime())),
  );
  for (const drop of plan.drops) {
    let through = drop.phantomThroughSeq;
    if (drop.oldest > 0) {
      const last = statement(db, 'SELECT seq FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped = 0 ORDER BY seq LIMIT 1 OFFSET ?').get(
        lease.taskId,
        drop.attempt,
        drop.oldest - 1,
      ) as Row | undefined;
      if (last) {
        through = Math.max(through, Number(last.seq));
        statement(db, 'DELETE FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped = 0 AND seq <= ?').run(
          lease.taskId,
          drop.attempt,
          Number(last.seq),
        );
      }
    }
    const marker = statement(db, 'SELECT seq, dropped FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped > 0').get(
      lease.taskId,
      drop.attempt,
    ) as Row | undefined;
    const dropped = Number(marker?.dropped ?? 0) + drop.oldest + drop.phantom;
    through = Math.max(through, Number(marker?.seq ?? 0));
    if (marker) statement(db, 'DELETE FROM system_async_task_log WHERE task_id = ? AND attempt = ? AND dropped > 0').run(lease.taskId, drop.attempt);
    insert.run(lease.taskId, through, drop.attempt, LOG_MARKER_LEVEL, logMarkerMessage(drop.attempt, dropped), logMarkerFieldsJson(dropped), dropped, now);
  }
  return true;
}

export function listTaskLogs(db: Db, params: { taskId: string; attempt?: number | null; afterSeq?: number | null; limit: number }): TaskLogRecord[] {
  const attempt = params.attempt == null ? '' : ' AND attempt = ?';
  const after = params.afterSeq == null ? '' : ' AND seq > ?';
  const values: unknown[] = [params.taskId];
  if (params.attempt != null) values.push(params.attempt);
  if (params.afterSeq != null) values.push(params.afterSeq);
  const rows = statement(db, `SELECT * FROM system_async_task_log WHERE task_id = ?${attempt}${after} ORDER BY ${LOG_ORDER_SQL} LIMIT ?`).all(
    ...values,
    params.limit,
  ) as Row[];
  return rows.map((row) => logFromRow(row, decodeSqlite));
}
