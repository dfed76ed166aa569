/**
 * PostgreSQL schema, versioned. It mirrors the SQLite schema
 * (../sqlite/migrations.ts) column for column and index for index, with
 * PostgreSQL types: timestamptz times, boolean flags, uuid ids (UUIDv7 made
 * by the client; text until migration 16). payload_json and result_json are text, not jsonb, on
 * purpose: the payload must come back exactly as submitted, and jsonb would
 * reorder keys, drop duplicates and reject \u0000 escapes; the seed's
 * diagnostic SQL can still read it as `payload_json::jsonb`.
 *
 * Everything lives in one schema (default `tasklease`), passed in as an
 * already-validated, quoted identifier.
 */
import { UNIQUE_HOLD_SQL } from '../rules/unique.js';
export interface PgMigration {
  version: number;
  name: string;
  sql: (schema: string) => string;
}

/** Advisory lock keys are derived from these plus the schema name, so two schemas never contend. */
export const CLAIM_LOCK_SCOPE = 'tasklease.claim:';
export const MIGRATE_LOCK_SCOPE = 'tasklease.migrate:';

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: (s) => `
CREATE TABLE ${s}.system_async_task (
  id text PRIMARY KEY,
  task_type text NOT NULL,
  status text NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  payload_json text NOT NULL,
  available_at timestamptz NOT NULL,
  deadline_at timestamptz,
  lease_owner text,
  lease_until timestamptz,
  attempt_count integer NOT NULL DEFAULT 0,
  attempt_base integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  artifact_id text,
  owner text,
  idempotency_key text,
  progress_total bigint,
  progress_processed bigint,
  progress_succeeded bigint,
  progress_failed bigint,
  progress_skipped bigint,
  progress_message text,
  result_json text,
  last_error_code text,
  trace_id text,
  create_time timestamptz NOT NULL,
  update_time timestamptz NOT NULL,
  -- start_time / finish_time (not started_at / finished_at, as in the attempt table): the seed's
  -- analyze-performance.sh joins both tables and names those columns unqualified.
  start_time timestamptz,
  finish_time timestamptz
);
-- A queue table churns: every claim and finish leaves a dead row version and
-- dead entries at the head of the claim index, which each claim walks past
-- until vacuum removes them (bench/claim-index-probe.sql). Vacuum it after 1 %
-- of its rows changed instead of PostgreSQL's default 20 %.
ALTER TABLE ${s}.system_async_task SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 5000,
  autovacuum_vacuum_cost_delay = 1, autovacuum_analyze_scale_factor = 0.02);
-- Only claimable rows, per type in claim order (id last: a total order that
-- matches creation order for a batch sharing one create_time). Finished rows
-- stay in the table for the seed's queries but cost the claim nothing.
CREATE INDEX ix_system_async_task_claim ON ${s}.system_async_task (task_type, priority DESC, available_at, create_time, id)
  WHERE status IN ('QUEUED', 'RETRY_WAIT');
-- Leased rows: limit counting per type and the expired-lease sweep.
CREATE INDEX ix_system_async_task_leased ON ${s}.system_async_task (task_type, lease_until)
  WHERE status IN ('RUNNING', 'CANCEL_REQUESTED');
CREATE UNIQUE INDEX ux_system_async_task_idempotency ON ${s}.system_async_task (task_type, COALESCE(owner, ''), idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- Every status change rewrites the row and adds an entry to every index whose
-- predicate the new row meets (the status is in their predicates, so no update
-- is HOT): each index here costs every claim and every finish. Hence no
-- (task_type, status) or finish_time index — per-type counts and cleanup
-- walk the primary key (UUIDv7: creation order) instead — and the owner
-- index holds only owned tasks.
CREATE INDEX ix_system_async_task_owner ON ${s}.system_async_task (owner, id) WHERE owner IS NOT NULL;
-- PostgreSQL only, both tiny: the sweep finds overdue waiting tasks and due
-- retries without walking the whole claimable set.
CREATE INDEX ix_system_async_task_deadline ON ${s}.system_async_task (deadline_at)
  WHERE status IN ('QUEUED', 'RETRY_WAIT') AND deadline_at IS NOT NULL;
CREATE INDEX ix_system_async_task_retry_due ON ${s}.system_async_task (available_at) WHERE status = 'RETRY_WAIT';

CREATE TABLE ${s}.system_async_task_attempt (
  task_id text NOT NULL,
  attempt integer NOT NULL,
  worker_id text NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  outcome text,
  error_code text,
  PRIMARY KEY (task_id, attempt)
-- Room on each page so that closing an attempt (no indexed column changes) is a HOT update.
) WITH (fillfactor = 70);
CREATE INDEX ix_system_async_task_attempt_started ON ${s}.system_async_task_attempt (started_at);

CREATE TABLE ${s}.system_async_task_failure (
  id text PRIMARY KEY,
  task_id text NOT NULL,
  attempt integer NOT NULL,
  error_code text NOT NULL,
  error_message text NOT NULL,
  trace_id text,
  retryable boolean NOT NULL,
  failed_at timestamptz NOT NULL
);
CREATE INDEX ix_system_async_task_failure_task ON ${s}.system_async_task_failure (task_id, failed_at);
CREATE INDEX ix_system_async_task_failure_failed ON ${s}.system_async_task_failure (failed_at);

CREATE TABLE ${s}.system_async_task_dead_letter (
  id text PRIMARY KEY,
  original_task_id text NOT NULL,
  task_type text NOT NULL,
  owner text,
  payload_json text NOT NULL,
  error_code text NOT NULL,
  error_message text NOT NULL,
  trace_id text,
  attempt_count integer NOT NULL,
  moved_at timestamptz NOT NULL,
  replayed_at timestamptz,
  replay_task_id text,
  archived_at timestamptz
);
CREATE INDEX ix_system_async_task_dead_letter_moved ON ${s}.system_async_task_dead_letter (task_type, moved_at);
CREATE INDEX ix_system_async_task_dead_letter_task ON ${s}.system_async_task_dead_letter (original_task_id);

CREATE TABLE ${s}.system_async_task_policy (
  policy_key text PRIMARY KEY,
  task_type text,
  max_concurrency integer,
  max_attempts integer,
  retry_base_delay_ms bigint,
  enabled boolean NOT NULL DEFAULT true,
  update_time timestamptz NOT NULL
);

-- Ids for rows the database writes on its own (failures, dead letters):
-- UUIDv7 text, like the client's, so they sort by time.
CREATE FUNCTION ${s}.tasklease_uuid_v7() RETURNS text LANGUAGE sql VOLATILE AS $fn$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid::text
$fn$;
`,
  },
  {
    version: 2,
    name: 'worker registry',
    sql: (s) => `
CREATE TABLE ${s}.system_async_task_worker (
  worker_id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  task_types text NOT NULL,
  concurrency integer NOT NULL,
  started_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'outcome function',
    // Outcomes are written by tasklease_finish, which every migrate() installs (with tasklease_claim,
    // migrations.ts). No table changes: the version tells a database migrated by older code — without
    // the function — from one this code can work with (health reports the mismatch).
    sql: () => 'SELECT 1',
  },
  {
    version: 4,
    name: 'api tokens',
    // The HTTP server's tokens (src/store/tokens.ts): only the SHA-256 of each secret is kept.
    sql: (s) => `
CREATE TABLE ${s}.system_async_task_api_token (
  id text PRIMARY KEY,
  name text NOT NULL,
  role text NOT NULL,
  owner text,
  token_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz
);
`,
  },
  {
    version: 5,
    name: 'outcome function naming dead letters',
    // Outcomes are now written by tasklease_finish_outcomes (it answers the dead letter each failure for
    // good made), which every migrate() installs. No table changes: the version tells a database whose
    // functions predate it, so health reports the mismatch until migrate() runs. tasklease_finish stays
    // for processes of the previous release during a rolling upgrade.
    sql: () => 'SELECT 1',
  },
  {
    version: 6,
    name: 'lease expiries',
    // Leases a task lost (issue 11, B3): a task that lost two may be a poison pill, and runs alone
    // from then on; its first two expiries cost no attempt (rules/sweep.ts). The claim function
    // returns the task row, so it carries the column once migrate() reinstalls it.
    sql: (s) => `ALTER TABLE ${s}.system_async_task ADD COLUMN lease_expiries integer NOT NULL DEFAULT 0;`,
  },
  {
    version: 7,
    name: 'schedules',
    // Periodic tasks (src/core/schedule.ts): last_tick_at is the cursor, revision the compare-and-set token.
    sql: (s) => `
CREATE TABLE ${s}.system_async_task_schedule (
  schedule_key text PRIMARY KEY,
  task_type text NOT NULL,
  cron text NOT NULL,
  time_zone text NOT NULL,
  payload_json text NOT NULL,
  priority integer NOT NULL,
  max_attempts integer NOT NULL,
  owner text,
  catch_up integer NOT NULL,
  enabled smallint NOT NULL,
  revision bigint NOT NULL,
  last_tick_at timestamptz NOT NULL,
  last_task_id text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
`,
  },
  {
    version: 8,
    name: 'uniqueness windows',
    // unique_key / unique_states: see rules/unique.ts. The index covers keyed rows only, so tasks without a
    // `unique` option cost it nothing but the predicate test.
    sql: (s) => `
ALTER TABLE ${s}.system_async_task ADD COLUMN unique_key text, ADD COLUMN unique_states integer;
CREATE UNIQUE INDEX ux_system_async_task_unique ON ${s}.system_async_task ((${UNIQUE_HOLD_SQL})) WHERE unique_key IS NOT NULL;
`,
  },
  {
    version: 9,
    name: 'deadline index covers paused tasks',
    // The sweep's deadline step fails PAUSED tasks too (they stayed PAUSED forever past their deadline):
    // the partial index it walks must hold them, or that step would scan the table.
    sql: (s) => `
DROP INDEX IF EXISTS ${s}.ix_system_async_task_deadline;
CREATE INDEX ix_system_async_task_deadline ON ${s}.system_async_task (deadline_at)
  WHERE status IN ('QUEUED', 'RETRY_WAIT', 'PAUSED') AND deadline_at IS NOT NULL;
`,
  },
  {
    version: 10,
    name: 'trace parent',
    // The W3C traceparent of the span that submitted the task (OpenTelemetry): its own column, because
    // trace_id is the producer's correlation id (failure rows, dead letters, logs) and must keep meaning that.
    sql: (s) => `ALTER TABLE ${s}.system_async_task ADD COLUMN IF NOT EXISTS trace_parent text;`,
  },
  {
    version: 11,
    name: 'awaited tasks',
    // client.waitFor: a waiter's row tells the outcome function to NOTIFY for that task (finish.ts).
    // Empty while nobody waits, so the drain pays one probe of an empty table per outcome batch.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_awaited (
  task_id text NOT NULL,
  waiter_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, waiter_id)
);
`,
  },
  {
    version: 12,
    name: 'lease token',
    // Drawn by each claim, part of every fence (rules/leases.ts newLeaseToken). Rows leased before it hold ''.
    // A constant default: no table rewrite.
    sql: (s) => `ALTER TABLE ${s}.system_async_task ADD COLUMN IF NOT EXISTS lease_token text NOT NULL DEFAULT '';`,
  },
  {
    version: 13,
    name: 'operator actions',
    // Who paused, resumed, cancelled, retried, rescheduled or replayed a task, and when (rules/actions.ts):
    // written with the change in its statement, by operators only, so the drain never touches it.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_action (
  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  task_id text NOT NULL,
  action text NOT NULL,
  from_status text,
  to_status text,
  actor text NOT NULL,
  actor_name text,
  detail text,
  acted_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_action_task ON ${s}.system_async_task_action (task_id, acted_at);
`,
  },
  {
    version: 14,
    name: 'claim plans from indexes only',
    // The claim function, which every migrate() installs, now plans with sequential scans and JIT off (claim.ts,
    // "Plans"). No table changes: the version tells a database whose claim function predates it, so health
    // reports the mismatch until migrate() runs.
    sql: () => 'SELECT 1',
  },
  {
    version: 15,
    name: 'room on the page for each row version',
    // Every status change writes a new version of the task row (the status is in the partial indexes' predicates, so
    // no update is HOT) and every outcome one of the attempt row. Packed pages sent those versions to other pages:
    // a row-lock record more per update, no prefix/suffix compression of the logged row, and for the attempt row two
    // index entries (only 4 in 10 closes found room at fillfactor 70). With room left on each page, the drain writes
    // 413 B less WAL per task (bench/pg-wal-probe.ts, 20,000 tasks: 1,610 → 1,196 B; with the submit 2,031 → 1,617 B)
    // and both tables are smaller after a drain (741 + 389 → 618 + 338 B/task with their indexes, before vacuum).
    // Storage parameters: no rewrite, no lock that blocks writes; they apply to pages allocated from now on.
    sql: (s) => `ALTER TABLE ${s}.system_async_task SET (fillfactor = 50);
ALTER TABLE ${s}.system_async_task_attempt SET (fillfactor = 40);`,
  },
  {
    version: 16,
    name: 'uuid ids',
    // Task, failure and dead-letter ids (UUIDv7, made by the client or tasklease_uuid_v7) and every column naming a task
    // become uuid: 16 bytes where text took 37, in the row, in every index that holds an id (the primary keys, the
    // claim and owner indexes, the attempt key) and in the WAL of every row version — the drain writes 13 % less
    // (bench/pg-wal-levers-probe.ts). The seed's literals ('0190…') still compare: an untyped literal is read as uuid.
    // Converts in place: each table is rewritten under an ACCESS EXCLUSIVE lock (see CHANGELOG for the upgrade steps
    // and the time it takes); a row whose id is not a UUID stops the migration with PostgreSQL's message, changing nothing.
    sql: (s) => `
ALTER TABLE ${s}.system_async_task ALTER COLUMN id TYPE uuid USING id::uuid;
ALTER TABLE ${s}.system_async_task_attempt ALTER COLUMN task_id TYPE uuid USING task_id::uuid;
ALTER TABLE ${s}.system_async_task_failure ALTER COLUMN id TYPE uuid USING id::uuid, ALTER COLUMN task_id TYPE uuid USING task_id::uuid;
ALTER TABLE ${s}.system_async_task_dead_letter ALTER COLUMN id TYPE uuid USING id::uuid,
  ALTER COLUMN original_task_id TYPE uuid USING original_task_id::uuid, ALTER COLUMN replay_task_id TYPE uuid USING replay_task_id::uuid;
ALTER TABLE ${s}.system_async_task_awaited ALTER COLUMN task_id TYPE uuid USING task_id::uuid;
ALTER TABLE ${s}.system_async_task_action ALTER COLUMN task_id TYPE uuid USING task_id::uuid;
ALTER TABLE ${s}.system_async_task_schedule ALTER COLUMN last_task_id TYPE uuid USING last_task_id::uuid;
-- The database's own ids as uuid too (a function's result type cannot be replaced, only dropped and made anew).
DROP FUNCTION ${s}.tasklease_uuid_v7();
CREATE FUNCTION ${s}.tasklease_uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $fn$
  SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$fn$;
`,
  },
  {
    version: 17,
    name: 'moves',
    // `tasklease move` (client/move.ts): the checkpoint of a move into this database, one row per move, so that a
    // re-run after a crash resumes at the phase it reached, and an operator can read where it stands.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_move (
  move_key text PRIMARY KEY,
  source text NOT NULL,
  phase text NOT NULL,
  detail text,
  started_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
`,
  },
  {
    version: 18,
    name: 'partitioned history',
    // Finished work by finish day (UTC), for stores with historyMoveAfterMs (history.ts): cleanup moves terminal tasks
    // there in batches, with their attempts, failures and actions, and retention drops whole days — no row deletes
    // in a table of 100 million rows. Empty and never written without the option; reads look here too (reads.ts).
    // Same columns as the live tables in the same order (a move is `INSERT … SELECT *` of the deleted rows; a
    // migration that adds a column to a live table adds it here too — postgres-history.test.ts checks), plus the
    // task's finish time on the other three, which places them in their task's partition. fillfactor 100: never updated.
    sql: (s) => `
CREATE TABLE ${s}.system_async_task_history (LIKE ${s}.system_async_task INCLUDING DEFAULTS) PARTITION BY RANGE (finish_time);
ALTER TABLE ${s}.system_async_task_history ALTER COLUMN finish_time SET NOT NULL, ADD PRIMARY KEY (id, finish_time);
CREATE INDEX ix_system_async_task_history_owner ON ${s}.system_async_task_history (owner, id) WHERE owner IS NOT NULL;
CREATE TABLE ${s}.system_async_task_attempt_history (LIKE ${s}.system_async_task_attempt, task_finish_time timestamptz NOT NULL)
  PARTITION BY RANGE (task_finish_time);
ALTER TABLE ${s}.system_async_task_attempt_history ADD PRIMARY KEY (task_id, attempt, task_finish_time);
CREATE TABLE ${s}.system_async_task_failure_history (LIKE ${s}.system_async_task_failure, task_finish_time timestamptz NOT NULL)
  PARTITION BY RANGE (task_finish_time);
CREATE INDEX ix_system_async_task_failure_history_task ON ${s}.system_async_task_failure_history (task_id, failed_at);
CREATE TABLE ${s}.system_async_task_action_history (LIKE ${s}.system_async_task_action, task_finish_time timestamptz NOT NULL)
  PARTITION BY RANGE (task_finish_time);
CREATE INDEX ix_system_async_task_action_history_task ON ${s}.system_async_task_action_history (task_id, acted_at);
`,
  },
  {
    version: 19,
    name: 'flows',
    // Flows (rules/flows.ts): a task's flow and how many parents it still waits for (BLOCKED while > 0), on the live
    // table and its history (same columns, same order: a move is INSERT … SELECT *), and one row per dependency edge,
    // resolved once when its parent ends (fan_out: made by a handler's awaitChildren). Both new task columns are null
    // outside flows: no byte more per plain task. The primary key (parent first) serves the settle after a parent's
    // end; the child index a task's parents and a flow's edges.
    sql: (s) => `
ALTER TABLE ${s}.system_async_task ADD COLUMN flow_id uuid, ADD COLUMN pending_parents integer;
ALTER TABLE ${s}.system_async_task_history ADD COLUMN flow_id uuid, ADD COLUMN pending_parents integer;
CREATE INDEX ix_system_async_task_flow ON ${s}.system_async_task (flow_id, create_time) WHERE flow_id IS NOT NULL;
CREATE TABLE ${s}.system_async_task_dependency (
  parent_id uuid NOT NULL,
  child_id uuid NOT NULL,
  on_failure text NOT NULL,
  fan_out boolean NOT NULL DEFAULT false,
  resolved text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (parent_id, child_id)
);
CREATE INDEX ix_system_async_task_dependency_child ON ${s}.system_async_task_dependency (child_id);
`,
  },
  {
    version: 20,
    name: 'durable steps',
    // ctx.step(name, fn) (worker/steps.ts): one row per completed step, written fenced by the lease that ran it
    // (rules/steps.ts). cycle 0 is the task's current attempt cycle; an operator's retry or a dead-letter replay
    // sets the earlier cycle's rows to the attempt count it ended at (kept for the record, never reused). seq: the
    // step's place in its cycle (1, 2, …), counted under the task row's lock.
    // Written only by handlers that call ctx.step: the drain never touches it.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_step (
  task_id uuid NOT NULL,
  cycle integer NOT NULL DEFAULT 0,
  name text NOT NULL,
  seq integer NOT NULL,
  result_json text,
  attempt integer NOT NULL,
  worker_id text NOT NULL,
  recorded_at timestamptz NOT NULL,
  PRIMARY KEY (task_id, cycle, name)
);
`,
  },
  {
    version: 21,
    name: 'event subscriptions',
    // Fan-out by event (client/events.ts, rules/events.ts): which task types a publish of an event creates a task in.
    // COLLATE "C": listed and published in code-point order, as on SQLite and MySQL (binary collations).
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_subscription (
  event_name text COLLATE "C" NOT NULL,
  task_type text COLLATE "C" NOT NULL,
  priority integer,
  max_attempts integer,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (event_name, task_type)
);
`,
  },
  {
    version: 22,
    name: 'rate limits',
    // Rate limits (rules/rates.ts): N starts per period on a policy row (GLOBAL, TYPE:, OWNER:, KEY:), the task's
    // rate key (live table and history: same columns, same order), and the start log every rate-limited claim counts
    // in and appends to (one row per start per scope, pruned to the scope's period by the claims that write it, and to a
    // day by cleanup through the time index, whatever the policies). The
    // partial index answers the claim's "is any rate policy set" (claim.ts) without reading a policy row.
    sql: (s) => `
ALTER TABLE ${s}.system_async_task_policy ADD COLUMN rate_limit integer, ADD COLUMN rate_period_ms bigint;
CREATE INDEX ix_system_async_task_policy_rate ON ${s}.system_async_task_policy (policy_key) WHERE rate_limit IS NOT NULL;
ALTER TABLE ${s}.system_async_task ADD COLUMN rate_key text;
ALTER TABLE ${s}.system_async_task_history ADD COLUMN rate_key text;
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_rate_start (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  scope_key text NOT NULL,
  started_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_rate_start ON ${s}.system_async_task_rate_start (scope_key, started_at);
CREATE INDEX IF NOT EXISTS ix_system_async_task_rate_start_time ON ${s}.system_async_task_rate_start (started_at);
`,
  },
  {
    version: 23,
    name: 'sequences',
    // Sequences (rules/sequences.ts): a task's key and its place in the key (submit order), and one row per key that
    // numbers its tasks and serializes who runs next. The partial index holds a key's tasks that may still hold it or
    // wait (not SUCCESS, PARTIAL_SUCCESS or CANCELLED): the release reads the key's head and first waiting task there.
    sql: (s) => `
ALTER TABLE ${s}.system_async_task ADD COLUMN sequence_key text COLLATE "C", ADD COLUMN sequence_seq bigint;
ALTER TABLE ${s}.system_async_task_history ADD COLUMN sequence_key text COLLATE "C", ADD COLUMN sequence_seq bigint;
CREATE INDEX ix_system_async_task_sequence ON ${s}.system_async_task (sequence_key, sequence_seq)
  WHERE sequence_key IS NOT NULL AND status NOT IN ('SUCCESS', 'PARTIAL_SUCCESS', 'CANCELLED');
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_sequence (
  sequence_key text COLLATE "C" PRIMARY KEY,
  next_seq bigint NOT NULL,
  on_dead_letter text NOT NULL DEFAULT 'BLOCK',
  skipped_through bigint,
  updated_at timestamptz NOT NULL
);
`,
  },
  {
    version: 24,
    name: 'adaptive limits',
    // Adaptive limits (client/adaptive.ts, store/rules/adaptive.ts): per type, the controller's bounds and state; it writes
    // the type's policy max_concurrency (what the claim reads) in the transaction of its compare-and-set on
    // current_limit and changed_at. Every change of the limit, with its cause and actor, goes to the limit-change trail.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_adaptive (
  task_type text PRIMARY KEY,
  min_limit integer NOT NULL,
  max_limit integer NOT NULL,
  window_ms bigint NOT NULL,
  min_samples integer NOT NULL,
  failure_threshold double precision NOT NULL,
  codes_json text,
  decrease_factor double precision NOT NULL,
  increase_step integer NOT NULL,
  cooldown_ms bigint NOT NULL,
  enabled smallint NOT NULL,
  overridden smallint NOT NULL DEFAULT 0,
  override_until timestamptz,
  current_limit integer NOT NULL,
  changed_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_limit_change (
  id text PRIMARY KEY,
  task_type text NOT NULL,
  from_limit integer,
  to_limit integer,
  cause_kind text NOT NULL,
  cause text NOT NULL,
  actor text NOT NULL,
  actor_name text,
  changed_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_limit_change_type ON ${s}.system_async_task_limit_change (task_type, changed_at);
CREATE INDEX IF NOT EXISTS ix_system_async_task_limit_change_at ON ${s}.system_async_task_limit_change (changed_at);
`,
  },
  {
    version: 25,
    name: 'task logs',
    // Per-task logs (ctx.log, worker/logs.ts, rules/logs.ts): the lines a handler logged, per attempt, written fenced by
    // the lease in batches with the progress flush and at the attempt's end. seq: the line's place in the task (task-wide,
    // counted under the task row's lock). A row with dropped > 0 is a drop marker: that many older lines of its attempt
    // were dropped by the bounds; its seq is that of the newest line it stands for. Written only by handlers that log.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_log (
  task_id uuid NOT NULL,
  seq integer NOT NULL,
  attempt integer NOT NULL,
  level text NOT NULL,
  message text NOT NULL,
  fields_json text,
  dropped integer NOT NULL DEFAULT 0,
  logged_at timestamptz NOT NULL,
  PRIMARY KEY (task_id, seq)
);
`,
  },
  {
    version: 26,
    name: 'queue history',
    // Queue history (observe/queue-history.ts, store/queue-history.ts): per task type, minute (grain 'm') or hour ('h') and writing
    // process, additive counters and two fixed histograms (queue wait, run time; bucket bounds in rules/queue-history.ts). Each
    // process upserts one row per type per minute it saw events in; reads sum over processes; the cleanup rolls minute rows
    // up into hour rows (process '') and removes both past their retention.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_queue_stat (
  grain text NOT NULL,
  bucket_start timestamptz NOT NULL,
  task_type text NOT NULL,
  process_id text NOT NULL,
  submitted integer NOT NULL DEFAULT 0,
  started integer NOT NULL DEFAULT 0,
  succeeded integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  dead_lettered integer NOT NULL DEFAULT 0,
  wait_b0 integer NOT NULL DEFAULT 0,
  wait_b1 integer NOT NULL DEFAULT 0,
  wait_b2 integer NOT NULL DEFAULT 0,
  wait_b3 integer NOT NULL DEFAULT 0,
  wait_b4 integer NOT NULL DEFAULT 0,
  wait_b5 integer NOT NULL DEFAULT 0,
  wait_ms_sum bigint NOT NULL DEFAULT 0,
  run_b0 integer NOT NULL DEFAULT 0,
  run_b1 integer NOT NULL DEFAULT 0,
  run_b2 integer NOT NULL DEFAULT 0,
  run_b3 integer NOT NULL DEFAULT 0,
  run_b4 integer NOT NULL DEFAULT 0,
  run_b5 integer NOT NULL DEFAULT 0,
  run_ms_sum bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (grain, bucket_start, task_type, process_id)
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_queue_stat_at ON ${s}.system_async_task_queue_stat (grain, bucket_start);
`,
  },
  {
    version: 27,
    name: 'bulk operations',
    // Bulk operations (client/bulk.ts, store/bulk.ts): one row per operation over a task filter — who started it, when, the
    // filter and the action, the count the dry run saw, progress (the id cursor and the counts), and the lease of the process
    // running it, so that another process resumes it after a crash or a restart.
    sql: (s) => `
CREATE TABLE IF NOT EXISTS ${s}.system_async_task_bulk (
  id text PRIMARY KEY,
  action text NOT NULL,
  filter_json text NOT NULL,
  params_json text,
  status text NOT NULL,
  scope_owner text,
  actor text NOT NULL,
  actor_name text,
  matched bigint NOT NULL,
  processed bigint NOT NULL DEFAULT 0,
  changed bigint NOT NULL DEFAULT 0,
  cursor_id text,
  floor_id text,
  cancel_requested integer NOT NULL DEFAULT 0,
  error text,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS ix_system_async_task_bulk_status ON ${s}.system_async_task_bulk (status, lease_expires_at);
`,
  },
];
