/**
 * A submit with a `unique` option (rules/unique.ts), inside the submit's READ
 * COMMITTED transaction. The unique index on unique_hold decides between
 * concurrent submitters: an insert that meets another's uncommitted holder
 * waits for it, then does nothing (ON DUPLICATE KEY UPDATE id = id), and the
 * next round's read sees the committed holder. Debounce locks the holder
 * first, so a claim cannot start it between the read and the update.
 */
import { StoreError } from '../../core/errors.js';
import type { NewTask, Task, UniqueSpec } from '../../core/task.js';
import { taskFromRow, type Row } from '../rows.js';
import { debouncedStart, storedUniqueKey } from '../rules/unique.js';
import type { InsertTaskResult } from '../types.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { decode, sqlTime } from './encode.js';

const MAX_ROUNDS = 5;

type InsertRows = (db: MysqlDatabase, conn: Conn, tasks: readonly NewTask[], now: string, uniqueKey: string) => Promise<void>;

export async function insertUnique(db: MysqlDatabase, conn: Conn, task: NewTask, spec: UniqueSpec, now: string, insert: InsertRows): Promise<InsertTaskResult> {
  const nowMs = decode.time(now).getTime();
  const key = storedUniqueKey(spec, nowMs);
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const held =
      spec.debounceMs === null ? await findHolder(db, conn, key) : await debounceHolder(db, conn, key, task, sqlTime(debouncedStart(spec, nowMs)), now);
    if (held) return { task: held, created: false };
    await insert(db, conn, [task], now, key);
    const [own] = await db.rows(conn, 'SELECT * FROM system_async_task WHERE id = ? AND unique_key = ?', [task.id, key]);
    if (own) return { task: taskFromRow(own, decode), created: true };
  }
  throw new StoreError('insertTasks: the task holding a unique key kept appearing and disappearing (rolled back or finished); try again');
}

async function findHolder(db: MysqlDatabase, conn: Conn, key: string): Promise<Task | undefined> {
  const [row] = await db.rows(conn, 'SELECT * FROM system_async_task WHERE unique_hold = ?', [key]);
  return row ? taskFromRow(row, decode) : undefined;
}

async function debounceHolder(db: MysqlDatabase, conn: Conn, key: string, task: NewTask, availableAt: string, now: string): Promise<Task | undefined> {
  const [locked] = await db.rows(conn, 'SELECT id FROM system_async_task WHERE unique_hold = ? FOR UPDATE', [key]);
  if (!locked) return undefined;
  const id = String((locked as Row).id);
  await db.exec(conn, 'UPDATE system_async_task SET payload_json = ?, available_at = ?, update_time = ? WHERE id = ?', [
    task.payloadJson,
    availableAt,
    now,
    id,
  ]);
  const [row] = await db.rows(conn, 'SELECT * FROM system_async_task WHERE id = ?', [id]);
  return row ? taskFromRow(row, decode) : undefined;
}
