/**
 * SQLite schema, versioned. Times are UTC text 'YYYY-MM-DD HH:MM:SS.SSS' —
 * SQLite's own strftime('%Y-%m-%d %H:%M:%f') format — so they sort as text,
 * read well in the sqlite3 shell and compare with SQLite's date functions.
 * Table and column names are the seed's (DESIGN.md §2); the PostgreSQL and
 * MySQL schemas mirror them column for column.
 */
import { UNIQUE_HOLD_SQL } from '../rules/unique.js';
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE system_async_task (
  id TEXT PRIMARY KEY,
  task_type TEXT NOT NULL,
  status TEXT NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  payload_json TEXT NOT NULL,
  available_at TEXT NOT NULL,
  deadline_at TEXT,
  lease_owner TEXT,
  lease_until TEXT,
  attempt_count INTEGER NOT NULL DEFAULT 0,
  attempt_base INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  artifact_id TEXT,
  owner TEXT,
  idempotency_key TEXT,
  progress_total INTEGER,
  progress_processed INTEGER,
  progress_succeeded INTEGER,
  progress_failed INTEGER,
  progress_skipped INTEGER,
  progress_message TEXT,
  result_json TEXT,
  last_error_code TEXT,
  trace_id TEXT,
  create_time TEXT NOT NULL,
  update_time TEXT NOT NULL,
  start_time TEXT,
  finish_time TEXT
);
-- Only claimable rows, per type in claim order: finished rows stay in the table
-- for the seed's queries but cost the claim nothing. Per type, because the
-- claim asks each type for at most its free limit.
CREATE INDEX ix_system_async_task_claim ON system_async_task (task_type, priority DESC, available_at, create_time)
  WHERE status IN ('QUEUED', 'RETRY_WAIT');
-- Leased rows: limit counting per type and the expired-lease sweep.
CREATE INDEX ix_system_async_task_leased ON system_async_task (task_type, lease_until)
  WHERE status IN ('RUNNING', 'CANCEL_REQUESTED');
