/**
 * Partitioned history (issue 25), with the option historyMoveAfterMs: the
 * retention cleanup moves terminal tasks finished more than that long ago
 * out of the task table into the *_history tables (migration 18), one
 * partition per UTC day of the task's finish, with their attempts, failures
 * and operator actions (their durable steps are deleted: a run's working
 * state, not its record); and retention drops whole days instead of deleting
 * rows. The task table then holds the live work and a few hours of finished
 * tasks, whatever the retention: its indexes and its vacuum stay small, and
 * the drop writes no row of WAL.
 *
 * The hot path never touches these tables: a finish writes what it wrote
 * before, the move is the cleanup's. A moved task reads like a kept one (get,
 * list, attempts, failures, actions: reads.ts) but is out of reach of status
 * changes, exactly as a purged one — its dead letters are archived as the
 * purge archives them.
 *
 * Functions installed by every migrate() (as the claim and outcome functions):
 * - tasklease_history_partitions(first, last): the missing day partitions of
 *   the four tables, from first's day to last's;
 * - tasklease_history_move(cutoff, move_before, batch): one batch moved;
 * - tasklease_history_drop(cutoff): the oldest day dropped if it ends by
 *   cutoff, with how many rows it held (the cleanup calls again after a drop).
 * The partition DDL and the drop take one transaction lock per schema: two
 * cleaners never create or drop the same partition.
 */
import { TERMINAL_SQL } from '../rules/sql.js';
import type { PurgeResult } from '../types.js';
import { run, type PgContext } from './connection.js';

/** The partitioned tables (migration 18); each day's partition is `<table>_YYYYMMDD`. */
const HISTORY_TABLES = [
  'system_async_task_history',
  'system_async_task_attempt_history',
  'system_async_task_failure_history',
  'system_async_task_action_history',
] as const;

