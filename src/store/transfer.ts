/**
 * Raw rows in and out of every table that holds user state, for `tasklease
 * move` (client/move.ts): pages in a stable key order out of one database,
 * upserts by primary key into another. The row shape is dialect-neutral —
 * the seed's column names (identical in every dialect) with times as Dates,
 * booleans as booleans, integers as numbers — and the tables, their keys and
 * column kinds are written once here; a dialect (its transfer.ts) only says
 * how it quotes, binds, upserts and encodes. Rows travel whole (payloads as
 * the JSON text they were stored as, lease columns, attempt counts, unique
 * keys), never through the Task model, so a copy is the row itself.
 */
import { sideStoreOf } from './side-store.js';
import { TERMINAL_SQL } from './rules/sql.js';
import type { Store } from './types.js';

export type TransferValue = string | number | boolean | Date | null;
export type TransferRow = Record<string, TransferValue>;
/** `num`: a number that may have a fraction (an adaptive limit's threshold and factor). */
export type ColumnKind = 'text' | 'int' | 'num' | 'time' | 'bool';

export interface TransferTable {
  readonly table: string;
  /** The primary key: pages are ordered by it. */
  readonly key: readonly string[];
  readonly columns: Readonly<Record<string, ColumnKind>>;
  /** History tables: the column naming their task (`finishedOnly` pages keep rows of terminal tasks). */
  readonly taskColumn?: string;
  /** An integer key the database numbers itself (PostgreSQL's identity must be moved past imported ids). */
  readonly identity?: boolean;
}

const time = 'time' as const;
const text = 'text' as const;
const int = 'int' as const;
const bool = 'bool' as const;
const num = 'num' as const;

