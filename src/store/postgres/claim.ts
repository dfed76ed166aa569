/**
 * The claim: one round trip, many rows.
 *
 * Limits are invariants, so counting leased rows and claiming must be
 * serialized across every process where a limit can bind. A single SQL
 * statement cannot do that: its snapshot is taken before any lock it asks
 * for, so it could count rows that a concurrent claimer has already
 * replaced. The claim therefore lives in a PL/pgSQL function (installed by
 * migrate()): it takes transaction advisory locks, and only then runs its
 * counting and claiming query, which — the function being VOLATILE under
 * READ COMMITTED — gets a fresh snapshot that sees every claim committed
 * before the locks were granted. The locks last for the one-statement
 * transaction (milliseconds).
 *
 * Locks per limit scope. Each limit scope — the schema (the global limit)
 * and each task type — has a lock, taken either alone (exclusive) or side by
 * side (shared) plus one of its CLAIM_SLOTS slot locks. Side by side, a claim
 * takes at most SLOT_TASKS tasks and counts the scope's limit as lowered by
 * what the other slots may take ((CLAIM_SLOTS − 1) × SLOT_TASKS), so that
 * the scope's leases plus everything the claims in its slots may add never
 * exceed the limit: at most CLAIM_SLOTS claims are side by side, each within
 * SLOT_TASKS, and each counted the leases after its slot was granted. A claim
 * alone waits for every side-by-side claim of its scope to commit, and
 * counts exactly. A claim goes side by side only where the limit cannot bind
 * — the scope's leases (read before any lock) plus CLAIM_SLOTS × SLOT_TASKS
 * stay within it — and asks for at most SLOT_TASKS; otherwise (and whenever
 * owners are in play, whose scopes are known only once rows are picked) it
 * takes the schema's lock alone, which serializes it with every claim of the
 * schema, as every claim was before. Locks are taken in one order (the
 * schema, its slot, then the types by name with their slots): no deadlock.
 * So with the seed's limits (20 global) claims take turns as before, and
 * with limits far above the running tasks (a large fleet, issue 24) claims
 * of any types run side by side, claims near one type's limit take turns
 * only with that type's. Processes of earlier releases take the schema's
 * lock alone: they exclude, and wait for, the side-by-side claims.
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
 *
 * Plans: the function also runs with sequential scans off, so that no plan
 * of it depends on luck. PL/pgSQL keeps each statement's plan for the
 * session: a statement without parameters (the leases read before the
 * locks) from its first call, the others once the server settles on their
 * generic plan, which it may do after five calls. A bulk insert invalidates
 * none of them (ANALYZE does, when autovacuum gets to it). A session that
 * first claimed from a tiny table, where reading the table beats any index,
 * kept reading the whole table after 100,000 tasks arrived: 74.6 ms of a
 * 106.8 ms claim in an outside flood; in bench/pg-claim-plan-probe.ts the
 * leases' read took 70 ms and more, and the claiming query, once generic,
 * another 50–100 ms in its leased count and its UPDATE by id, where the
 * index plans take under a millisecond. (The claiming scan itself — per
 * type, in the claim index's order, with a LIMIT — walked the index in every
 * plan seen.) Every statement here has an index that answers it — the claim
 * and leased partial indexes, the primary keys — so with sequential scans
 * priced out the planner takes an index path at any row estimate, custom or
 * generic (test/store/postgres-claim-plan.test.ts: at 10 rows, right after
 * a bulk insert of 100,000 with no ANALYZE, and analyzed). The one table
 * without an index for its filter, the small worker registry, is still read
 * whole, but at the penalty's price (10^10), which would set off JIT
 * compilation — about 0.5 s per call in a generic plan — so JIT is off too;
 * no claim gains from it. The owners query (below) reads the types'
 * claimable rows through the claim index rather than the whole table.
 *
 * A claim made alone (claimTasks, not after outcomes) commits without
 * waiting for its WAL flush (synchronous_commit = off for its transaction):
 * one disk flush less between a submit and its handler. A database crash may
 * lose such a claim after the worker started the task; the task is then
 * claimed again, and the first execution stays fenced out by its lease token
 * (rules/leases.ts), which the second claim draws anew even when owner and
 * attempt number come out the same. Outcomes always commit synchronously,
 * and so does a claim that rides in their transaction (finishAndClaim) —
 * and every claim when the server replicates synchronously
 * (`synchronous_standby_names` set, as Patroni's synchronous_mode does): a
 * failover must not lose a claim whose handler started, or the next claim
 * of that task would start the same (task, attempt) again.
 *
 * Fairness (rules/fairness.ts): with p_live_ms, a type's room is cut to this
 * worker's fair share among the live workers of the type (the registry).
 * When owners are in play — an OWNER: policy exists, a default owner limit
 * is given, or the worker asks for fair owners — a second query ranks the
 * claimable rows per owner (a window over the types' claimable rows: it
 * costs O(backlog), which is why the plain query stays for everyone else),
 * keeps each owner within its room and takes the first rows of each owner
 * in turn. A window query cannot lock, so the chosen rows are locked after
 * (SKIP LOCKED, status re-checked) — the advisory lock already keeps other
 * claimers out.
 *
 * Rate limits (rules/rates.ts): while any rate policy exists (an EXISTS on
 * the policy table's partial rate index, read with the other policies: a
 * claim without rate policies reads nothing more), every claim takes the
 * schema's lock alone. With GLOBAL and TYPE: rates only, the plain query runs
 * with each type's room and the claim's cut to what the rates leave, and logs
 * its starts; with owner or key rates (or owners in play) a third query
 * counts the start log in each
 * scope's window, leaves out the rows of exhausted keys and owners, ranks
 * the rest per rate key and per owner (a window, as for owners), keeps each
 * within its rooms, and in the same statement leases, logs one start per
 * row per rated scope and prunes the log to each scope's period (and of
 * scopes without a policy any more). The per-key and per-owner ranks are
 * both taken over the candidates before either cut, so where a key's and an
 * owner's rates bind at once a claim may take fewer rows than it could —
 * never more.
 */
