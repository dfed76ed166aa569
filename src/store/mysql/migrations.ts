/**
 * MySQL 8 / MariaDB 10.6+ schema, versioned; mirrors src/store/sqlite/migrations.ts
 * column for column (DESIGN.md §2), so the seed's diagnostic SQL runs as written.
 *
 * What differs, and why:
 * - Times are DATETIME(3) in UTC (every session sets time_zone '+00:00').
 * - Identifiers use a binary NO PAD collation ({{ID}}: utf8mb4_0900_bin on
 *   MySQL 8, utf8mb4_nopad_bin on MariaDB), so 'a', 'A' and 'a ' are three task
 *   types and three idempotency keys, as on SQLite and PostgreSQL.
 * - Neither server has partial indexes, and MariaDB has no functional ones. Two
 *   INVISIBLE stored generated columns stand in (SELECT * does not show them):
 *   `claimable` (1 for QUEUED/RETRY_WAIT, else NULL) leads the claim index (then
 *   task_type, as on SQLite: each type is asked for at most its free limit), so
 *   the claim walks claimable rows in claim order and finished rows cost
 *   nothing; `owner_key` (COALESCE(owner, '')) makes the idempotency key unique
 *   for owner-less tasks too (NULLs never collide in a unique index).
 * - Payload and result are LONGTEXT: plain TEXT stops at 64 KiB.
 * DDL commits implicitly, so each table carries its indexes inside one
 * CREATE TABLE IF NOT EXISTS: a migration interrupted half-way re-runs cleanly.
 */
import { UNIQUE_HOLD_SQL } from '../rules/unique.js';
export interface MysqlMigration {
  version: number;
  name: string;
  statements: readonly string[];
}

const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={{ID}}';

/**
 * DDL run only when it is still to do. MySQL 8 has no ADD COLUMN IF NOT EXISTS (nor DROP INDEX IF EXISTS): the
 * statement is prepared only when information_schema says so, so a re-run after a crash between the DDL and
 * the version row is a no-op. Our own identifiers and types only: no quoting beyond the literal's.
 */
function ddlIf(condition: string, ddl: string): string[] {
  return [
    `SET @tasklease_ddl = (SELECT IF(${condition}, '${ddl.replaceAll("'", "\\'")}', 'DO 0'))`,
    'PREPARE tasklease_ddl FROM @tasklease_ddl',
    'EXECUTE tasklease_ddl',
    'DEALLOCATE PREPARE tasklease_ddl',
  ];
}

function addColumnIfMissing(column: string, definition: string): string[] {
  return ddlIf(
    `(SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'system_async_task' AND COLUMN_NAME = '${column}') = 0`,
    `ALTER TABLE system_async_task ADD COLUMN ${column} ${definition}`,
  );
}

function dropIndexIfPresent(index: string): string[] {
  return ddlIf(
    `(SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'system_async_task' AND INDEX_NAME = '${index}') > 0`,
    `ALTER TABLE system_async_task DROP INDEX ${index}`,
  );
}

