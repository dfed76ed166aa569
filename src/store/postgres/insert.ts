/**
 * Bulk submit: one INSERT … SELECT FROM unnest(arrays) per batch, with
 * ON CONFLICT DO NOTHING on the idempotency index and (`channel` given)
 * one pg_notify naming the created types in the same statement: NOTIFY is
 * transactional, delivered on commit and dropped on rollback, exactly like
 * the rows. A submit made beside others of the same store NOTIFYs after its
 * commit instead (store.ts, ../submit-wakeups.ts): a transaction that
 * NOTIFYs holds one database-wide lock from its commit until its WAL is
 * flushed, so concurrent submits that each NOTIFY commit one at a time.
 *
 * Concurrent identical submits: the second INSERT waits on the first's
 * uncommitted index entry, then does nothing; the follow-up SELECT is a new
 * statement with a new snapshot (READ COMMITTED), so it sees the winner's
 * row. Should the winner roll back instead, the row is missing and we try
 * the insert again.
 */
import { StoreError } from '../../core/errors.js';
import type { NewTask, Task } from '../../core/task.js';
import { newTaskRow, taskFromRow, type Row } from '../rows.js';
import type { InsertTaskResult } from '../types.js';
import { run, sql, type PgContext, type Queryable, statementName } from './connection.js';
import { checkNewTask, decodePostgres, storableJson } from './encode.js';
import { MAX_NOTIFY_BYTES, WAKE_ALL_PAYLOAD } from './wakeups.js';
import { STATUS_SQL } from '../rules/index.js';
import { atomically, insertUnique } from './unique.js';
import { insertSequenced } from './sequences.js';

const MAX_ROUNDS = 3;

/** `channel`: the NOTIFY channel, to notify within the statement; null: the caller wakes the workers after the commit. */
export async function insertTasks(ctx: PgContext, tasks: readonly NewTask[], on: Queryable, channel: string | null): Promise<InsertTaskResult[]> {
  tasks.forEach(checkNewTask);
  // Sequenced tasks are numbered under their keys' locks first (sequences.ts), then come back here numbered.
  if (tasks.some((t) => t.sequenceKey && t.sequenceSeq == null)) {
    return insertSequenced(ctx, tasks, on, (numbered, client) => insertTasks(ctx, numbered, client, channel));
  }
  if (tasks.some((t) => t.unique)) return atomically(on, tasks.length, (client) => insertWithUnique(ctx, tasks, client, channel));
  return insertPlain(ctx, tasks, on, channel);
}

/** Tasks with a `unique` option one by one (unique.ts), in input order; the others in one batch. */
async function insertWithUnique(ctx: PgContext, tasks: readonly NewTask[], on: Queryable, channel: string | null): Promise<InsertTaskResult[]> {
  const plain = await insertPlain(
    ctx,
    tasks.filter((t) => !t.unique),
    on,
    channel,
  );
  // One task with its stored unique key; undefined when another task holds the key.
  const insertUniqueRow = async (c: PgContext, client: Queryable, task: NewTask, uniqueKey: string): Promise<Task | undefined> =>
    (await insertBatch(c, client, [task], channel, { key: uniqueKey, states: task.unique!.states })).get(task.id);
  const results: InsertTaskResult[] = [];
  for (const task of tasks) {
    results.push(task.unique ? await insertUnique(ctx, on, task, task.unique, insertUniqueRow) : plain.shift()!);
  }
  return results;
}

async function insertPlain(ctx: PgContext, tasks: readonly NewTask[], on: Queryable, channel: string | null): Promise<InsertTaskResult[]> {
  if (tasks.length === 0) return [];
  const results = new Array<InsertTaskResult | undefined>(tasks.length);
  let pending = tasks.map((task, index) => ({ task, index }));
  for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round += 1) {
    const created = await insertBatch(
      ctx,
      on,
      pending.map((p) => p.task),
      channel,
    );
    const missing = pending.filter((p) => {
      const row = created.get(p.task.id);
      if (row) results[p.index] = { task: row, created: true };
      return !row;
    });
    if (missing.length === 0) break;
    const existing = await findByIdempotencyKey(
      ctx,
      on,
      missing.map((p) => p.task),
    );
    pending = missing.filter((p) => {
      const row = existing.get(keyOf(p.task));
      if (row) results[p.index] = { task: row, created: false };
      return !row;
    });
  }
  if (results.some((r) => r === undefined)) {
    throw new StoreError('insertTasks: a conflicting idempotent submit kept appearing and disappearing (rolled back); try again');
  }
  return results as InsertTaskResult[];
}