import type { Task } from '../../core/task.js';
import { KEY_POLICY_PREFIX, OWNER_POLICY_PREFIX } from '../../core/policy-keys.js';
import { taskFromRow, type Row } from '../rows.js';
import type { ClaimParams } from '../types.js';
import { run, type PgContext, statementName } from './connection.js';
import { decodePostgres } from './encode.js';
import { CLAIM_LOCK_SCOPE } from './migrations.js';
import {
  CLAIMABLE_SQL,
  GLOBAL_POLICY_SQL,
  keyGroupPolicySql,
  LEASED_SQL,
  literal,
  newLeaseToken,
  scopeRatePolicySql,
  STATUS_SQL,
  TYPE_POLICY_PREFIX_SQL,
  typeShareSql,
} from '../rules/index.js';

const ORDER = 'priority DESC, available_at, create_time, id';
const OWNER_PREFIX_SQL = literal(OWNER_POLICY_PREFIX);
const KEY_PREFIX_SQL = literal(KEY_POLICY_PREFIX);

/**
 * The claim's arguments, in order: claimTasks and finishAndClaim pass them from ClaimParams, with a new lease
 * token each time and whether the claim's own transaction may commit without its WAL flush (see above).
 */
export function claimArgs(params: ClaimParams, asyncCommit: boolean): unknown[] {
  return [
    params.workerId,
    params.taskTypes,
    Math.max(0, params.limit),
    params.leaseMs,
    params.globalConcurrency,
    params.typeConcurrency,
    params.liveWithinMs ?? null,
    params.ownerConcurrency ?? null,
    params.fairOwners ?? false,
    newLeaseToken(),
    asyncCommit,
  ];
}
export const CLAIM_ARG_COUNT = 11;

