/**
 * Bulk submit: multi-row INSERTs in one transaction (all or nothing), then
 * one read back. A duplicate idempotency key makes the row a no-op
 * (ON DUPLICATE KEY UPDATE id = id — not INSERT IGNORE, which would also
 * swallow truncation and other errors) and the existing row comes back.
 * Tasks without an idempotency key or a unique option cannot conflict: their
 * INSERT has no ON DUPLICATE clause (a taken id is an error) and the rows are
 * answered from what was sent and the database's clock, without a read back.
 */
import { PayloadTooLargeError, ValidationError } from '../../core/errors.js';
import { initialStatus } from '../rules/flows.js';
import type { NewTask, Task } from '../../core/task.js';
import { newTaskRow, taskFromRow, type Row } from '../rows.js';
import type { InsertTaskResult, PayloadLimit } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { decode, sqlTime, validateNewTask } from './encode.js';
import { insertUnique } from './unique.js';
import { insertSequenced } from './sequences.js';

/** Bytes of payload per INSERT statement: well under the 16 MiB max_allowed_packet MariaDB ships with. */
const MAX_STATEMENT_BYTES = 4 * 1024 * 1024;
const MAX_STATEMENT_ROWS = 1000;
/** Room in an INSERT for all but its payloads: the statement's text and a row's other columns. */
const STATEMENT_ROOM_BYTES = 4096;

const COLUMNS = `id, task_type, status, priority, payload_json, available_at, deadline_at, attempt_count, attempt_base,
  max_attempts, owner, idempotency_key, trace_id, trace_parent, create_time, update_time, unique_key, unique_states, flow_id, pending_parents,
  sequence_key, sequence_seq, rate_key`;

export async function insertTasks(db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[]): Promise<InsertTaskResult[]> {
  if (tasks.length === 0) return [];
  tasks.forEach(validateNewTask);
  // Sequenced tasks are numbered under their keys' locks first (sequences.ts), then come back here numbered.
  if (tasks.some((t) => t.sequenceKey && t.sequenceSeq == null)) return insertSequenced(db, conn, tasks, (numbered) => insertTasks(db, conn, numbered));
  // A statement over max_allowed_packet makes the server drop the connection: refuse the payload before sending it.
  const limit = await payloadLimit(db, conn);
  for (const task of tasks) checkFits(task, limit);
  const [nowRow] = await db.rows(conn, 'SELECT NOW(3) AS now');
  const now = String(nowRow!.now);
  if (tasks.some((task) => task.unique)) return insertWithUnique(db, conn, tasks, now);
  if (tasks.some((task) => task.idempotencyKey !== null)) {
    await insertRows(db, conn, tasks, now);
    return readBack(db, conn, tasks);
  }
  await insertRows(db, conn, tasks, now, null, false);
  const createdAt = decode.time(now);
  return tasks.map((task) => ({ task: newTaskRow(task, availableAtOf(task, now), createdAt), created: true }));
}

/** The available_at a new row gets: the given time, or the database clock plus the delay. */
function availableAtOf(task: NewTask, now: string): Date {
  return task.availableAt ?? new Date(decode.time(now).getTime() + Math.max(0, Math.round(task.delayMs)));
}

/** Tasks with a `unique` option one by one (unique.ts), in input order; the others as one batch. */
async function insertWithUnique(db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[], now: string): Promise<InsertTaskResult[]> {
  const plainTasks = tasks.filter((task) => !task.unique);
  if (plainTasks.length > 0) await insertRows(db, conn, plainTasks, now);
  const plain = plainTasks.length > 0 ? await readBack(db, conn, plainTasks) : [];
  const results: InsertTaskResult[] = [];
  for (const task of tasks) results.push(task.unique ? await insertUnique(db, conn, task, task.unique, now, insertRows) : plain.shift()!);
  return results;
}

/**
 * `keyed`: a duplicate key (idempotency or unique hold) makes its row a no-op, and the caller reads back which rows are
 * its own; otherwise any duplicate is an error.
 */
async function insertRows(db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[], now: string, uniqueKey: string | null = null, keyed = true): Promise<void> {
  const limit = await payloadLimit(db, conn);
  for (const chunk of chunks(tasks, Math.min(MAX_STATEMENT_BYTES, limit.bytes))) {
    const rows = chunk.map((task) => [
      task.id,
      task.taskType,
      initialStatus(task),
      task.priority,
      task.payloadJson,
      sqlTime(availableAtOf(task, now)),
      task.deadlineAt ? sqlTime(task.deadlineAt) : null,
      0,
      0,
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
    ]);
    await db.exec(conn, `INSERT INTO system_async_task (${COLUMNS}) VALUES ?${keyed ? ' ON DUPLICATE KEY UPDATE id = id' : ''}`, [rows]);
  }
}