export const MYSQL_MIGRATIONS: readonly MysqlMigration[] = [
  {
    version: 1,
    name: 'initial schema',
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task (
  id VARCHAR(64) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  status VARCHAR(32) NOT NULL,
  priority INT NOT NULL DEFAULT 0,
  payload_json LONGTEXT NOT NULL,
  available_at DATETIME(3) NOT NULL,
  deadline_at DATETIME(3) NULL,
  lease_owner VARCHAR(255) NULL,
  lease_until DATETIME(3) NULL,
  attempt_count INT NOT NULL DEFAULT 0,
  attempt_base INT NOT NULL DEFAULT 0,
  max_attempts INT NOT NULL,
  artifact_id VARCHAR(255) NULL,
  owner VARCHAR(255) NULL,
  idempotency_key VARCHAR(255) NULL,
  progress_total BIGINT NULL,
  progress_processed BIGINT NULL,
  progress_succeeded BIGINT NULL,
  progress_failed BIGINT NULL,
  progress_skipped BIGINT NULL,
  progress_message MEDIUMTEXT NULL,
  result_json LONGTEXT NULL,
  last_error_code VARCHAR(255) NULL,
  trace_id VARCHAR(255) NULL,
  create_time DATETIME(3) NOT NULL,
  update_time DATETIME(3) NOT NULL,
  start_time DATETIME(3) NULL,
  finish_time DATETIME(3) NULL,
  claimable TINYINT GENERATED ALWAYS AS (CASE WHEN status IN ('QUEUED', 'RETRY_WAIT') THEN 1 ELSE NULL END) STORED INVISIBLE,
  owner_key VARCHAR(255) GENERATED ALWAYS AS (COALESCE(owner, '')) STORED INVISIBLE,
  PRIMARY KEY (id),
  KEY ix_system_async_task_claim (claimable, task_type, priority DESC, available_at, create_time),
  KEY ix_system_async_task_leased (status, lease_until),
  KEY ix_system_async_task_deadline (claimable, deadline_at),
  KEY ix_system_async_task_status_available (status, available_at),
  UNIQUE KEY ux_system_async_task_idempotency (task_type, owner_key, idempotency_key),
  KEY ix_system_async_task_owner (owner, id),
  KEY ix_system_async_task_type_status (task_type, status),
  KEY ix_system_async_task_finished (finish_time),
  KEY ix_system_async_task_create_time (create_time)
) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS system_async_task_attempt (
  task_id VARCHAR(64) NOT NULL,
  attempt INT NOT NULL,
  worker_id VARCHAR(255) NOT NULL,
  started_at DATETIME(3) NOT NULL,
  finished_at DATETIME(3) NULL,
  outcome VARCHAR(32) NULL,
  error_code VARCHAR(255) NULL,
  PRIMARY KEY (task_id, attempt),
  KEY ix_system_async_task_attempt_started (started_at)
) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS system_async_task_failure (
  id VARCHAR(64) NOT NULL,
  task_id VARCHAR(64) NOT NULL,
  attempt INT NOT NULL,
  error_code VARCHAR(255) NOT NULL,
  error_message MEDIUMTEXT NOT NULL,
  trace_id VARCHAR(255) NULL,
  retryable TINYINT(1) NOT NULL,
  failed_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_system_async_task_failure_task (task_id, failed_at),
  KEY ix_system_async_task_failure_failed (failed_at)
) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS system_async_task_dead_letter (
  id VARCHAR(64) NOT NULL,
  original_task_id VARCHAR(64) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  owner VARCHAR(255) NULL,
  payload_json LONGTEXT NOT NULL,
  error_code VARCHAR(255) NOT NULL,
  error_message MEDIUMTEXT NOT NULL,
  trace_id VARCHAR(255) NULL,
  attempt_count INT NOT NULL,
  moved_at DATETIME(3) NOT NULL,
  replayed_at DATETIME(3) NULL,
  replay_task_id VARCHAR(64) NULL,
  archived_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  KEY ix_system_async_task_dead_letter_moved (task_type, moved_at),
  KEY ix_system_async_task_dead_letter_task (original_task_id)
) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS system_async_task_policy (
  policy_key VARCHAR(300) NOT NULL,
  task_type VARCHAR(255) NULL,
  max_concurrency INT NULL,
  max_attempts INT NULL,
  retry_base_delay_ms BIGINT NULL,
  enabled TINYINT(1) NOT NULL DEFAULT 1,
  update_time DATETIME(3) NOT NULL,
  PRIMARY KEY (policy_key)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 2,
    name: 'worker registry',
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_worker (
  worker_id VARCHAR(255) NOT NULL,
  host VARCHAR(255) NOT NULL,
  pid INT NOT NULL,
  task_types LONGTEXT NOT NULL,
  concurrency INT NOT NULL,
  started_at DATETIME(3) NOT NULL,
  last_seen_at DATETIME(3) NOT NULL,
  PRIMARY KEY (worker_id),
  KEY ix_system_async_task_worker_seen (last_seen_at)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 3,
    name: 'api tokens',
    // The HTTP server's tokens (src/store/tokens.ts): only the SHA-256 of each secret is kept.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_api_token (
  id VARCHAR(64) NOT NULL,
  name VARCHAR(255) NOT NULL,
  role VARCHAR(32) NOT NULL,
  owner VARCHAR(255) NULL,
  token_hash CHAR(64) NOT NULL,
  created_at DATETIME(3) NOT NULL,
  expires_at DATETIME(3) NULL,
  revoked_at DATETIME(3) NULL,
  last_used_at DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY ux_system_async_task_api_token_hash (token_hash)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 4,
    name: 'lease expiries',
    // Leases a task lost (issue 11, B3): a task that lost two may be a poison pill, and runs alone
    // from then on; its first two expiries cost no attempt (rules/sweep.ts).
    statements: ['ALTER TABLE system_async_task ADD COLUMN lease_expiries INT NOT NULL DEFAULT 0'],
  },
  {
    version: 5,
    name: 'schedules',
    // Periodic tasks (src/core/schedule.ts): last_tick_at is the cursor, revision the compare-and-set token.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_schedule (
  schedule_key VARCHAR(200) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  cron VARCHAR(200) NOT NULL,
  time_zone VARCHAR(100) NOT NULL,
  payload_json LONGTEXT NOT NULL,
  priority INT NOT NULL,
  max_attempts INT NOT NULL,
  owner VARCHAR(255) NULL,
  catch_up INT NOT NULL,
  enabled TINYINT(1) NOT NULL,
  revision BIGINT NOT NULL,
  last_tick_at DATETIME(3) NOT NULL,
  last_task_id VARCHAR(64) NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (schedule_key)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 6,
    name: 'uniqueness windows',
    // unique_key / unique_states: see rules/unique.ts. No functional index on MariaDB: an invisible stored
    // column holds the expression, as `claimable` does. One ALTER (atomic DDL on MySQL 8).
    statements: [
      `ALTER TABLE system_async_task
  ADD COLUMN unique_key VARCHAR(100) NULL,
  ADD COLUMN unique_states INT NULL,
  ADD COLUMN unique_hold VARCHAR(100) GENERATED ALWAYS AS (${UNIQUE_HOLD_SQL}) STORED INVISIBLE,
  ADD UNIQUE KEY ux_system_async_task_unique (unique_hold)`,
    ],
  },
  {
    version: 7,
    name: 'wake-up counter',
    // MySQL has no LISTEN/NOTIFY: every submit bumps one of these rows in its own transaction and
    // idle workers in other processes poll their sum (wakeups.ts). Several rows, one picked at
    // random per submit, so that concurrent submits rarely wait on one another's row lock.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_wakeup (
  slot INT NOT NULL,
  version BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (slot)
) ${TABLE_OPTIONS}`,
      `INSERT INTO system_async_task_wakeup (slot, version)
VALUES (0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 0), (12, 0), (13, 0), (14, 0), (15, 0)
ON DUPLICATE KEY UPDATE slot = slot`,
    ],
  },
  {
    version: 8,
    name: 'trace parent',
    // The W3C traceparent of the span that submitted the task (OpenTelemetry): its own column, because
    // trace_id is the producer's correlation id (failure rows, dead letters, logs) and must keep meaning that.
    statements: addColumnIfMissing('trace_parent', 'VARCHAR(255) NULL'),
  },
  {
    version: 9,
    name: 'lease token',
    // Drawn by each claim, part of every fence (rules/leases.ts newLeaseToken). Rows leased before it hold ''.
    statements: addColumnIfMissing('lease_token', "VARCHAR(32) NOT NULL DEFAULT ''"),
  },
  {
    version: 10,
    name: 'no type-status index',
    // Every status change rewrote an entry of (task_type, status): 12% of the drain (bench/mysql-probe.ts, 3
    // interleaved rounds). Per-type reads use the idempotency key's task_type prefix or an index scan instead (as
    // PostgreSQL, which never had this index, walks its primary key).
    statements: dropIndexIfPresent('ix_system_async_task_type_status'),
  },
  {
    version: 11,
    name: 'operator actions',
    // Who paused, resumed, cancelled, retried, rescheduled or replayed a task, and when (rules/actions.ts):
    // written with the change in its transaction, by operators only, so the drain never touches it.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_action (
  id BIGINT NOT NULL AUTO_INCREMENT,
  task_id VARCHAR(64) NOT NULL,
  action VARCHAR(32) NOT NULL,
  from_status VARCHAR(32) NULL,
  to_status VARCHAR(32) NULL,
  actor VARCHAR(255) NOT NULL,
  actor_name VARCHAR(255) NULL,
  detail VARCHAR(255) NULL,
  acted_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_system_async_task_action_task (task_id, acted_at)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 12,
    name: 'moves',
    // `tasklease move` (client/move.ts): the checkpoint of a move into this database, one row per move, so that a
    // re-run after a crash resumes at the phase it reached, and an operator can read where it stands.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_move (
  move_key VARCHAR(64) NOT NULL,
  source VARCHAR(1000) NOT NULL,
  phase VARCHAR(32) NOT NULL,
  detail LONGTEXT NULL,
  started_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (move_key)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 13,
    name: 'flows',
    // Flows (rules/flows.ts): a task's flow and how many parents it still waits for (BLOCKED while > 0), and one row
    // per dependency edge, resolved once when its parent ends (fan_out: made by a handler's awaitChildren). The
    // primary key (parent first) serves the settle after a parent's end; the child index a task's parents.
    statements: [
      `ALTER TABLE system_async_task ADD COLUMN flow_id VARCHAR(64) NULL, ADD COLUMN pending_parents INT NULL,
  ADD KEY ix_system_async_task_flow (flow_id, create_time)`,
      `CREATE TABLE IF NOT EXISTS system_async_task_dependency (
  parent_id VARCHAR(64) NOT NULL,
  child_id VARCHAR(64) NOT NULL,
  on_failure VARCHAR(16) NOT NULL,
  fan_out TINYINT NOT NULL DEFAULT 0,
  resolved VARCHAR(16) NULL,
  created_at DATETIME(3) NOT NULL,
  PRIMARY KEY (parent_id, child_id),
  KEY ix_system_async_task_dependency_child (child_id)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 14,
    name: 'durable steps',
    // ctx.step(name, fn) (worker/steps.ts): one row per completed step, written fenced by the lease that ran it
    // (rules/steps.ts). cycle 0 is the task's current attempt cycle; an operator's retry or a dead-letter replay
    // sets the earlier cycle's rows to the attempt count it ended at (kept for the record, never reused). seq: the
    // step's place in its cycle (1, 2, …), counted under the task row's lock.
    // name: at most 200 characters (800 bytes of utf8mb4), binary NO PAD like every identifier.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_step (
  task_id VARCHAR(64) NOT NULL,
  cycle INT NOT NULL DEFAULT 0,
  name VARCHAR(200) NOT NULL,
  seq INT NOT NULL,
  result_json LONGTEXT NULL,
  attempt INT NOT NULL,
  worker_id VARCHAR(255) NOT NULL,
  recorded_at DATETIME(3) NOT NULL,
  PRIMARY KEY (task_id, cycle, name)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 15,
    name: 'event subscriptions',
    // Fan-out by event (client/events.ts, rules/events.ts): which task types a publish of an event creates a task in.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_subscription (
  event_name VARCHAR(200) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  priority INT NULL,
  max_attempts INT NULL,
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (event_name, task_type)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 16,
    name: 'rate limits',
    // Rate limits (rules/rates.ts): N starts per period on a policy row (GLOBAL, TYPE:, OWNER:, KEY:), the task's
    // rate key, and the start log every rate-limited claim counts in and appends to (one row per start per scope,
    // pruned to the scope's period by the claims that write it, and to the longest period whatever the scope: the
    // time index serves that and the claim's read of the window).
    statements: [
      // Only when still to do (like addColumnIfMissing): a re-run after a crash before the version row is a no-op.
      ...ddlIf(
        `(SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'system_async_task_policy' AND COLUMN_NAME = 'rate_limit') = 0`,
        'ALTER TABLE system_async_task_policy ADD COLUMN rate_limit INT NULL, ADD COLUMN rate_period_ms BIGINT NULL, ADD KEY ix_system_async_task_policy_rate (rate_limit)',
      ),
      ...addColumnIfMissing('rate_key', 'VARCHAR(255) NULL'),
      `CREATE TABLE IF NOT EXISTS system_async_task_rate_start (
  id BIGINT NOT NULL AUTO_INCREMENT,
  scope_key VARCHAR(300) NOT NULL,
  started_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_system_async_task_rate_start (scope_key, started_at),
  KEY ix_system_async_task_rate_start_time (started_at)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 17,
    name: 'sequences',
    // Sequences (rules/sequences.ts): a task's key and its place in the key (submit order), and one row per key that
    // numbers its tasks and serializes who runs next (locked FOR UPDATE by a submit and by the end of the key's head).
    statements: [
      `ALTER TABLE system_async_task ADD COLUMN sequence_key VARCHAR(255) NULL, ADD COLUMN sequence_seq BIGINT NULL,
  ADD KEY ix_system_async_task_sequence (sequence_key, sequence_seq)`,
      `CREATE TABLE IF NOT EXISTS system_async_task_sequence (
  sequence_key VARCHAR(255) NOT NULL,
  next_seq BIGINT NOT NULL,
  on_dead_letter VARCHAR(16) NOT NULL DEFAULT 'BLOCK',
  skipped_through BIGINT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (sequence_key)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 18,
    name: 'adaptive limits',
    // Adaptive limits (client/adaptive.ts, store/rules/adaptive.ts): per type, the controller's bounds and state; it writes
    // the type's policy max_concurrency (what the claim reads) in the transaction of its compare-and-set on
    // current_limit and changed_at. Every change of the limit, with its cause and actor, goes to the limit-change trail.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_adaptive (
  task_type VARCHAR(255) NOT NULL,
  min_limit INT NOT NULL,
  max_limit INT NOT NULL,
  window_ms BIGINT NOT NULL,
  min_samples INT NOT NULL,
  failure_threshold DOUBLE NOT NULL,
  codes_json TEXT NULL,
  decrease_factor DOUBLE NOT NULL,
  increase_step INT NOT NULL,
  cooldown_ms BIGINT NOT NULL,
  enabled TINYINT NOT NULL,
  overridden TINYINT NOT NULL DEFAULT 0,
  override_until DATETIME(3) NULL,
  current_limit INT NOT NULL,
  changed_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  PRIMARY KEY (task_type)
) ${TABLE_OPTIONS}`,
      `CREATE TABLE IF NOT EXISTS system_async_task_limit_change (
  id VARCHAR(64) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  from_limit INT NULL,
  to_limit INT NULL,
  cause_kind VARCHAR(32) NOT NULL,
  cause VARCHAR(1000) NOT NULL,
  actor VARCHAR(255) NOT NULL,
  actor_name VARCHAR(255) NULL,
  changed_at DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_system_async_task_limit_change_type (task_type, changed_at),
  KEY ix_system_async_task_limit_change_at (changed_at)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 19,
    name: 'task logs',
    // Per-task logs (ctx.log, worker/logs.ts, rules/logs.ts): the lines a handler logged, per attempt, written fenced by
    // the lease in batches with the progress flush and at the attempt's end. seq: the line's place in the task (task-wide,
    // counted under the task row's lock). A row with dropped > 0 is a drop marker: that many older lines of its attempt
    // were dropped by the bounds; its seq is that of the newest line it stands for. Written only by handlers that log.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_log (
  task_id VARCHAR(64) NOT NULL,
  seq INT NOT NULL,
  attempt INT NOT NULL,
  level VARCHAR(16) NOT NULL,
  message TEXT NOT NULL,
  fields_json MEDIUMTEXT NULL,
  dropped INT NOT NULL DEFAULT 0,
  logged_at DATETIME(3) NOT NULL,
  PRIMARY KEY (task_id, seq)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 20,
    name: 'queue history',
    // Queue history (observe/queue-history.ts, store/queue-history.ts): per task type, minute (grain 'm') or hour ('h') and writing
    // process, additive counters and two fixed histograms (queue wait, run time; bucket bounds in rules/queue-history.ts). Each
    // process upserts one row per type per minute it saw events in; reads sum over processes; the cleanup rolls minute rows
    // up into hour rows (process '') and removes both past their retention.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_queue_stat (
  grain CHAR(1) NOT NULL,
  bucket_start DATETIME(3) NOT NULL,
  task_type VARCHAR(255) NOT NULL,
  process_id VARCHAR(255) NOT NULL,
  submitted INT NOT NULL DEFAULT 0,
  started INT NOT NULL DEFAULT 0,
  succeeded INT NOT NULL DEFAULT 0,
  failed INT NOT NULL DEFAULT 0,
  dead_lettered INT NOT NULL DEFAULT 0,
  wait_b0 INT NOT NULL DEFAULT 0,
  wait_b1 INT NOT NULL DEFAULT 0,
  wait_b2 INT NOT NULL DEFAULT 0,
  wait_b3 INT NOT NULL DEFAULT 0,
  wait_b4 INT NOT NULL DEFAULT 0,
  wait_b5 INT NOT NULL DEFAULT 0,
  wait_ms_sum BIGINT NOT NULL DEFAULT 0,
  run_b0 INT NOT NULL DEFAULT 0,
  run_b1 INT NOT NULL DEFAULT 0,
  run_b2 INT NOT NULL DEFAULT 0,
  run_b3 INT NOT NULL DEFAULT 0,
  run_b4 INT NOT NULL DEFAULT 0,
  run_b5 INT NOT NULL DEFAULT 0,
  run_ms_sum BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (grain, bucket_start, task_type, process_id),
  KEY ix_system_async_task_queue_stat_at (grain, bucket_start)
) ${TABLE_OPTIONS}`,
    ],
  },
  {
    version: 21,
    name: 'bulk operations',
    // Bulk operations (client/bulk.ts, store/bulk.ts): one row per operation over a task filter — who started it, when, the
    // filter and the action, the count the dry run saw, progress (the id cursor and the counts), and the lease of the process
    // running it, so that another process resumes it after a crash or a restart.
    statements: [
      `CREATE TABLE IF NOT EXISTS system_async_task_bulk (
  id VARCHAR(64) NOT NULL PRIMARY KEY,
  action VARCHAR(32) NOT NULL,
  filter_json MEDIUMTEXT NOT NULL,
  params_json TEXT,
  status VARCHAR(16) NOT NULL,
  scope_owner VARCHAR(255),
  actor VARCHAR(255) NOT NULL,
  actor_name VARCHAR(255),
  matched BIGINT NOT NULL,
  processed BIGINT NOT NULL DEFAULT 0,
  changed BIGINT NOT NULL DEFAULT 0,
  cursor_id VARCHAR(64),
  floor_id VARCHAR(64),
  cancel_requested INT NOT NULL DEFAULT 0,
  error TEXT,
  lease_owner VARCHAR(255),
  lease_expires_at DATETIME(3),
  created_at DATETIME(3) NOT NULL,
  updated_at DATETIME(3) NOT NULL,
  finished_at DATETIME(3),
  KEY ix_system_async_task_bulk_status (status, lease_expires_at)
) ${TABLE_OPTIONS}`,
    ],
  },
];

// Same bookkeeping table as SQLite.
export const MIGRATION_TABLE = 'tasklease_migrations';

export function migrationTableSql(collation: string): string {
  return `CREATE TABLE IF NOT EXISTS ${MIGRATION_TABLE} (
  version INT NOT NULL,
  name VARCHAR(255) NOT NULL,
  applied_at DATETIME(3) NOT NULL,
  PRIMARY KEY (version)
) ${TABLE_OPTIONS.replace('{{ID}}', collation)}`;
}

export function renderStatement(statement: string, collation: string): string {
  return statement.replaceAll('{{ID}}', collation);
}