/**
 * Claims that cannot break a limit run side by side (see "Locks per limit
 * scope" above): at most SLOTS of them per scope at once, each taking at
 * most SLOT_TASKS tasks, and only while the scope's count leaves room for
 * all of them.
 */
export const CLAIM_SLOTS = 16;
export const SLOT_TASKS = 16;

/** One of a scope's slots (`scope`: a text expression): the first free one from a random start, else wait for the start's. */
function slotSql(scope: string): string {
  return `v_start := floor(random() * ${CLAIM_SLOTS})::integer;
    v_slotted := false;
    FOR i IN 0..${CLAIM_SLOTS - 1} LOOP
      v_slotted := pg_try_advisory_xact_lock(hashtextextended(${scope} || '#' || ((v_start + i) % ${CLAIM_SLOTS}), 0));
      EXIT WHEN v_slotted;
    END LOOP;
    IF NOT v_slotted THEN PERFORM pg_advisory_xact_lock(hashtextextended(${scope} || '#' || v_start, 0)); END IF;`;
}

export function claimFunctionSql(ctx: PgContext): string {
  const { task, policy } = ctx.tables;
  // The schema name passed checkSchemaName (letters, digits, underscore), so it is safe as a literal here.
  const scope = `'${CLAIM_LOCK_SCOPE}${ctx.schemaName}'`;
  const lockKey = `hashtextextended(${scope}, 0)`;
  const reserve = CLAIM_SLOTS * SLOT_TASKS;
  return `
CREATE OR REPLACE FUNCTION ${ctx.schema}.tasklease_claim(
  p_worker text, p_types text[], p_limit integer, p_lease_ms double precision, p_global integer, p_type_cap integer,
  p_live_ms double precision, p_owner_cap integer, p_fair_owners boolean, p_token text, p_async_commit boolean
) RETURNS SETOF ${task} LANGUAGE plpgsql VOLATILE
-- No bitmap scans (see claim.ts): the leased count must walk its index in order, so that it marks dead entries.
SET enable_bitmapscan = off
-- Index paths whatever the statistics or the plan cache say, and so no JIT either (see claim.ts, "Plans").
SET enable_seqscan = off
SET jit = off AS $claim$
DECLARE
  v_now timestamptz;
  v_global_cap integer;
  v_global_enabled boolean;
  v_owners boolean;
  v_rates boolean;
  -- A rate policy of an owner or a rate key: the candidates must be ranked per key and owner.
  v_rates_by_row boolean;
  v_limit integer := p_limit;
  -- Side by side (shared locks): what the other claims in a scope's slots may take, counted as taken.
  v_global_reserve integer := 0;
  v_shared_types text[] := '{}';
  v_leased_total bigint;
  v_leased_types text[];
  v_leased_counts bigint[];
  v_type text;
  v_cap integer;
  v_start integer;
  v_slotted boolean;
BEGIN
  SELECT g.max_concurrency, g.enabled,
    p_fair_owners OR p_owner_cap IS NOT NULL OR EXISTS (SELECT 1 FROM ${policy} o WHERE starts_with(o.policy_key, ${OWNER_PREFIX_SQL})),
    EXISTS (SELECT 1 FROM ${policy} r WHERE r.rate_limit IS NOT NULL)
  INTO v_global_cap, v_global_enabled, v_owners, v_rates
  FROM (SELECT 1) one LEFT JOIN ${policy} g ON g.policy_key = ${GLOBAL_POLICY_SQL};
  IF v_global_enabled IS FALSE THEN RETURN; END IF;
  v_global_cap := COALESCE(v_global_cap, p_global);
  IF NOT (v_owners OR v_rates OR p_limit > ${SLOT_TASKS} OR v_global_cap < ${reserve}) THEN
    -- The leases by type, read before any lock: whether a limit can bind.
    SELECT COALESCE(sum(c.n), 0), array_agg(c.task_type), array_agg(c.n) INTO v_leased_total, v_leased_types, v_leased_counts
    FROM (SELECT l.task_type, count(*) AS n FROM ${task} l WHERE l.status IN ${LEASED_SQL} GROUP BY l.task_type) c;
  END IF;
  -- Serialize count + claim with every other claimer of this schema (see claim.ts) — unless no limit can bind.
  IF v_leased_total IS NULL OR v_leased_total + ${reserve} > v_global_cap THEN
    PERFORM pg_advisory_xact_lock(${lockKey});
    -- Read again under the lock: a policy saved while this claim waited applies to it.
    SELECT max_concurrency, enabled INTO v_global_cap, v_global_enabled FROM ${policy} WHERE policy_key = ${GLOBAL_POLICY_SQL};
    IF v_global_enabled IS FALSE THEN RETURN; END IF;
    v_global_cap := COALESCE(v_global_cap, p_global);
    v_rates := EXISTS (SELECT 1 FROM ${policy} r WHERE r.rate_limit IS NOT NULL);
  ELSE
    PERFORM pg_advisory_xact_lock_shared(${lockKey});
    ${slotSql(scope)}
    v_limit := LEAST(p_limit, ${SLOT_TASKS});
    v_global_reserve := ${reserve - SLOT_TASKS};
    -- Each type in name order (every claimer locks in one order: no deadlock): side by side where its limit
    -- cannot bind, else alone among the claims of that type.
    FOR v_type, v_cap IN
      SELECT w.task_type, COALESCE(p.max_concurrency, p_type_cap)
      FROM (SELECT DISTINCT unnest(p_types) AS task_type) w
      LEFT JOIN ${policy} p ON p.policy_key = ${TYPE_POLICY_PREFIX_SQL} || w.task_type
      WHERE p.enabled IS NOT FALSE ORDER BY w.task_type
    LOOP
      IF v_cap >= ${reserve} AND COALESCE(v_leased_counts[array_position(v_leased_types, v_type)], 0) + ${reserve} <= v_cap THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended(${scope} || ':' || v_type, 0));
        ${slotSql(`${scope} || ':' || v_type`)}
        v_shared_types := v_shared_types || v_type;
      ELSE
        PERFORM pg_advisory_xact_lock(hashtextextended(${scope} || ':' || v_type, 0));
      END IF;
    END LOOP;
  END IF;
  -- Local to this transaction (no SET clause on the function for it, so it outlives the call): see claim.ts.
  -- Not under synchronous replication: there a claim lost with its primary would run again with the same attempt number.
  IF p_async_commit AND current_setting('synchronous_standby_names') = '' THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
  -- After the wait: a lease must last leaseMs from when it is granted.
  v_now := clock_timestamp();
  IF v_rates THEN
    v_rates_by_row := EXISTS (SELECT 1 FROM ${policy} r
      WHERE r.rate_limit IS NOT NULL AND (starts_with(r.policy_key, ${OWNER_PREFIX_SQL}) OR starts_with(r.policy_key, ${KEY_PREFIX_SQL})));
  END IF;
  IF v_rates AND NOT (v_rates_by_row OR v_owners) THEN
    RETURN QUERY ${plainQuery(ctx, true)};
  ELSIF v_rates THEN
    RETURN QUERY ${ratesQuery(ctx)};
  ELSIF v_owners THEN
    RETURN QUERY ${ownersQuery(ctx)};
  ELSE
    RETURN QUERY ${plainQuery(ctx)};
  END IF;
END
$claim$;
-- The previous signatures, for processes of earlier releases during a rolling upgrade: they fence without the
-- token (any token passes them) and commit synchronously; the oldest has no fairness either.
CREATE OR REPLACE FUNCTION ${ctx.schema}.tasklease_claim(
  p_worker text, p_types text[], p_limit integer, p_lease_ms double precision, p_global integer, p_type_cap integer,
  p_live_ms double precision, p_owner_cap integer, p_fair_owners boolean
) RETURNS SETOF ${task} LANGUAGE sql VOLATILE AS $claim9$
  SELECT * FROM ${ctx.schema}.tasklease_claim(p_worker, p_types, p_limit, p_lease_ms, p_global, p_type_cap,
    p_live_ms, p_owner_cap, p_fair_owners, md5(random()::text), false)
$claim9$;
CREATE OR REPLACE FUNCTION ${ctx.schema}.tasklease_claim(
  p_worker text, p_types text[], p_limit integer, p_lease_ms double precision, p_global integer, p_type_cap integer
) RETURNS SETOF ${task} LANGUAGE sql VOLATILE AS $claim6$
  SELECT * FROM ${ctx.schema}.tasklease_claim(p_worker, p_types, p_limit, p_lease_ms, p_global, p_type_cap, NULL, NULL, false)
$claim6$;`;
}