async function insertBatch(
  ctx: PgContext,
  on: Queryable,
  tasks: readonly NewTask[],
  channel: string | null,
  unique?: { key: string; states: number },
): Promise<Map<string, Task>> {
  const columns: unknown[][] = [[], [], [], [], [], [], [], [], [], [], [], []];
  // Flow and sequence columns only when the batch has a flow node or a sequenced task: a plain submit's statement is unchanged.
  const flow = tasks.some((t) => t.flowId || t.pendingParents || t.sequenceKey);
  for (const t of tasks) {
    const values = [
      t.id,
      t.taskType,
      storableJson(t.payloadJson),
      t.priority,
      t.delayMs,
      t.availableAt,
      t.deadlineAt,
      t.maxAttempts,
      t.owner,
      t.idempotencyKey,
      t.traceId,
      t.traceParent ?? null,
    ];
    values.forEach((value, i) => columns[i]!.push(value));
  }
  // A flow's columns come after every other parameter ($14–17, or $16–19 after a unique key's).
  const flowValues = flow
    ? [
        tasks.map((t) => t.flowId ?? null),
        tasks.map((t) => t.pendingParents ?? null),
        tasks.map((t) => t.sequenceKey ?? null),
        tasks.map((t) => t.sequenceSeq ?? null),
      ]
    : [];
  // Rate keys likewise only when the batch has one, after the flow's.
  const rated = tasks.some((t) => t.rateKey);
  if (rated) flowValues.push(tasks.map((t) => t.rateKey ?? null));
  const suffix = `${flow ? '_flow' : ''}${rated ? '_rate' : ''}`;
  if (!unique && !tasks.some((t) => t.idempotencyKey !== null)) {
    // Without idempotency keys nothing can conflict: every row is inserted, so a plain INSERT (no
    // speculative insertion per row) and one answer row, the statement's clock, instead of one per task.
    const name = `insert_unkeyed${suffix}`;
    const text = sql(ctx, name, (c) => insertSql(c, false, false, flow, rated));
    const result = await run<Row>(on, 'inserting tasks', text, [...columns, channel, ...flowValues], statementName(ctx, name));
    const createdAt = decodePostgres.time(result.rows[0]!.create_time);
    const created = createdAt.getTime();
    return new Map(tasks.map((t) => [t.id, newTaskRow(t, t.availableAt ?? new Date(created + t.delayMs), createdAt)]));
  }
  const name = `${unique ? 'insert_unique' : 'insert'}${suffix}`;
  const text = sql(ctx, name, (c) => insertSql(c, true, !!unique, flow, rated));
  const values = unique ? [...columns, channel, unique.key, unique.states, ...flowValues] : [...columns, channel, ...flowValues];
  const result = await run<Row>(on, 'inserting tasks', text, values, statementName(ctx, name));
  // Only the database's own values come back (its clock); the rest of each new row is what we sent.
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return new Map(
    result.rows.map((row) => {
      const input = byId.get(String(row.id))!;
      return [input.id, newTaskRow(input, decodePostgres.time(row.available_at), decodePostgres.time(row.create_time), unique)];
    }),
  );
}

/**
 * `unique`: one row carrying $14 unique_key and $15 unique_states; any unique index may refuse it. `flow`: four more
 * arrays, flow_id, pending_parents (rules/flows.ts: a task with parents pending starts BLOCKED), sequence_key and
 * sequence_seq (rules/sequences.ts). `rated`: one more array after those, rate_key.
 */