/** Every table a move copies, in the order it copies them; `moves` is the move's own checkpoint. */
export const TRANSFER_TABLES = {
  policies: {
    table: 'system_async_task_policy',
    key: ['policy_key'],
    columns: {
      policy_key: text,
      task_type: text,
      max_concurrency: int,
      max_attempts: int,
      retry_base_delay_ms: int,
      enabled: bool,
      update_time: time,
      rate_limit: int,
      rate_period_ms: int,
    },
  },
  schedules: {
    table: 'system_async_task_schedule',
    key: ['schedule_key'],
    columns: {
      schedule_key: text,
      task_type: text,
      cron: text,
      time_zone: text,
      payload_json: text,
      priority: int,
      max_attempts: int,
      owner: text,
      catch_up: int,
      enabled: int,
      revision: int,
      last_tick_at: time,
      last_task_id: text,
      created_at: time,
      updated_at: time,
    },
  },
  subscriptions: {
    table: 'system_async_task_subscription',
    key: ['event_name', 'task_type'],
    columns: { event_name: text, task_type: text, priority: int, max_attempts: int, created_at: time, updated_at: time },
  },
  adaptive: {
    table: 'system_async_task_adaptive',
    key: ['task_type'],
    columns: {
      task_type: text,
      min_limit: int,
      max_limit: int,
      window_ms: int,
      min_samples: int,
      failure_threshold: num,
      codes_json: text,
      decrease_factor: num,
      increase_step: int,
      cooldown_ms: int,
      enabled: int,
      overridden: int,
      override_until: time,
      current_limit: int,
      changed_at: time,
      updated_at: time,
    },
  },
  limitChanges: {
    table: 'system_async_task_limit_change',
    key: ['id'],
    columns: { id: text, task_type: text, from_limit: int, to_limit: int, cause_kind: text, cause: text, actor: text, actor_name: text, changed_at: time },
  },
  tokens: {
    table: 'system_async_task_api_token',
    key: ['id'],
    columns: { id: text, name: text, role: text, owner: text, token_hash: text, created_at: time, expires_at: time, revoked_at: time, last_used_at: time },
  },
  deadLetters: {
    table: 'system_async_task_dead_letter',
    key: ['id'],
    columns: {
      id: text,
      original_task_id: text,
      task_type: text,
      owner: text,
      payload_json: text,
      error_code: text,
      error_message: text,
      trace_id: text,
      attempt_count: int,
      moved_at: time,
      replayed_at: time,
      replay_task_id: text,
      archived_at: time,
    },
  },
  tasks: {
    table: 'system_async_task',
    key: ['id'],
    taskColumn: 'id',
    columns: {
      id: text,
      task_type: text,
      status: text,
      priority: int,
      payload_json: text,
      available_at: time,
      deadline_at: time,
      lease_owner: text,
      lease_until: time,
      lease_token: text,
      lease_expiries: int,
      attempt_count: int,
      attempt_base: int,
      max_attempts: int,
      artifact_id: text,
      owner: text,
      idempotency_key: text,
      progress_total: int,
      progress_processed: int,
      progress_succeeded: int,
      progress_failed: int,
      progress_skipped: int,
      progress_message: text,
      result_json: text,
      last_error_code: text,
      trace_id: text,
      trace_parent: text,
      unique_key: text,
      unique_states: int,
      flow_id: text,
      pending_parents: int,
      sequence_key: text,
      sequence_seq: int,
      rate_key: text,
      create_time: time,
      update_time: time,
      start_time: time,
      finish_time: time,
    },
  },
  attempts: {
    table: 'system_async_task_attempt',
    key: ['task_id', 'attempt'],
    taskColumn: 'task_id',
    columns: { task_id: text, attempt: int, worker_id: text, started_at: time, finished_at: time, outcome: text, error_code: text },
  },
  failures: {
    table: 'system_async_task_failure',
    key: ['id'],
    taskColumn: 'task_id',
    columns: { id: text, task_id: text, attempt: int, error_code: text, error_message: text, trace_id: text, retryable: bool, failed_at: time },
  },
  actions: {
    table: 'system_async_task_action',
    key: ['id'],
    taskColumn: 'task_id',
    identity: true,
    columns: { id: int, task_id: text, action: text, from_status: text, to_status: text, actor: text, actor_name: text, detail: text, acted_at: time },
  },
  dependencies: {
    table: 'system_async_task_dependency',
    key: ['parent_id', 'child_id'],
    taskColumn: 'child_id',
    columns: { parent_id: text, child_id: text, on_failure: text, fan_out: bool, resolved: text, created_at: time },
  },
  steps: {
    table: 'system_async_task_step',
    key: ['task_id', 'cycle', 'name'],
    taskColumn: 'task_id',
    columns: { task_id: text, cycle: int, name: text, seq: int, result_json: text, attempt: int, worker_id: text, recorded_at: time },
  },
  logs: {
    table: 'system_async_task_log',
    key: ['task_id', 'seq'],
    taskColumn: 'task_id',
    columns: { task_id: text, seq: int, attempt: int, level: text, message: text, fields_json: text, dropped: int, logged_at: time },
  },
  sequences: {
    table: 'system_async_task_sequence',
    key: ['sequence_key'],
    columns: { sequence_key: text, next_seq: int, on_dead_letter: text, skipped_through: int, updated_at: time },
  },
  queueStats: {
    table: 'system_async_task_queue_stat',
    key: ['grain', 'bucket_start', 'task_type', 'process_id'],
    columns: {
      grain: text,
      bucket_start: time,
      task_type: text,
      process_id: text,
      submitted: int,
      started: int,
      succeeded: int,
      failed: int,
      dead_lettered: int,
      wait_b0: int,
      wait_b1: int,
      wait_b2: int,
      wait_b3: int,
      wait_b4: int,
      wait_b5: int,
      wait_ms_sum: int,
      run_b0: int,
      run_b1: int,
      run_b2: int,
      run_b3: int,
      run_b4: int,
      run_b5: int,
      run_ms_sum: int,
    },
  },
  moves: {
    table: 'system_async_task_move',
    key: ['move_key'],
    columns: { move_key: text, source: text, phase: text, detail: text, started_at: time, updated_at: time },
  },
} as const satisfies Record<string, TransferTable>;

export type TransferTableName = keyof typeof TRANSFER_TABLES;

export interface ExportRowsParams {
  table: TransferTableName;
  /** The key of the last row of the previous page (null: from the start). */
  after: readonly TransferValue[] | null;
  limit: number;
  /** Tasks and their history: only terminal tasks' rows (what may be copied while workers still run). */
  finishedOnly?: boolean;
}

export interface CountRowsParams {
  table: TransferTableName;
  finishedOnly?: boolean;
}