/** Counts, rooms and the wanted types: shared by both queries. */
function roomsSql(ctx: PgContext): string {
  const { task, policy, worker } = ctx.tables;
  return `WITH leased AS MATERIALIZED (
    -- One pass over the (small) leased partial index serves the global and every per-type count.
    SELECT l.task_type, count(*) AS n, count(*) FILTER (WHERE l.lease_owner = p_worker) AS mine
    FROM ${task} l WHERE l.status IN ${LEASED_SQL} GROUP BY l.task_type
  ),
  global_room AS MATERIALIZED (
    SELECT GREATEST(0, LEAST(v_limit, v_global_cap - v_global_reserve - COALESCE((SELECT sum(n) FROM leased), 0))) AS n
  ),
  live AS MATERIALIZED (
    -- The live workers of each type (the registry, refreshed every heartbeat): the fair share's divisor.
    SELECT x.task_type, count(*)::integer AS n
    FROM ${worker} r CROSS JOIN LATERAL jsonb_array_elements_text(r.task_types::jsonb) AS x(task_type)
    WHERE p_live_ms IS NOT NULL AND r.last_seen_at >= v_now - p_live_ms * interval '1 millisecond'
    GROUP BY x.task_type
  ),
  wanted AS (
    SELECT w.task_type,
      ${typeShareSql(`(COALESCE(p.max_concurrency, p_type_cap) - CASE WHEN w.task_type = ANY (v_shared_types) THEN ${CLAIM_SLOTS * SLOT_TASKS - SLOT_TASKS} ELSE 0 END)`, 'COALESCE(leased.n, 0)::integer', 'COALESCE(leased.mine, 0)::integer', 'COALESCE(live.n, 0)')} AS room
    FROM (SELECT DISTINCT unnest(p_types) AS task_type) w
    LEFT JOIN ${policy} p ON p.policy_key = ${TYPE_POLICY_PREFIX_SQL} || w.task_type
    LEFT JOIN leased ON leased.task_type = w.task_type
    LEFT JOIN live ON live.task_type = w.task_type
    WHERE p.enabled IS NOT FALSE
  )`;
}

