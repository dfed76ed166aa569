/**
 * The claim: one round trip, many rows.
 *
 * Limits are invariants, so counting leased rows and claiming must be
 * serialized across every process. A single SQL statement cannot do that:
 * its snapshot is taken before any lock it asks for, so it could count rows
 * that a concurrent claimer has already replaced. The claim therefore lives
 * in a PL/pgSQL function (installed by migrate()): it takes a transaction
 * advisory lock keyed by the schema, and only then runs its counting and
 * claiming query, which — the function being VOLATILE under READ COMMITTED —
 * gets a fresh snapshot that sees every claim committed before the lock was
 * granted. The lock lasts for the one-statement transaction (milliseconds).
 *
 * Inside, each type with room is asked for at most min(its room, global
 * room) rows through the per-type partial claim index with FOR UPDATE SKIP
 * LOCKED, the union is ordered and cut to the global room, the rows are
 * leased and their attempt rows inserted — all in the same statement.
 *
 * The function runs with bitmap scans off. Every finished task leaves a dead
 * entry in the leased partial index until vacuum reaches it. A plain index
 * scan marks such entries dead (LP_DEAD) when it meets them, so the next
 * count skips them; a bitmap scan never does, and every claim visited the
 * heap for every task finished since the last vacuum: 30,921 entries for 520
 * live leases, 10 ms of a 22 ms claim, halfway through a 60k drain (bench/
 * pg-backlog-probe.ts with EXPLAIN_AT=30000). Index scans keep the count at
 * the size of the live leases (0.15 ms there).
 */
import type { Task } from '../../core/task.js';
import { taskFromRow, type Row } from '../rows.js';
import type { ClaimParams } from '../types.js';
import { run, type PgContext } from './connection.js';
import { decodePostgres } from './encode.js';
import { CLAIM_LOCK_SCOPE } from './migrations.js';
import { CLAIMABLE_SQL, GLOBAL_POLICY_SQL, LEASED_SQL, STATUS_SQL, TYPE_POLICY_PREFIX_SQL } from '../rules/index.js';

export function claimFunctionSql(ctx: PgContext): string {
  const { task, attempt, policy } = ctx.tables;
  // The schema name passed checkSchemaName (letters, digits, underscore), so it is safe as a literal here.
  const lockKey = `hashtextextended('${CLAIM_LOCK_SCOPE}${ctx.schemaName}', 0)`;
  return `
CREATE OR REPLACE FUNCTION ${ctx.schema}.tasklease_claim(
  p_worker text, p_types text[], p_limit integer, p_lease_ms double precision, p_global integer, p_type_cap integer
) RETURNS SETOF ${task} LANGUAGE plpgsql VOLATILE
-- No bitmap scans (see claim.ts): the leased count must walk its index in order, so that it marks dead entries.
SET enable_bitmapscan = off AS $claim$
DECLARE
  v_now timestamptz;
  v_global_cap integer;
  v_global_enabled boolean;
BEGIN
  -- Serialize count + claim with every other claimer of this schema (see claim.ts).
  PERFORM pg_advisory_xact_lock(${lockKey});
  -- After the wait: a lease must last leaseMs from when it is granted.
  v_now := clock_timestamp();
  SELECT max_concurrency, enabled INTO v_global_cap, v_global_enabled FROM ${policy} WHERE policy_key = ${GLOBAL_POLICY_SQL};
  IF v_global_enabled IS FALSE THEN RETURN; END IF;
  RETURN QUERY
  WITH leased AS MATERIALIZED (
    -- One pass over the (small) leased partial index serves the global and every per-type count.
    SELECT l.task_type, count(*) AS n FROM ${task} l WHERE l.status IN ${LEASED_SQL} GROUP BY l.task_type
  ),
  global_room AS MATERIALIZED (
    SELECT GREATEST(0, LEAST(p_limit, COALESCE(v_global_cap, p_global) - COALESCE((SELECT sum(n) FROM leased), 0))) AS n
  ),
  wanted AS (
    SELECT w.task_type, COALESCE(p.max_concurrency, p_type_cap) - COALESCE(leased.n, 0) AS room
    FROM (SELECT DISTINCT unnest(p_types) AS task_type) w
    LEFT JOIN ${policy} p ON p.policy_key = ${TYPE_POLICY_PREFIX_SQL} || w.task_type
    LEFT JOIN leased ON leased.task_type = w.task_type
    WHERE p.enabled IS NOT FALSE
  ),
  candidates AS (
    SELECT c.* FROM wanted CROSS JOIN LATERAL (
      SELECT t.id, t.priority, t.available_at, t.create_time FROM ${task} t
      WHERE t.task_type = wanted.task_type AND t.status IN ${CLAIMABLE_SQL}
        AND t.available_at <= v_now AND (t.deadline_at IS NULL OR t.deadline_at > v_now)
      ORDER BY t.priority DESC, t.available_at, t.create_time, t.id
      LIMIT GREATEST(0, LEAST(wanted.room, (SELECT n FROM global_room)))
      FOR UPDATE SKIP LOCKED
    ) c
    WHERE wanted.room > 0
  ),
  chosen AS (
    SELECT id FROM candidates ORDER BY priority DESC, available_at, create_time, id LIMIT (SELECT n FROM global_room)
  ),
  claimed AS (
    UPDATE ${task} t SET status = ${STATUS_SQL.RUNNING}, lease_owner = p_worker,
      lease_until = v_now + p_lease_ms * interval '1 millisecond', attempt_count = t.attempt_count + 1,
      start_time = COALESCE(t.start_time, v_now), update_time = v_now
    -- = ANY(ARRAY(…)): a primary-key lookup whatever the planner guesses about chosen's size
    WHERE t.id = ANY (ARRAY(SELECT chosen.id FROM chosen))
    RETURNING t.*
  ),
  attempts AS (
    INSERT INTO ${attempt} (task_id, attempt, worker_id, started_at)
    SELECT claimed.id, claimed.attempt_count, p_worker, v_now FROM claimed
  )
  SELECT * FROM claimed ORDER BY claimed.priority DESC, claimed.available_at, claimed.create_time, claimed.id;
END
$claim$;`;
}

export async function claimTasks(ctx: PgContext, params: ClaimParams): Promise<Task[]> {
  if (params.limit <= 0 || params.taskTypes.length === 0) return [];
  const result = await run<Row>(
    ctx.pool,
    'claiming tasks',
    `SELECT * FROM ${ctx.schema}.tasklease_claim($1, $2, $3, $4, $5, $6)`,
    [params.workerId, params.taskTypes, params.limit, params.leaseMs, params.globalConcurrency, params.typeConcurrency],
    `${ctx.statementPrefix}claim`,
  );
  return result.rows.map((row) => taskFromRow(row, decodePostgres));
}