async function readBack(db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[]): Promise<InsertTaskResult[]> {
  const byId = new Map<string, Task>();
  for (let start = 0; start < tasks.length; start += MAX_STATEMENT_ROWS) {
    const ids = tasks.slice(start, start + MAX_STATEMENT_ROWS).map((task) => task.id);
    for (const row of await db.rows(conn, 'SELECT * FROM system_async_task WHERE id IN (?)', [ids])) {
      const task = taskFromRow(row, decode);
      byId.set(task.id, task);
    }
  }
  // A row is ours when its id is ours and it carries our key (an id seen before would carry another task's data).
  const isOurs = (task: NewTask, row: Task | undefined): row is Task =>
    row !== undefined && row.taskType === task.taskType && row.owner === task.owner && row.idempotencyKey === task.idempotencyKey;
  const missing = tasks.filter((task) => !isOurs(task, byId.get(task.id)) && task.idempotencyKey !== null);
  const byKey = new Map<string, Task>();
  for (let start = 0; start < missing.length; start += MAX_STATEMENT_ROWS) {
    const keys = missing.slice(start, start + MAX_STATEMENT_ROWS).map((task) => [task.taskType, task.owner ?? '', task.idempotencyKey]);
    const rows: Row[] = await db.rows(conn, 'SELECT * FROM system_async_task WHERE (task_type, owner_key, idempotency_key) IN (?)', [keys]);
    for (const row of rows) {
      const task = taskFromRow(row, decode);
      byKey.set(keyOf(task.taskType, task.owner, task.idempotencyKey), task);
    }
  }
  const seen = new Set<string>();
  return tasks.map((task) => {
    const own = byId.get(task.id);
    // The first of several same-key tasks in one batch is created; the others get its row.
    if (isOurs(task, own) && !seen.has(task.id)) {
      seen.add(task.id);
      return { task: own, created: true };
    }
    const existing = task.idempotencyKey === null ? undefined : byKey.get(keyOf(task.taskType, task.owner, task.idempotencyKey));
    if (existing) return { task: existing, created: false };
    if (own) return { task: own, created: false };
    throw new ValidationError(`task ${task.id} was not inserted: its id is taken by another task`, 'id');
  });
}

function keyOf(taskType: string, owner: string | null, key: string | null): string {
  return JSON.stringify([taskType, owner ?? '', key]);
}

/** The largest payload one INSERT can carry: the server's max_allowed_packet less room for the rest of the statement. */
export async function payloadLimit(db: MysqlDatabase, conn: Conn): Promise<PayloadLimit> {
  const maxPacket = await db.maxPacketBytes(conn);
  return {
    bytes: maxPacket - STATEMENT_ROOM_BYTES,
    source: `max_allowed_packet of MySQL at ${db.serverName} is ${maxPacket} bytes: raise it on the server or submit a smaller payload`,
  };
}

function checkFits(task: NewTask, limit: PayloadLimit): void {
  // Cheap first: a payload whose worst case fits needs no count.
  if (task.payloadJson.length * 3 <= limit.bytes) return;
  if (escapedBytes(task.payloadJson) > limit.bytes) throw new PayloadTooLargeError(Buffer.byteLength(task.payloadJson), limit.bytes, limit.source);
}

/** Bytes of `text` inside a statement: UTF-8, plus the backslash mysql2 puts before each quote, backslash and control character it escapes. */
function escapedBytes(text: string): number {
  let escapes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x27 || c === 0x5c || c === 0 || c === 8 || c === 9 || c === 10 || c === 13 || c === 26) escapes += 1;
  }
  return Buffer.byteLength(text) + escapes;
}

function* chunks(tasks: readonly NewTask[], maxBytes: number): Generator<NewTask[]> {
  let current: NewTask[] = [];
  let bytes = 0;
  for (const task of tasks) {
    const size = task.payloadJson.length * 3 + 512;
    if (current.length > 0 && (current.length >= MAX_STATEMENT_ROWS || bytes + size > maxBytes)) {
      yield current;
      current = [];
      bytes = 0;
    }
    current.push(task);
    bytes += size;
  }
  if (current.length > 0) yield current;
}