/**
 * The plain claim; `rated`: with GLOBAL and TYPE: rates only (no owner or key rates, no owners in play), the same
 * query with each type's and the claim's room cut to what the rates leave, and the starts logged.
 */
function plainQuery(ctx: PgContext, rated = false): string {
  const { task } = ctx.tables;
  const big = 2147483647;
  const typeRate = rated ? `, COALESCE((SELECT n FROM scope_room WHERE policy_key = ${TYPE_POLICY_PREFIX_SQL} || wanted.task_type), ${big})` : '';
  const globalRate = rated
    ? `LEAST((SELECT n FROM global_room), COALESCE((SELECT n FROM scope_room WHERE policy_key = ${GLOBAL_POLICY_SQL}), ${big}))`
    : '(SELECT n FROM global_room)';
  return `${roomsSql(ctx)},${rated ? rateWindowSql(ctx) : ''}
  candidates AS (
    SELECT c.* FROM wanted CROSS JOIN LATERAL (
      SELECT t.id, t.priority, t.available_at, t.create_time FROM ${task} t
      WHERE t.task_type = wanted.task_type AND t.status IN ${CLAIMABLE_SQL}
        AND t.available_at <= v_now AND (t.deadline_at IS NULL OR t.deadline_at > v_now)
      ORDER BY t.${ORDER.replaceAll(', ', ', t.')}
      LIMIT GREATEST(0, LEAST(wanted.room, ${globalRate}${typeRate}))
      FOR UPDATE SKIP LOCKED
    ) c
    WHERE wanted.room > 0
  ),
  chosen AS (
    SELECT id FROM candidates ORDER BY ${ORDER} LIMIT ${globalRate}
  ),
  ${leaseSql(ctx, 'chosen', rated ? rateLogSql(ctx) : '')}`;
}