export function historyFunctionsSql(ctx: PgContext): string {
  const s = ctx.schema;
  const { task, attempt, failure, deadLetter, action, step, log } = ctx.tables;
  // The schema as a text literal for format() (validated: letters, digits, underscores; quoted by quoteIdent).
  const schemaText = `'${s}'`;
  const lock = `PERFORM pg_advisory_xact_lock(hashtextextended('tasklease.history:' || ${schemaText}, 0))`;
  const parents = `ARRAY[${HISTORY_TABLES.map((name) => `'${name}'`).join(', ')}]`;
  return `
CREATE OR REPLACE FUNCTION ${s}.tasklease_history_partitions(first timestamptz, last timestamptz) RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  day date := (first AT TIME ZONE 'UTC')::date;
  made integer := 0;
  parent text;
BEGIN
  ${lock};
  WHILE day <= (last AT TIME ZONE 'UTC')::date LOOP
    FOREACH parent IN ARRAY ${parents} LOOP
      IF to_regclass(format('%s.%I', ${schemaText}, parent || '_' || to_char(day, 'YYYYMMDD'))) IS NULL THEN
        -- CREATE TABLE … PARTITION OF would lock the parent ACCESS EXCLUSIVE until the batch commits, blocking every
        -- history read; ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE, which reads and inserts pass (the empty
        -- table's indexes are built by the attach, its range checked by a scan of nothing).
        EXECUTE format('CREATE TABLE %s.%I (LIKE %s.%I INCLUDING DEFAULTS)', ${schemaText}, parent || '_' || to_char(day, 'YYYYMMDD'),
          ${schemaText}, parent);
        EXECUTE format('ALTER TABLE %s.%I ATTACH PARTITION %s.%I FOR VALUES FROM (%L) TO (%L)', ${schemaText}, parent,
          ${schemaText}, parent || '_' || to_char(day, 'YYYYMMDD'),
          day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
        made := made + 1;
      END IF;
    END LOOP;
    day := day + 1;
  END LOOP;
  RETURN made;
END
$fn$;

-- One batch: terminal tasks finished before move_before (or cutoff, if later), oldest ids first, out of the task table; those finished
-- from cutoff on go into the history, older ones (past retention already) are only deleted — one walk of the
-- primary key for both (the task table has no finish-time index: a second walk for the deletes alone would read
-- every row left each batch). FOR UPDATE SKIP LOCKED re-checks status and finish time on the newest row version,
-- as the purge does: a task an operator retried since stays. Answers what it deleted for good and what it moved.
CREATE OR REPLACE FUNCTION ${s}.tasklease_history_move(cutoff timestamptz, move_before timestamptz, batch integer,
  OUT tasks integer, OUT attempts integer, OUT failures integer, OUT archived integer, OUT moved integer) LANGUAGE plpgsql AS $fn$
DECLARE
  ids uuid[];
  first timestamptz;
  last timestamptz;
  gone integer;
  gone_attempts integer;
  gone_failures integer;
BEGIN
  SELECT array_agg(id), min(finish_time) FILTER (WHERE finish_time >= cutoff), max(finish_time) INTO ids, first, last FROM (
    SELECT id, finish_time FROM ${task}
    WHERE finish_time IS NOT NULL AND finish_time < greatest(move_before, cutoff) AND status IN ${TERMINAL_SQL}
    ORDER BY id LIMIT batch FOR UPDATE SKIP LOCKED) doomed;
  tasks := 0; attempts := 0; failures := 0; archived := 0; moved := 0;
  IF ids IS NULL THEN RETURN; END IF;
  IF first IS NOT NULL THEN PERFORM ${s}.tasklease_history_partitions(first, last); END IF;
  WITH gone_tasks AS (DELETE FROM ${task} t WHERE t.id = ANY (ids) RETURNING t.*),
  kept AS (INSERT INTO ${s}.system_async_task_history SELECT * FROM gone_tasks WHERE finish_time >= cutoff RETURNING 1),
  gone_attempt_rows AS (DELETE FROM ${attempt} a USING gone_tasks g WHERE a.task_id = g.id RETURNING a.*, g.finish_time),
  kept_attempts AS (
    INSERT INTO ${s}.system_async_task_attempt_history SELECT * FROM gone_attempt_rows WHERE finish_time >= cutoff RETURNING 1),
  gone_failure_rows AS (DELETE FROM ${failure} f USING gone_tasks g WHERE f.task_id = g.id RETURNING f.*, g.finish_time),
  kept_failures AS (
    INSERT INTO ${s}.system_async_task_failure_history SELECT * FROM gone_failure_rows WHERE finish_time >= cutoff RETURNING 1),
  gone_actions AS (DELETE FROM ${action} x USING gone_tasks g WHERE x.task_id = g.id RETURNING x.*, g.finish_time),
  kept_actions AS (INSERT INTO ${s}.system_async_task_action_history SELECT * FROM gone_actions WHERE finish_time >= cutoff),
  -- Durable steps are a run's working state, not its record: deleted with the move, never kept in the history.
  gone_steps AS (DELETE FROM ${step} x USING gone_tasks g WHERE x.task_id = g.id),
  -- Per-task logs are bounded working notes of the runs: deleted with the move too (read them before the task ages out).
  gone_logs AS (DELETE FROM ${log} x USING gone_tasks g WHERE x.task_id = g.id),
  archived_letters AS (
    UPDATE ${deadLetter} d SET archived_at = now() FROM gone_tasks g WHERE d.original_task_id = g.id AND d.archived_at IS NULL RETURNING 1),
  -- a flow's edges are not kept in the history: a child that leaves the task table takes its edges along
  gone_edges AS (DELETE FROM ${ctx.tables.dependency} e USING gone_tasks g WHERE e.child_id = g.id)
  SELECT (SELECT count(*) FROM gone_tasks), (SELECT count(*) FROM kept), (SELECT count(*) FROM gone_attempt_rows),
         (SELECT count(*) FROM kept_attempts), (SELECT count(*) FROM gone_failure_rows), (SELECT count(*) FROM kept_failures),
         (SELECT count(*) FROM archived_letters)
  INTO gone, moved, gone_attempts, attempts, gone_failures, failures, archived;
  tasks := gone - moved; attempts := gone_attempts - attempts; failures := gone_failures - failures;
END
$fn$;

-- Drops the oldest day's partitions (all four tables) if that day ends at or before cutoff, with how many rows
-- they held. The
-- rows are counted first (one read of each day; the drop logs nothing per row), then each drop locks its parent
-- ACCESS EXCLUSIVE until the statement ends: it waits at most 2 s for a history read to finish (so the reads
-- queued behind it never wait longer), else that day waits for the next cleanup. Nothing inserts into a day
-- this drops: the move writes only days from its cut-off's on.
CREATE OR REPLACE FUNCTION ${s}.tasklease_history_drop(cutoff timestamptz,
  OUT tasks bigint, OUT attempts bigint, OUT failures bigint, OUT partitions integer) LANGUAGE plpgsql AS $fn$
DECLARE
  names text[];
  parent_of text[];
  counts bigint[] := '{}';
  n bigint;
BEGIN
  ${lock};
  tasks := 0; attempts := 0; failures := 0; partitions := 0;
  SELECT array_agg(c.relname ORDER BY c.relname), array_agg(p.relname ORDER BY c.relname) INTO names, parent_of FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent JOIN pg_namespace ns ON ns.oid = p.relnamespace
    WHERE ns.nspname = ${literalOf(ctx.schemaName)} AND p.relname = ANY (${parents}) AND c.relname ~ '_[0-9]{8}$'
      AND (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= cutoff
      -- The oldest such day only: a call stays well inside the statement timeout however many days are due
      -- (the cleanup calls again while a day was dropped).
      AND right(c.relname, 8) = (SELECT min(right(d.relname, 8)) FROM pg_inherits di JOIN pg_class d ON d.oid = di.inhrelid
                                 JOIN pg_class dp ON dp.oid = di.inhparent JOIN pg_namespace dn ON dn.oid = dp.relnamespace
                                 WHERE dn.nspname = ${literalOf(ctx.schemaName)} AND dp.relname = ANY (${parents})
                                   AND d.relname ~ '_[0-9]{8}$');
  IF names IS NULL THEN RETURN; END IF;
  FOR k IN 1 .. array_length(names, 1) LOOP
    EXECUTE format('SELECT count(*) FROM %s.%I', ${schemaText}, names[k]) INTO n;
    counts := counts || n;
  END LOOP;
  PERFORM set_config('lock_timeout', '2000', true);
  FOR k IN 1 .. array_length(names, 1) LOOP
    BEGIN
      EXECUTE format('LOCK TABLE %s.%I IN ACCESS EXCLUSIVE MODE', ${schemaText}, parent_of[k]);
      EXECUTE format('DROP TABLE %s.%I', ${schemaText}, names[k]);
      IF parent_of[k] = 'system_async_task_history' THEN tasks := tasks + counts[k];
      ELSIF parent_of[k] = 'system_async_task_attempt_history' THEN attempts := attempts + counts[k];
      ELSIF parent_of[k] = 'system_async_task_failure_history' THEN failures := failures + counts[k]; END IF;
      partitions := partitions + 1;
    EXCEPTION WHEN lock_not_available THEN
      NULL;
    END;
  END LOOP;
END
$fn$;
`;
}