function insertSql(ctx: PgContext, keyed = true, unique = false, flow = false, rated = false): string {
  const { task } = ctx.tables;
  const f = unique ? 16 : 14;
  const r = f + (flow ? 4 : 0);
  const flowInput = `${flow ? `, $${f}::uuid[], $${f + 1}::integer[], $${f + 2}::text[], $${f + 3}::bigint[]` : ''}${rated ? `, $${r}::text[]` : ''}`;
  const flowNames = `${flow ? ', flow_id, pending_parents, sequence_key, sequence_seq' : ''}${rated ? ', rate_key' : ''}`;
  const status = flow ? `CASE WHEN COALESCE(pending_parents, 0) > 0 THEN ${STATUS_SQL.BLOCKED} ELSE ${STATUS_SQL.QUEUED} END` : STATUS_SQL.QUEUED;
  const conflict = unique
    ? 'ON CONFLICT DO NOTHING'
    : keyed
      ? "ON CONFLICT (task_type, COALESCE(owner, ''), idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
      : '';
  return `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::integer[], $5::double precision[], $6::timestamptz[],
                       $7::timestamptz[], $8::integer[], $9::text[], $10::text[], $11::text[], $12::text[]${flowInput})
    WITH ORDINALITY AS u(id, task_type, payload_json, priority, delay_ms, available_at, deadline_at, max_attempts,
                         owner, idempotency_key, trace_id, trace_parent${flowNames}, ord)
),
inserted AS (
  INSERT INTO ${task} (id, task_type, status, priority, payload_json, available_at, deadline_at, attempt_count, attempt_base,
                       max_attempts, owner, idempotency_key, trace_id, trace_parent, create_time, update_time${unique ? ', unique_key, unique_states' : ''}${flowNames})
  SELECT id, task_type, ${status}, priority, payload_json, COALESCE(available_at, now() + delay_ms * interval '1 millisecond'),
         deadline_at, 0, 0, max_attempts, owner, idempotency_key, trace_id, trace_parent, now(), now()${unique ? ', $14::text, $15::integer' : ''}${flowNames}
  FROM input ORDER BY ord
  ${conflict}
  RETURNING ${keyed ? 'id, task_type, available_at, create_time' : 'task_type'}
),
notified AS (
  SELECT pg_notify($13, CASE WHEN octet_length(payload) > ${MAX_NOTIFY_BYTES} THEN '${WAKE_ALL_PAYLOAD}' ELSE payload END)
  FROM (SELECT json_build_object('k', 's', 't', array_agg(DISTINCT task_type))::text AS payload FROM inserted HAVING count(*) > 0) AS created
  WHERE $13::text IS NOT NULL
)
${
  keyed
    ? // Joining the one-row aggregate makes the NOTIFY run whenever a row was inserted.
      'SELECT inserted.*, note.n AS notified FROM inserted LEFT JOIN (SELECT count(*) AS n FROM notified) AS note ON true'
    : // now() is the create_time of every row.
      'SELECT now() AS create_time, (SELECT count(*) FROM notified) AS notified'
}`;
}

async function findByIdempotencyKey(ctx: PgContext, on: Queryable, tasks: readonly NewTask[]): Promise<Map<string, Task>> {
  const keyed = tasks.filter((t) => t.idempotencyKey !== null);
  if (keyed.length === 0) return new Map();
  const result = await run<Row>(
    on,
    'reading existing idempotent tasks',
    `SELECT t.* FROM unnest($1::text[], $2::text[], $3::text[]) AS u(task_type, owner, idempotency_key)
     JOIN ${ctx.tables.task} t ON t.task_type = u.task_type AND COALESCE(t.owner, '') = COALESCE(u.owner, '')
       AND t.idempotency_key = u.idempotency_key`,
    [keyed.map((t) => t.taskType), keyed.map((t) => t.owner), keyed.map((t) => t.idempotencyKey)],
  );
  const found = new Map<string, Task>();
  for (const row of result.rows) {
    const existing = taskFromRow(row, decodePostgres);
    found.set(keyOf(existing), existing);
  }
  return found;
}

function keyOf(task: Pick<NewTask, 'taskType' | 'owner' | 'idempotencyKey'>): string {
  return JSON.stringify([task.taskType, task.owner ?? '', task.idempotencyKey]);
}