CREATE UNIQUE INDEX ux_system_async_task_idempotency ON system_async_task (task_type, COALESCE(owner, ''), idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX ix_system_async_task_owner ON system_async_task (owner, id);
CREATE INDEX ix_system_async_task_type_status ON system_async_task (task_type, status);
CREATE INDEX ix_system_async_task_finished ON system_async_task (finish_time) WHERE finish_time IS NOT NULL;

CREATE TABLE system_async_task_attempt (
  task_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  outcome TEXT,
  error_code TEXT,
  PRIMARY KEY (task_id, attempt)
);
CREATE INDEX ix_system_async_task_attempt_started ON system_async_task_attempt (started_at);

CREATE TABLE system_async_task_failure (
  id TEXT PRIMARY KEY,
  task_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  error_code TEXT NOT NULL,
  error_message TEXT NOT NULL,
  trace_id TEXT,
  retryable INTEGER NOT NULL,
  failed_at TEXT NOT NULL
);
CREATE INDEX ix_system_async_task_failure_task ON system_async_task_failure (task_id, failed_at);
CREATE INDEX ix_system_async_task_failure_failed ON system_async_task_failure (failed_at);

CREATE TABLE system_async_task_dead_letter (
  id TEXT PRIMARY KEY,
  original_task_id TEXT NOT NULL,
  task_type TEXT NOT NULL,
  owner TEXT,
  payload_json TEXT NOT NULL,
  error_code TEXT NOT NULL,
  error_message TEXT NOT NULL,
  trace_id TEXT,
  attempt_count INTEGER NOT NULL,
  moved_at TEXT NOT NULL,
  replayed_at TEXT,
  replay_task_id TEXT,
  archived_at TEXT
);
CREATE INDEX ix_system_async_task_dead_letter_moved ON system_async_task_dead_letter (task_type, moved_at);
CREATE INDEX ix_system_async_task_dead_letter_task ON system_async_task_dead_letter (original_task_id);

CREATE TABLE system_async_task_policy (
  policy_key TEXT PRIMARY KEY,
  task_type TEXT,
  max_concurrency INTEGER,
  max_attempts INTEGER,
  retry_base_delay_ms INTEGER,
  enabled INTEGER NOT NULL DEFAULT 1,
  update_time TEXT NOT NULL
);
`,
  },
  {
    version: 2,
    name: 'worker registry',
    sql: `
CREATE TABLE system_async_task_worker (
  worker_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  task_types TEXT NOT NULL,
  concurrency INTEGER NOT NULL,
  started_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'no (task_type, status) index',
    // Every claim and every outcome changes a task's status, so this index cost a delete and an insert
    // at each: 12-14 % of a drain's rate (DROPIDX in bench/sqlite-drain-probe.ts). Per-type counts scan the table, as
    // on PostgreSQL.
    sql: `DROP INDEX IF EXISTS ix_system_async_task_type_status;`,
  },
  {
    version: 4,
    name: 'api tokens',
    // The HTTP server's tokens (src/store/tokens.ts): only the SHA-256 of each secret is kept.
    sql: `
CREATE TABLE system_async_task_api_token (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  role TEXT NOT NULL,
  owner TEXT,
  token_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  revoked_at TEXT,
  last_used_at TEXT
);
CREATE UNIQUE INDEX ux_system_async_task_api_token_hash ON system_async_task_api_token (token_hash);
`,
  },
  {
    version: 5,
    name: 'lease expiries',
    // Leases a task lost (issue 11, B3): a task that lost two may be a poison pill, and runs alone
    // from then on; its first two expiries cost no attempt (rules/sweep.ts).
    sql: `ALTER TABLE system_async_task ADD COLUMN lease_expiries INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    version: 6,
    name: 'schedules',
    // Periodic tasks (src/core/schedule.ts): last_tick_at is the cursor, revision the compare-and-set token.
    sql: `
CREATE TABLE system_async_task_schedule (
  schedule_key TEXT PRIMARY KEY,
  task_type TEXT NOT NULL,
  cron TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  priority INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  owner TEXT,
  catch_up INTEGER NOT NULL,
  enabled INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  last_tick_at TEXT NOT NULL,
  last_task_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
`,
  },
  {
    version: 7,
    name: 'uniqueness windows',
    // unique_key / unique_states: see rules/unique.ts (the expression index, as on PostgreSQL).
    sql: `
ALTER TABLE system_async_task ADD COLUMN unique_key TEXT;
ALTER TABLE system_async_task ADD COLUMN unique_states INTEGER;
CREATE UNIQUE INDEX ux_system_async_task_unique ON system_async_task (${UNIQUE_HOLD_SQL}) WHERE unique_key IS NOT NULL;
`,
  },
  {
    version: 8,
    name: 'trace parent',
    // The W3C traceparent of the span that submitted the task (OpenTelemetry): its own column, because
    // trace_id is the producer's correlation id (failure rows, dead letters, logs) and must keep meaning that.
    sql: `ALTER TABLE system_async_task ADD COLUMN trace_parent TEXT;`,
  },
  {
    version: 9,
    name: 'lease token',
    // Drawn by each claim, part of every fence (rules/leases.ts newLeaseToken). Rows leased before it hold ''.
    sql: `ALTER TABLE system_async_task ADD COLUMN lease_token TEXT NOT NULL DEFAULT '';`,
  },
  {
    version: 10,
    name: 'operator actions',
    // Who paused, resumed, cancelled, retried, rescheduled or replayed a task, and when (rules/actions.ts):
    // written with the change in its transaction, by operators only, so the drain never touches it.
    sql: `
CREATE TABLE system_async_task_action (
  id INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  action TEXT NOT NULL,
  from_status TEXT,
  to_status TEXT,
  actor TEXT NOT NULL,
  actor_name TEXT,
  detail TEXT,
  acted_at TEXT NOT NULL
);
CREATE INDEX ix_system_async_task_action_task ON system_async_task_action (task_id, acted_at);
`,
  },
  {
    version: 11,
    name: 'moves',
    // `tasklease move` (client/move.ts): the checkpoint of a move into this database, one row per move, so that a
    // re-run after a crash resumes at the phase it reached, and an operator can read where it stands.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_move (
  move_key TEXT PRIMARY KEY,
  source TEXT NOT NULL,
  phase TEXT NOT NULL,
  detail TEXT,
  started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
`,
  },
  {
    version: 12,
    name: 'flows',
    // Flows (rules/flows.ts): a task's flow and how many parents it still waits for (BLOCKED while > 0), and one row
    // per dependency edge, resolved once when its parent ends (fan_out: made by a handler's awaitChildren, from a
    // child it made up to itself). The child index serves a task's parents and the
    // flow's reads; the primary key (parent first) serves the settle after a parent's end.
    sql: `
ALTER TABLE system_async_task ADD COLUMN flow_id TEXT;
ALTER TABLE system_async_task ADD COLUMN pending_parents INTEGER;
CREATE INDEX ix_system_async_task_flow ON system_async_task (flow_id, create_time) WHERE flow_id IS NOT NULL;
CREATE TABLE system_async_task_dependency (
  parent_id TEXT NOT NULL,
  child_id TEXT NOT NULL,
  on_failure TEXT NOT NULL,
  fan_out INTEGER NOT NULL DEFAULT 0,
  resolved TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX ix_system_async_task_dependency_child ON system_async_task_dependency (child_id);
`,
  },
  {
    version: 13,
    name: 'durable steps',
    // ctx.step(name, fn) (worker/steps.ts): one row per completed step, written fenced by the lease that ran it
    // (rules/steps.ts). cycle 0 is the task's current attempt cycle; an operator's retry or a dead-letter replay
    // sets the earlier cycle's rows to the attempt count it ended at (kept for the record, never reused). seq: the
    // step's place in its cycle (1, 2, …), counted under the task row's lock.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_step (
  task_id TEXT NOT NULL,
  cycle INTEGER NOT NULL DEFAULT 0,
  name TEXT NOT NULL,
  seq INTEGER NOT NULL,
  result_json TEXT,
  attempt INTEGER NOT NULL,
  worker_id TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (task_id, cycle, name)
);
`,
  },
  {
    version: 14,
    name: 'event subscriptions',
    // Fan-out by event (client/events.ts, rules/events.ts): which task types a publish of an event creates a task in.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_subscription (
  event_name TEXT NOT NULL,
  task_type TEXT NOT NULL,
  priority INTEGER,
  max_attempts INTEGER,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (event_name, task_type)
);
`,
  },
  {
    version: 15,
    name: 'rate limits',
    // Rate limits (rules/rates.ts): N starts per period on a policy row (GLOBAL, TYPE:, OWNER:, KEY:), the task's
    // rate key, and the start log every rate-limited claim counts in and appends to (one row per start per scope,
    // pruned to the scope's period by the claims that write it, and to the longest period whatever the scope: the
    // time index serves that and the claim's read of the window). Null outside rate limits: no byte more per plain task.
    sql: `
ALTER TABLE system_async_task_policy ADD COLUMN rate_limit INTEGER;
ALTER TABLE system_async_task_policy ADD COLUMN rate_period_ms INTEGER;
ALTER TABLE system_async_task ADD COLUMN rate_key TEXT;
CREATE TABLE IF NOT EXISTS system_async_task_rate_start (
  id INTEGER PRIMARY KEY,
  scope_key TEXT NOT NULL,
  started_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_rate_start ON system_async_task_rate_start (scope_key, started_at);
CREATE INDEX IF NOT EXISTS ix_system_async_task_rate_start_time ON system_async_task_rate_start (started_at);
CREATE INDEX IF NOT EXISTS ix_system_async_task_policy_rate ON system_async_task_policy (policy_key) WHERE rate_limit IS NOT NULL;
`,
  },
  {
    version: 16,
    name: 'sequences',
    // Sequences (rules/sequences.ts): a task's key and its place in the key (submit order), and one row per key that
    // numbers its tasks and serializes who runs next. The partial index holds a key's tasks that may still hold it or
    // wait (not SUCCESS, PARTIAL_SUCCESS or CANCELLED): the release reads the key's head and first waiting task there.
    sql: `
ALTER TABLE system_async_task ADD COLUMN sequence_key TEXT;
ALTER TABLE system_async_task ADD COLUMN sequence_seq INTEGER;
CREATE INDEX ix_system_async_task_sequence ON system_async_task (sequence_key, sequence_seq)
  WHERE sequence_key IS NOT NULL AND status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'CANCELLED');
CREATE TABLE IF NOT EXISTS system_async_task_sequence (
  sequence_key TEXT PRIMARY KEY,
  next_seq INTEGER NOT NULL,
  on_dead_letter TEXT NOT NULL DEFAULT 'BLOCK',
  skipped_through INTEGER,
  updated_at TEXT NOT NULL
);
`,
  },
  {
    version: 17,
    name: 'adaptive limits',
    // Adaptive limits (client/adaptive.ts, store/rules/adaptive.ts): per type, the controller's bounds and state; it writes
    // the type's policy max_concurrency (what the claim reads) in the transaction of its compare-and-set on
    // current_limit and changed_at. Every change of the limit, with its cause and actor, goes to the limit-change trail.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_adaptive (
  task_type TEXT PRIMARY KEY,
  min_limit INTEGER NOT NULL,
  max_limit INTEGER NOT NULL,
  window_ms INTEGER NOT NULL,
  min_samples INTEGER NOT NULL,
  failure_threshold REAL NOT NULL,
  codes_json TEXT,
  decrease_factor REAL NOT NULL,
  increase_step INTEGER NOT NULL,
  cooldown_ms INTEGER NOT NULL,
  enabled INTEGER NOT NULL,
  overridden INTEGER NOT NULL DEFAULT 0,
  override_until TEXT,
  current_limit INTEGER NOT NULL,
  changed_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS system_async_task_limit_change (
  id TEXT PRIMARY KEY,
  task_type TEXT NOT NULL,
  from_limit INTEGER,
  to_limit INTEGER,
  cause_kind TEXT NOT NULL,
  cause TEXT NOT NULL,
  actor TEXT NOT NULL,
  actor_name TEXT,
  changed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_limit_change_type ON system_async_task_limit_change (task_type, changed_at);
CREATE INDEX IF NOT EXISTS ix_system_async_task_limit_change_at ON system_async_task_limit_change (changed_at);
`,
  },
  {
    version: 18,
    name: 'task logs',
    // Per-task logs (ctx.log, worker/logs.ts, rules/logs.ts): the lines a handler logged, per attempt, written fenced by
    // the lease in batches with the progress flush and at the attempt's end. seq: the line's place in the task (task-wide,
    // counted under the task row's lock). A row with dropped > 0 is a drop marker: that many older lines of its attempt
    // were dropped by the bounds; its seq is that of the newest line it stands for. Written only by handlers that log.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_log (
  task_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  level TEXT NOT NULL,
  message TEXT NOT NULL,
  fields_json TEXT,
  dropped INTEGER NOT NULL DEFAULT 0,
  logged_at TEXT NOT NULL,
  PRIMARY KEY (task_id, seq)
);
`,
  },
  {
    version: 19,
    name: 'queue history',
    // Queue history (observe/queue-history.ts, store/queue-history.ts): per task type, minute (grain 'm') or hour ('h') and writing
    // process, additive counters and two fixed histograms (queue wait, run time; bucket bounds in rules/queue-history.ts). Each
    // process upserts one row per type per minute it saw events in; reads sum over processes; the cleanup rolls minute rows
    // up into hour rows (process '') and removes both past their retention.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_queue_stat (
  grain TEXT NOT NULL,
  bucket_start TEXT NOT NULL,
  task_type TEXT NOT NULL,
  process_id TEXT NOT NULL,
  submitted INTEGER NOT NULL DEFAULT 0,
  started INTEGER NOT NULL DEFAULT 0,
  succeeded INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  dead_lettered INTEGER NOT NULL DEFAULT 0,
  wait_b0 INTEGER NOT NULL DEFAULT 0,
  wait_b1 INTEGER NOT NULL DEFAULT 0,
  wait_b2 INTEGER NOT NULL DEFAULT 0,
  wait_b3 INTEGER NOT NULL DEFAULT 0,
  wait_b4 INTEGER NOT NULL DEFAULT 0,
  wait_b5 INTEGER NOT NULL DEFAULT 0,
  wait_ms_sum INTEGER NOT NULL DEFAULT 0,
  run_b0 INTEGER NOT NULL DEFAULT 0,
  run_b1 INTEGER NOT NULL DEFAULT 0,
  run_b2 INTEGER NOT NULL DEFAULT 0,
  run_b3 INTEGER NOT NULL DEFAULT 0,
  run_b4 INTEGER NOT NULL DEFAULT 0,
  run_b5 INTEGER NOT NULL DEFAULT 0,
  run_ms_sum INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (grain, bucket_start, task_type, process_id)
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_queue_stat_at ON system_async_task_queue_stat (grain, bucket_start);
`,
  },
  {
    version: 20,
    name: 'bulk operations',
    // Bulk operations (client/bulk.ts, store/bulk.ts): one row per operation over a task filter — who started it, when, the
    // filter and the action, the count the dry run saw, progress (the id cursor and the counts), and the lease of the process
    // running it, so that another process resumes it after a crash or a restart.
    sql: `
CREATE TABLE IF NOT EXISTS system_async_task_bulk (
  id TEXT PRIMARY KEY,
  action TEXT NOT NULL,
  filter_json TEXT NOT NULL,
  params_json TEXT,
  status TEXT NOT NULL,
  scope_owner TEXT,
  actor TEXT NOT NULL,
  actor_name TEXT,
  matched INTEGER NOT NULL,
  processed INTEGER NOT NULL DEFAULT 0,
  changed INTEGER NOT NULL DEFAULT 0,
  cursor_id TEXT,
  floor_id TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  lease_owner TEXT,
  lease_expires_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_bulk_status ON system_async_task_bulk (status, lease_expires_at);
`,
  },
];