/** The schema name (validated at the edge) as an SQL text literal. */
function literalOf(name: string): string {
  return `'${name.replace(/'/g, "''")}'`;
}

/**
 * One cleanup batch with the option: the history days wholly before `cutoff`
 * dropped, then one batch of terminal tasks finished before now − moveAfterMs
 * out of the task table (moved, or deleted when already past `cutoff`).
 */
export async function dropAndMove(ctx: PgContext, cutoff: Date, moveAfterMs: number, batchSize: number): Promise<Required<PurgeResult>> {
  const dropped = await run<{ tasks: string; attempts: string; failures: string; partitions: number }>(
    ctx.pool,
    'dropping history partitions',
    `SELECT * FROM ${ctx.schema}.tasklease_history_drop($1)`,
    [cutoff],
  );
  const moved = await run<{ tasks: number; attempts: number; failures: number; archived: number; moved: number }>(
    ctx.pool,
    'moving finished tasks to history',
    `SELECT * FROM ${ctx.schema}.tasklease_history_move($1, now() - $2 * interval '1 millisecond', $3)`,
    [cutoff, moveAfterMs, batchSize],
  );
  const drop = dropped.rows[0]!;
  const move = moved.rows[0]!;
  return {
    tasks: Number(drop.tasks) + move.tasks,
    attempts: Number(drop.attempts) + move.attempts,
    failures: Number(drop.failures) + move.failures,
    deadLettersArchived: move.archived,
    tasksMoved: move.moved,
    historyPartitionsDropped: drop.partitions,
  };
}