/** The rate policies, the starts in each scope's window (now - period, now], and each policy scope's room. */
function rateWindowSql(ctx: PgContext): string {
  const { policy, rateStart } = ctx.tables;
  return `
  rate_policy AS MATERIALIZED (
    SELECT p.policy_key, p.rate_limit, p.rate_period_ms FROM ${policy} p WHERE p.rate_limit IS NOT NULL
  ),
  rate_used AS MATERIALIZED (
    SELECT s.scope_key, count(*) AS n FROM ${rateStart} s CROSS JOIN LATERAL ${scopeRatePolicySql('s.scope_key', 'rate_policy')} rp
    WHERE s.started_at > v_now - rp.rate_period_ms * interval '1 millisecond'
    GROUP BY s.scope_key
  ),
  scope_room AS MATERIALIZED (
    SELECT p.policy_key, GREATEST(0, p.rate_limit - COALESCE(u.n, 0)) AS n FROM rate_policy p LEFT JOIN rate_used u ON u.scope_key = p.policy_key
  ),`;
}

/** Round robin across owners within each owner's room (see claim.ts). */
function ownersQuery(ctx: PgContext): string {
  const { task, policy } = ctx.tables;
  return `${roomsSql(ctx)},
  owner_leased AS MATERIALIZED (
    SELECT l.owner, count(*) AS n FROM ${task} l WHERE l.status IN ${LEASED_SQL} AND l.owner IS NOT NULL GROUP BY l.owner
  ),
  ranked AS (
    SELECT t.id, t.task_type, t.owner, t.priority, t.available_at, t.create_time,
      row_number() OVER (PARTITION BY t.owner ORDER BY t.${ORDER.replaceAll(', ', ', t.')}) AS owner_rank
    FROM ${task} t JOIN wanted ON wanted.task_type = t.task_type AND wanted.room > 0
    WHERE t.status IN ${CLAIMABLE_SQL} AND t.available_at <= v_now AND (t.deadline_at IS NULL OR t.deadline_at > v_now)
  ),
  fitting AS (
    SELECT r.*, row_number() OVER (PARTITION BY r.task_type ORDER BY r.owner_rank, ${ORDER}) AS type_rank
    FROM ranked r
    LEFT JOIN ${policy} op ON op.policy_key = ${OWNER_PREFIX_SQL} || r.owner
    LEFT JOIN owner_leased ol ON ol.owner = r.owner
    WHERE r.owner IS NULL
      OR (op.enabled IS NOT FALSE AND r.owner_rank <= COALESCE(op.max_concurrency, p_owner_cap, 2147483647) - COALESCE(ol.n, 0))
  ),
  picked AS (
    SELECT f.id FROM fitting f JOIN wanted ON wanted.task_type = f.task_type
    WHERE f.type_rank <= wanted.room
    ORDER BY f.owner_rank, f.${ORDER.replaceAll(', ', ', f.')} LIMIT (SELECT n FROM global_room)
  ),
  chosen AS (
    SELECT t.id FROM ${task} t WHERE t.id = ANY (ARRAY(SELECT picked.id FROM picked)) AND t.status IN ${CLAIMABLE_SQL}
    FOR UPDATE SKIP LOCKED
  ),
  ${leaseSql(ctx, 'chosen')}`;
}