export interface TransferPage {
  rows: TransferRow[];
  /** Pass as `after` for the next page; null after the last. */
  next: TransferValue[] | null;
}

export interface TransferStore {
  /** One page of `table` in key order. */
  exportRows(params: ExportRowsParams): Promise<TransferPage>;
  /** Inserts the rows, or overwrites the row of the same key (every column): a re-run never duplicates. Returns how many. */
  importRows(params: { table: TransferTableName; rows: readonly TransferRow[] }): Promise<number>;
  /** Rows of `table` (`finishedOnly`: as exportRows counts them). */
  countRows(params: CountRowsParams): Promise<number>;
}

/** The TransferStore working on the same database (and connections) as `store`. */
export function transferStoreOf(store: Store): Promise<TransferStore> {
  return sideStoreOf<TransferStore>(store, {
    sqlite: async (sqlite) => new (await import('./sqlite/transfer.js')).SqliteTransferStore(sqlite),
    postgres: async (postgres) => new (await import('./postgres/transfer.js')).PostgresTransferStore(postgres),
    mysql: async (mysql) => new (await import('./mysql/transfer.js')).MysqlTransferStore(mysql),
  });
}

/** How a dialect writes the shared statements below. */
export interface TransferSql {
  /** The table's name as the dialect addresses it (PostgreSQL: schema-qualified). */
  table(name: string): string;
  /** The placeholder of the value at `index` (0-based). */
  param(index: number): string;
  /** What follows `INSERT … VALUES …` so that a row of an existing key is overwritten. */
  upsert(spec: TransferTable, columns: readonly string[]): string;
  /** A neutral value as the driver binds it. */
  encode(kind: ColumnKind, value: TransferValue): unknown;
  /** A driver's value as a neutral one. */
  decode(kind: ColumnKind, value: unknown): TransferValue;
}

export interface Query {
  sql: string;
  values: unknown[];
}

export function pageQuery(dialect: TransferSql, params: ExportRowsParams): Query {
  const spec: TransferTable = TRANSFER_TABLES[params.table];
  const values: unknown[] = [];
  const bind = (kind: ColumnKind, value: TransferValue): string => {
    values.push(dialect.encode(kind, value));
    return dialect.param(values.length - 1);
  };
  const where: string[] = [];
  if (params.after) where.push(afterKey(spec, params.after, bind));
  if (params.finishedOnly) where.push(...finishedOnlyWhere(dialect, spec));
  const sql = `SELECT ${Object.keys(spec.columns).join(', ')} FROM ${dialect.table(spec.table)}
    ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${spec.key.join(', ')} LIMIT ${bind('int', params.limit)}`;
  return { sql, values };
}

/** The condition that keeps rows of terminal tasks (none for tables that are not about a task). */
function finishedOnlyWhere(dialect: TransferSql, spec: TransferTable): string[] {
  if (!spec.taskColumn) return [];
  if (spec.table === TRANSFER_TABLES.tasks.table) return [`status IN ${TERMINAL_SQL}`];
  return [`${spec.taskColumn} IN (SELECT id FROM ${dialect.table(TRANSFER_TABLES.tasks.table)} WHERE status IN ${TERMINAL_SQL})`];
}

/** Rows after a composite key, written out (k1 > a OR (k1 = a AND k2 > b)): every dialect plans it on the primary key. */
function afterKey(spec: TransferTable, after: readonly TransferValue[], bind: (kind: ColumnKind, value: TransferValue) => string): string {
  const terms = spec.key.map((column, i) => {
    const equal = spec.key.slice(0, i).map((prior, j) => `${prior} = ${bind(spec.columns[prior]!, after[j] ?? null)}`);
    return `(${[...equal, `${column} > ${bind(spec.columns[column]!, after[i] ?? null)}`].join(' AND ')})`;
  });
  return `(${terms.join(' OR ')})`;
}

export function pageOf(dialect: TransferSql, table: TransferTableName, raw: readonly Record<string, unknown>[], limit: number): TransferPage {
  const spec: TransferTable = TRANSFER_TABLES[table];
  const rows = raw.map((row) => decodeRow(dialect, spec, row));
  const last = rows[rows.length - 1];
  return { rows, next: rows.length < limit || !last ? null : spec.key.map((column) => last[column] ?? null) };
}

