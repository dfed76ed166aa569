/**
 * Bulk submit on SQLite, inside the caller's BEGIN IMMEDIATE: a task whose
 * idempotency key exists already answers with the existing row. One clock
 * reading per batch: a delayed task becomes available exactly delayMs after
 * its create_time.
 */
import type { NewTask } from '../../core/task.js';
import { taskFromRow, type Row } from '../rows.js';
import { initialStatus } from '../rules/index.js';
import type { InsertTaskResult } from '../types.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite, toSqliteTime } from './encode.js';
import { storedUniqueKey } from '../rules/unique.js';
import { uniqueHolder } from './unique.js';
import { insertSequenced } from './sequences.js';

export function insertTasks(db: Db, tasks: readonly NewTask[], nowMs: number): InsertTaskResult[] {
  const now = toSqliteTime(nowMs);
  // Sequenced tasks are numbered under their keys first (sequences.ts), then come back here numbered.
  if (tasks.some((t) => t.sequenceKey && t.sequenceSeq == null)) return insertSequenced(db, tasks, now, (numbered) => insertTasks(db, numbered, nowMs));
  const findExisting = statement(db, `SELECT * FROM system_async_task WHERE task_type = ? AND COALESCE(owner, '') = COALESCE(?, '') AND idempotency_key = ?`);
  const insert = statement(
    db,
    `INSERT INTO system_async_task (id, task_type, status, priority, payload_json, available_at, deadline_at,
       attempt_count, attempt_base, max_attempts, owner, idempotency_key, trace_id, trace_parent, create_time, update_time, unique_key, unique_states,
       flow_id, pending_parents, sequence_key, sequence_seq, rate_key)
     VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  );
  return tasks.map((task): InsertTaskResult => {
    if (task.idempotencyKey !== null) {
      const existing = findExisting.get(task.taskType, task.owner, task.idempotencyKey) as Row | undefined;
      if (existing) return { task: taskFromRow(existing, decodeSqlite), created: false };
    }
    const uniqueKey = task.unique ? storedUniqueKey(task.unique, nowMs) : null;
    const holder = task.unique && uniqueKey !== null ? uniqueHolder(db, task, task.unique, uniqueKey, nowMs) : undefined;
    if (holder) return { task: taskFromRow(holder, decodeSqlite), created: false };
    const availableAt = task.availableAt ? toSqliteTime(task.availableAt.getTime()) : toSqliteTime(nowMs + task.delayMs);
    const row = insert.get(
      task.id,
      task.taskType,
      initialStatus(task),
      task.priority,
      task.payloadJson,
      availableAt,
      task.deadlineAt ? toSqliteTime(task.deadlineAt.getTime()) : null,
      task.maxAttempts,
      task.owner,
      task.idempotencyKey,
      task.traceId,
      task.traceParent ?? null,
      now,
      now,
      uniqueKey,
      task.unique?.states ?? null,
      task.flowId ?? null,
      task.pendingParents ?? null,
      task.sequenceKey ?? null,
      task.sequenceSeq ?? null,
      task.rateKey ?? null,
    ) as Row;
    return { task: taskFromRow(row, decodeSqlite), created: true };
  });
}