/** Within every rate's room (see claim.ts, "Rate limits"); round robin across owners when owners are in play. */
function ratesQuery(ctx: PgContext): string {
  const { task, policy } = ctx.tables;
  const turn = (alias: string) => `CASE WHEN v_owners THEN ${alias}.owner_rank ELSE 0 END`;
  return `${roomsSql(ctx)},${rateWindowSql(ctx)}
  owner_leased AS MATERIALIZED (
    SELECT l.owner, count(*) AS n FROM ${task} l WHERE l.status IN ${LEASED_SQL} AND l.owner IS NOT NULL GROUP BY l.owner
  ),
  rated AS (
    SELECT t.id, t.task_type, t.owner, t.rate_key, t.priority, t.available_at, t.create_time,
      CASE WHEN ke.policy_key IS NOT NULL THEN ke.rate_limit ELSE kg.rate_limit END - COALESCE(ku.n, 0) AS key_room,
      orp.rate_limit - COALESCE(ou.n, 0) AS owner_rate_room
    FROM ${task} t JOIN wanted ON wanted.task_type = t.task_type AND wanted.room > 0
    LEFT JOIN rate_policy ke ON ke.policy_key = ${KEY_PREFIX_SQL} || t.rate_key
    LEFT JOIN rate_policy kg ON kg.policy_key = ${keyGroupPolicySql('t.rate_key')}
    LEFT JOIN rate_used ku ON ku.scope_key = ${KEY_PREFIX_SQL} || t.rate_key
    LEFT JOIN rate_policy orp ON orp.policy_key = ${OWNER_PREFIX_SQL} || t.owner
    LEFT JOIN rate_used ou ON ou.scope_key = ${OWNER_PREFIX_SQL} || t.owner
    WHERE t.status IN ${CLAIMABLE_SQL} AND t.available_at <= v_now AND (t.deadline_at IS NULL OR t.deadline_at > v_now)
  ),
  ranked AS (
    -- Exhausted keys and owners left out first: their rows never hide others'.
    SELECT r.*,
      row_number() OVER (PARTITION BY r.owner ORDER BY r.${ORDER.replaceAll(', ', ', r.')}) AS owner_rank,
      row_number() OVER (PARTITION BY r.rate_key ORDER BY r.${ORDER.replaceAll(', ', ', r.')}) AS key_rank
    FROM rated r WHERE (r.key_room IS NULL OR r.key_room > 0) AND (r.owner_rate_room IS NULL OR r.owner_rate_room > 0)
  ),
  fitting AS (
    SELECT r.*, row_number() OVER (PARTITION BY r.task_type ORDER BY ${turn('r')}, r.${ORDER.replaceAll(', ', ', r.')}) AS type_rank
    FROM ranked r
    LEFT JOIN ${policy} op ON op.policy_key = ${OWNER_PREFIX_SQL} || r.owner
    LEFT JOIN owner_leased ol ON ol.owner = r.owner
    WHERE (r.key_room IS NULL OR r.rate_key IS NULL OR r.key_rank <= r.key_room)
      AND (r.owner_rate_room IS NULL OR r.owner_rank <= r.owner_rate_room)
      AND (r.owner IS NULL
        OR (op.enabled IS NOT FALSE AND r.owner_rank <= COALESCE(op.max_concurrency, p_owner_cap, 2147483647) - COALESCE(ol.n, 0)))
  ),
  picked AS (
    SELECT f.id FROM fitting f JOIN wanted ON wanted.task_type = f.task_type
    LEFT JOIN scope_room tr ON tr.policy_key = ${TYPE_POLICY_PREFIX_SQL} || f.task_type
    WHERE f.type_rank <= LEAST(wanted.room, COALESCE(tr.n, 2147483647))
    ORDER BY ${turn('f')}, f.${ORDER.replaceAll(', ', ', f.')}
    LIMIT LEAST((SELECT n FROM global_room), COALESCE((SELECT n FROM scope_room WHERE policy_key = ${GLOBAL_POLICY_SQL}), 2147483647))
  ),
  chosen AS (
    SELECT t.id FROM ${task} t WHERE t.id = ANY (ARRAY(SELECT picked.id FROM picked)) AND t.status IN ${CLAIMABLE_SQL}
    FOR UPDATE SKIP LOCKED
  ),
  ${leaseSql(ctx, 'chosen', rateLogSql(ctx))}`;
}