function decodeRow(dialect: TransferSql, spec: TransferTable, row: Record<string, unknown>): TransferRow {
  const out: TransferRow = {};
  for (const [column, kind] of Object.entries(spec.columns)) {
    const value = row[column];
    out[column] = value === null || value === undefined ? null : dialect.decode(kind, value);
  }
  return out;
}

/** One multi-row upsert of `rows` (the caller keeps a batch within the driver's parameter limit). */
export function upsertQuery(dialect: TransferSql, table: TransferTableName, rows: readonly TransferRow[]): Query {
  const spec: TransferTable = TRANSFER_TABLES[table];
  const columns = Object.keys(spec.columns);
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const placeholders = columns.map((column) => {
      const value = row[column] ?? null;
      values.push(value === null ? null : dialect.encode(spec.columns[column]!, value));
      return dialect.param(values.length - 1);
    });
    return `(${placeholders.join(', ')})`;
  });
  return { sql: `INSERT INTO ${dialect.table(spec.table)} (${columns.join(', ')}) VALUES ${tuples.join(', ')} ${dialect.upsert(spec, columns)}`, values };
}

/** What one upsert statement may carry of text: well under MySQL's smallest usual max_allowed_packet (16 MiB on MariaDB). */
const BATCH_TEXT_CHARS = 4_000_000;

/**
 * Rows per upsert statement: under every driver's parameter limit (SQLite 32,766; PostgreSQL 65,535) and
 * about BATCH_TEXT_CHARS of text (large payloads); a row larger than that goes alone.
 */
export function upsertBatches(table: TransferTableName, rows: readonly TransferRow[]): TransferRow[][] {
  const maxRows = Math.max(1, Math.floor(30_000 / Object.keys(TRANSFER_TABLES[table].columns).length));
  const batches: TransferRow[][] = [];
  let batch: TransferRow[] = [];
  let chars = 0;
  for (const row of rows) {
    const size = Object.values(row).reduce<number>((sum, value) => sum + (typeof value === 'string' ? value.length : 8), 0);
    if (batch.length > 0 && (batch.length >= maxRows || chars + size > BATCH_TEXT_CHARS)) {
      batches.push(batch);
      batch = [];
      chars = 0;
    }
    batch.push(row);
    chars += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

export function countQuery(dialect: TransferSql, params: CountRowsParams): string {
  const spec: TransferTable = TRANSFER_TABLES[params.table];
  const where = params.finishedOnly ? finishedOnlyWhere(dialect, spec) : [];
  return `SELECT COUNT(*) AS n FROM ${dialect.table(spec.table)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
}

/** The SQL standard's upsert (SQLite, PostgreSQL): every column but the key from the incoming row. */
export function onConflictUpdate(spec: TransferTable, columns: readonly string[]): string {
  return `ON CONFLICT (${spec.key.join(', ')}) DO UPDATE SET ${updateColumns(spec, columns, (column) => `excluded.${column}`)}`;
}

/** Columns other than the key, set from the incoming row (`excluded` is the SQL standard's name; MySQL says VALUES()). */
export function updateColumns(spec: TransferTable, columns: readonly string[], incoming: (column: string) => string): string {
  return columns
    .filter((column) => !spec.key.includes(column))
    .map((column) => `${column} = ${incoming(column)}`)
    .join(', ');
}

/**
 * Encode and decode for a dialect that differs from the others only in how it holds a time (`toTime`:
 * a Date as the driver binds it; `fromTime`: the driver's value as a Date) and whether booleans are 0/1.
 */
export function transferValues(
  toTime: (date: Date) => unknown,
  fromTime: (value: unknown) => Date,
  booleansAsIntegers: boolean,
): Pick<TransferSql, 'encode' | 'decode'> {
  return {
    encode(kind, value) {
      if (kind === 'time') return toTime(value as Date);
      if (kind === 'bool' && booleansAsIntegers) return value ? 1 : 0;
      return value;
    },
    decode(kind, value) {
      if (kind === 'time') return fromTime(value);
      if (kind === 'bool') return value === true || Number(value) === 1;
      // PostgreSQL's bigint arrives as text.
      if (kind === 'int' || kind === 'num') return Number(value);
      // MySQL may hand LONGTEXT as a Buffer.
      return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
    },
  };
}
