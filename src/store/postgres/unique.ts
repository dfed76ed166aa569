/**
 * A submit with a `unique` option (rules/unique.ts). The unique index decides
 * between concurrent submitters: each round first looks for the task holding
 * the key (debounce: updates it, which re-checks the hold on the newest row
 * version, so a task claimed meanwhile no longer matches), then inserts with
 * ON CONFLICT DO NOTHING. An insert that lost to a concurrent one waited for
 * it to commit, so the next round's statement (a new snapshot) finds it.
 */
import pg from 'pg';
import { StoreError } from '../../core/errors.js';
import type { NewTask, Task, UniqueSpec } from '../../core/task.js';
import { taskFromRow, type Row } from '../rows.js';
import { debouncedStart, storedUniqueKey, UNIQUE_HOLD_SQL } from '../rules/unique.js';
import type { InsertTaskResult } from '../types.js';
import { beginOn, run, sql, withClient, type PgContext, type Queryable } from './connection.js';
import { decodePostgres, storableJson } from './encode.js';

const MAX_ROUNDS = 5;

type InsertRow = (ctx: PgContext, on: Queryable, task: NewTask, uniqueKey: string) => Promise<Task | undefined>;

export async function insertUnique(ctx: PgContext, on: Queryable, task: NewTask, spec: UniqueSpec, insert: InsertRow): Promise<InsertTaskResult> {
  const clock = await run<{ now: Date }>(on, 'reading the clock', 'SELECT now() AS now');
  const nowMs = decodePostgres.time(clock.rows[0]!.now).getTime();
  const key = storedUniqueKey(spec, nowMs);
  for (let round = 0; round < MAX_ROUNDS; round += 1) {
    const held = spec.debounceMs === null ? await findHolder(ctx, on, key) : await debounceHolder(ctx, on, key, task, debouncedStart(spec, nowMs));
    if (held) return { task: held, created: false };
    const created = await insert(ctx, on, task, key);
    if (created) return { task: created, created: true };
  }
  throw new StoreError('insertTasks: the task holding a unique key kept appearing and disappearing (rolled back or finished); try again');
}

async function findHolder(ctx: PgContext, on: Queryable, key: string): Promise<Task | undefined> {
  const text = sql(ctx, 'unique_holder', (c) => `SELECT * FROM ${c.tables.task} WHERE unique_key IS NOT NULL AND (${UNIQUE_HOLD_SQL}) = $1`);
  const result = await run<Row>(on, 'reading the task holding a unique key', text, [key]);
  return result.rows[0] ? taskFromRow(result.rows[0], decodePostgres) : undefined;
}

async function debounceHolder(ctx: PgContext, on: Queryable, key: string, task: NewTask, availableAt: Date): Promise<Task | undefined> {
  const text = sql(
    ctx,
    'unique_debounce',
    (c) => `UPDATE ${c.tables.task} SET payload_json = $2, available_at = $3, update_time = now()
    WHERE unique_key IS NOT NULL AND (${UNIQUE_HOLD_SQL}) = $1 RETURNING *`,
  );
  const result = await run<Row>(on, 'debouncing a unique task', text, [key, storableJson(task.payloadJson), availableAt]);
  return result.rows[0] ? taskFromRow(result.rows[0], decodePostgres) : undefined;
}

/**
 * A batch holding unique tasks takes several statements; on the pool they run
 * in one transaction of their own, so that the batch stays all or nothing (a
 * caller's transaction, or a single task, needs none).
 */
export async function atomically<T>(on: Queryable, count: number, body: (on: Queryable) => Promise<T>): Promise<T> {
  if (count < 2) return body(on);
  return inTransaction(on, body);
}

/** `body` in one transaction: its own on a client of the pool, or the caller's (`on` a client inside BEGIN). */
export async function inTransaction<T>(on: Queryable, body: (on: Queryable) => Promise<T>): Promise<T> {
  if (!(on instanceof pg.Pool)) return body(on);
  return withClient(on, 'connecting to submit', async (client, markBroken) => {
    try {
      await run(client, 'submitting tasks', beginOn(on));
      const result = await body(client);
      await run(client, 'submitting tasks', 'COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(markBroken);
      throw error;
    }
  });
}
