/**
 * A submit with a `unique` option (rules/unique.ts), inside the submit's
 * BEGIN IMMEDIATE: writers take turns, so looking for the task holding the
 * key and then inserting cannot race; the unique index still refuses a
 * second holder, should anything ever write around this path.
 */
import type { NewTask, UniqueSpec } from '../../core/task.js';
import type { Row } from '../rows.js';
import { debouncedStart, UNIQUE_HOLD_SQL } from '../rules/unique.js';
import { statement, type Db } from './connection.js';
import { toSqliteTime } from './encode.js';

/** The task holding `key` (debounce: after replacing its payload and start), if one does. */
export function uniqueHolder(db: Db, task: NewTask, spec: UniqueSpec, key: string, nowMs: number): Row | undefined {
  if (spec.debounceMs === null) {
    return statement(db, `SELECT * FROM system_async_task WHERE unique_key IS NOT NULL AND (${UNIQUE_HOLD_SQL}) = ?`).get(key) as Row | undefined;
  }
  const now = toSqliteTime(nowMs);
  return statement(
    db,
    `UPDATE system_async_task SET payload_json = ?, available_at = ?, update_time = ?
     WHERE unique_key IS NOT NULL AND (${UNIQUE_HOLD_SQL}) = ? RETURNING *`,
  ).get(task.payloadJson, toSqliteTime(debouncedStart(spec, nowMs).getTime()), now, key) as Row | undefined;
}