/** One start log row per claimed row per rated scope; the log pruned to each scope's period (rows of scopes without a policy go). */
function rateLogSql(ctx: PgContext): string {
  const { rateStart } = ctx.tables;
  return `rate_log AS (
    INSERT INTO ${rateStart} (scope_key, started_at)
    SELECT sc.scope_key, v_now FROM claimed c
    CROSS JOIN LATERAL (VALUES (${GLOBAL_POLICY_SQL}), (${TYPE_POLICY_PREFIX_SQL} || c.task_type), (${OWNER_PREFIX_SQL} || c.owner),
      (${KEY_PREFIX_SQL} || c.rate_key)) sc(scope_key)
    WHERE sc.scope_key IS NOT NULL AND EXISTS ${scopeRatePolicySql('sc.scope_key', 'rate_policy')}
  ),
  rate_prune AS (
    DELETE FROM ${rateStart} s
    WHERE NOT EXISTS (SELECT 1 FROM ${scopeRatePolicySql('s.scope_key', 'rate_policy')} rp
      WHERE s.started_at > v_now - rp.rate_period_ms * interval '1 millisecond')
  )`;
}

/** Leases the rows of `chosen` and inserts their attempt rows; the query's result. */
function leaseSql(ctx: PgContext, chosen: string, more = ''): string {
  const { task, attempt } = ctx.tables;
  return `claimed AS (
    UPDATE ${task} t SET status = ${STATUS_SQL.RUNNING}, lease_owner = p_worker, lease_token = p_token,
      lease_until = v_now + p_lease_ms * interval '1 millisecond', attempt_count = t.attempt_count + 1,
      start_time = COALESCE(t.start_time, v_now), update_time = v_now
    -- = ANY(ARRAY(…)): a primary-key lookup whatever the planner guesses about chosen's size
    WHERE t.id = ANY (ARRAY(SELECT ${chosen}.id FROM ${chosen}))
    RETURNING t.*
  ),
  attempts AS (
    INSERT INTO ${attempt} (task_id, attempt, worker_id, started_at)
    SELECT claimed.id, claimed.attempt_count, p_worker, v_now FROM claimed
  )${
    more
      ? `,
  ${more}`
      : ''
  }
  SELECT * FROM claimed ORDER BY claimed.${ORDER.replaceAll(', ', ', claimed.')}`;
}

const CLAIM_CALL = Array.from({ length: CLAIM_ARG_COUNT }, (_, i) => `$${i + 1}`).join(', ');

export async function claimTasks(ctx: PgContext, params: ClaimParams): Promise<Task[]> {
  if (params.limit <= 0 || params.taskTypes.length === 0) return [];
  const result = await run<Row>(
    ctx.pool,
    'claiming tasks',
    `SELECT * FROM ${ctx.schema}.tasklease_claim(${CLAIM_CALL})`,
    claimArgs(params, true),
    statementName(ctx, 'claim'),
    params.onSent,
  );
  return result.rows.map((row) => taskFromRow(row, decodePostgres));
}
