/**
 * The SQLite claim. Runs inside BEGIN IMMEDIATE (the caller's), so the counts
 * below cannot change before the claimed rows are written: the global,
 * per-type and per-owner limits hold however many processes claim at once.
 * Fair shares and the round robin across owners: rules/fairness.ts. Rate
 * limits (rules/rates.ts): with a rate policy set, the start log is read and
 * written in the same transaction; a plain claim reads only its policy rows,
 * which now also say whether any rate policy exists.
 */
import { GLOBAL_POLICY_KEY, OWNER_POLICY_PREFIX, ownerPolicyKey, typePolicyKey } from '../../core/policy-keys.js';
import type { Task } from '../../core/task.js';
import { claimOrder } from '../claim-order.js';
import { taskFromRow, type Row } from '../rows.js';
import {
  CLAIMABLE_SQL,
  LEASED_SQL,
  liveByType,
  newLeaseToken,
  ownerRoom,
  ownersInPlay,
  pickRoundRobin,
  STATUS_SQL,
  typeRooms,
  pickWithinRates,
  RateBudget,
  ratePolicies,
  ratesByRow,
  type ClaimPolicy,
  type TypeLeases,
} from '../rules/index.js';
import type { ClaimParams } from '../types.js';
import { statement, type Db } from './connection.js';
import { decodeSqlite, fromSqliteTime, toSqliteTime } from './encode.js';

const DUE = `status IN ${CLAIMABLE_SQL} AND available_at <= ? AND (deadline_at IS NULL OR deadline_at > ?)`;
const ORDER = 'priority DESC, available_at, create_time, id';

/** A type's claimable rows in claim order; parameters: type, now, now, limit (explain.ts shows its plan). */
export const CANDIDATES_SQL = `SELECT id, task_type, priority, available_at, create_time FROM system_async_task
     WHERE task_type = ? AND ${DUE} ORDER BY priority DESC, available_at, create_time LIMIT ?`;

export function claim(db: Db, params: ClaimParams, nowMs: number): Task[] {
  const now = toSqliteTime(nowMs);
  const { policies, rated } = readPolicies(db, [GLOBAL_POLICY_KEY, ...params.taskTypes.map(typePolicyKey)]);
  const global = policies.get(GLOBAL_POLICY_KEY);
  if (global && !global.enabled) return [];
  const leased = leasesByType(db, params.workerId);
  const leasedTotal = [...leased.values()].reduce((sum, { n }) => sum + n, 0);
  const room = Math.min(params.limit, (global?.maxConcurrency ?? params.globalConcurrency) - leasedTotal);
  if (room <= 0) return [];
  const live = params.liveWithinMs === undefined ? new Map<string, number>() : liveWorkers(db, toSqliteTime(nowMs - params.liveWithinMs));
  const rooms = typeRooms(params.taskTypes, params, (type) => policies.get(typePolicyKey(type)), leased, live);
  if (rated) return claimWithinRates(db, params, rooms, room, nowMs);
  const chosen = ownersInPlay(params, ownerPolicyExists(db)) ? pickByOwner(db, params, rooms, room, now) : pickPlain(db, rooms, room, now);
  return lease(db, params, chosen, nowMs);
}

/** A claim while a rate policy exists: counts the start log, picks within every rate's room, logs its starts. */
function claimWithinRates(db: Db, params: ClaimParams, rooms: Map<string, number>, claimRoom: number, nowMs: number): Task[] {
  const now = toSqliteTime(nowMs);
  const policies = ratePolicies(
    statement(db, 'SELECT policy_key, rate_limit, rate_period_ms FROM system_async_task_policy WHERE rate_limit IS NOT NULL').all() as Row[],
  );
  const maxPeriod = Math.max(0, ...[...policies.values()].map((p) => p.periodMs));
  const starts = statement(db, 'SELECT scope_key, started_at FROM system_async_task_rate_start WHERE started_at > ?').all(
    toSqliteTime(nowMs - maxPeriod),
  ) as Row[];
  const budget = new RateBudget(
    policies,
    starts.map((row) => ({ scopeKey: String(row.scope_key), startedAtMs: fromSqliteTime(row.started_at).getTime() })),
    nowMs,
  );
  const room = budget.cutRooms(rooms, claimRoom);
  if (room <= 0 || rooms.size === 0) return [];
  let chosen: Row[];
  if (!ratesByRow(policies)) {
    // Only GLOBAL / TYPE: rates: the rooms carry them, the candidates are the usual ones.
    chosen = ownersInPlay(params, ownerPolicyExists(db))
      ? pickByOwner(db, params, rooms, room, now, budget)
      : pickWithinRates(pickPlain(db, rooms, room, now), rooms, room, budget);
  } else {
    const { owners, rateKeys } = budget.exhausted();
    const ranked = statement(db, RATED_CANDIDATES_SQL);
    const candidates: Row[] = [];
    for (const [taskType, typeRoom] of rooms) {
      const perGroup = Math.min(typeRoom, room);
      candidates.push(...(ranked.all(taskType, now, now, JSON.stringify(rateKeys), JSON.stringify(owners), perGroup, perGroup, perGroup) as Row[]));
    }
    candidates.sort(claimOrder);
    chosen = ownersInPlay(params, ownerPolicyExists(db))
      ? pickOwnersRoundRobin(db, params, candidates, rooms, room, budget)
      : pickWithinRates(candidates, rooms, room, budget);
  }
  const tasks = lease(db, params, chosen, nowMs);
  const log = statement(db, 'INSERT INTO system_async_task_rate_start (scope_key, started_at) VALUES (?, ?)');
  for (const scopeKey of budget.log) log.run(scopeKey, now);
  const prune = statement(db, 'DELETE FROM system_async_task_rate_start WHERE scope_key = ? AND started_at <= ?');
  for (const { scopeKey, beforeMs } of budget.prunes()) prune.run(scopeKey, toSqliteTime(beforeMs));
  // Keys that start no more (and scopes without a policy any more) keep no rows past the longest period.
  statement(db, 'DELETE FROM system_async_task_rate_start WHERE started_at <= ?').run(toSqliteTime(nowMs - maxPeriod));
  return tasks;
}

/**
 * A type's claimable rows without the exhausted rate keys' and owners' (JSON arrays), each key's and owner's
 * first rows only, and the first of the rows with neither (a window: it reads the type's whole claimable set, as
 * the owners' claim does). Parameters: type, now, now, exhausted keys, exhausted owners, rows per group (3 times).
 */
const RATED_CANDIDATES_SQL = `SELECT id, task_type, owner, rate_key, priority, available_at, create_time FROM (
     SELECT id, task_type, owner, rate_key, priority, available_at, create_time,
       row_number() OVER (PARTITION BY rate_key ORDER BY ${ORDER}) AS key_rank,
       row_number() OVER (PARTITION BY owner ORDER BY ${ORDER}) AS owner_rank,
       row_number() OVER (PARTITION BY rate_key IS NULL AND owner IS NULL ORDER BY ${ORDER}) AS plain_rank
     FROM system_async_task WHERE task_type = ? AND ${DUE}
       AND (rate_key IS NULL OR rate_key NOT IN (SELECT value FROM json_each(?)))
       AND (owner IS NULL OR owner NOT IN (SELECT value FROM json_each(?)))
   ) WHERE (rate_key IS NULL OR key_rank <= ?) AND (owner IS NULL OR owner_rank <= ?) AND (rate_key IS NOT NULL OR owner IS NOT NULL OR plain_rank <= ?)`;

function pickPlain(db: Db, rooms: Map<string, number>, room: number, now: string): Row[] {
  const candidatesOf = statement(db, CANDIDATES_SQL);
  const candidates: Row[] = [];
  for (const [taskType, typeRoom] of rooms) candidates.push(...(candidatesOf.all(taskType, now, now, Math.min(typeRoom, room)) as Row[]));
  return candidates.sort(claimOrder).slice(0, room);
}

/** Each owner's first rows of each type (a window: it reads the type's whole claimable set), then round robin. */
function pickByOwner(db: Db, params: ClaimParams, rooms: Map<string, number>, room: number, now: string, budget?: RateBudget): Row[] {
  const ranked = statement(
    db,
    `SELECT id, task_type, owner, priority, available_at, create_time FROM (
       SELECT id, task_type, owner, priority, available_at, create_time, row_number() OVER (PARTITION BY owner ORDER BY ${ORDER}) AS rn
       FROM system_async_task WHERE task_type = ? AND ${DUE}
     ) WHERE rn <= ? ORDER BY owner, rn`,
  );
  const candidates: Row[] = [];
  for (const [taskType, typeRoom] of rooms) candidates.push(...(ranked.all(taskType, now, now, Math.min(typeRoom, room)) as Row[]));
  return pickOwnersRoundRobin(db, params, candidates, rooms, room, budget);
}

function pickOwnersRoundRobin(db: Db, params: ClaimParams, candidates: readonly Row[], rooms: Map<string, number>, room: number, budget?: RateBudget): Row[] {
  const ownerPolicies = readOwnerPolicies(db);
  const ownerLeased = leasedByOwner(db);
  const defaultCap = params.ownerConcurrency ?? null;
  return pickRoundRobin(
    candidates,
    rooms,
    (owner) => ownerRoom(ownerPolicies.get(ownerPolicyKey(owner)), defaultCap, ownerLeased.get(owner) ?? 0),
    room,
    budget,
  );
}

function lease(db: Db, params: ClaimParams, chosen: readonly Row[], nowMs: number): Task[] {
  const now = toSqliteTime(nowMs);
  const leaseUntil = toSqliteTime(nowMs + params.leaseMs);
  const update = statement(
    db,
    `UPDATE system_async_task SET status = ${STATUS_SQL.RUNNING}, lease_owner = ?, lease_until = ?, lease_token = ?,
       attempt_count = attempt_count + 1, start_time = COALESCE(start_time, ?), update_time = ?
     WHERE id = ? RETURNING *`,
  );
  const token = newLeaseToken();
  const attempt = statement(db, 'INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at) VALUES (?, ?, ?, ?)');
  return chosen.map((candidate) => {
    const row = update.get(params.workerId, leaseUntil, token, now, now, candidate.id) as Row;
    attempt.run(row.id, row.attempt_count, params.workerId, now);
    return taskFromRow(row, decodeSqlite);
  });
}

interface PolicyRow {
  policy_key: string;
  max_concurrency: number | null;
  enabled: number;
}

function policyMap(rows: readonly PolicyRow[]): Map<string, ClaimPolicy> {
  return new Map(rows.map((row) => [row.policy_key, { maxConcurrency: row.max_concurrency, enabled: row.enabled !== 0 }]));
}

/** The claim's policies, and whether any rate policy exists (one more row at most: the first rated one). */
function readPolicies(db: Db, keys: readonly string[]): { policies: Map<string, ClaimPolicy>; rated: boolean } {
  const sql = `SELECT policy_key, max_concurrency, enabled, 0 AS rated FROM system_async_task_policy WHERE policy_key IN (${keys.map(() => '?').join(',')})
    UNION ALL SELECT * FROM (SELECT policy_key, NULL, 1, 1 FROM system_async_task_policy WHERE rate_limit IS NOT NULL LIMIT 1)`;
  const rows = statement(db, sql).all(...keys) as (PolicyRow & { rated: number })[];
  return { policies: policyMap(rows.filter((row) => row.rated === 0)), rated: rows.some((row) => row.rated === 1) };
}

// Keys are compared with SQLite's binary collation: 'OWNER;' is the first key after every 'OWNER:…' (the primary key's range).
const OWNER_RANGE = `policy_key >= '${OWNER_POLICY_PREFIX}' AND policy_key < 'OWNER;'`;

function ownerPolicyExists(db: Db): boolean {
  return statement(db, `SELECT 1 FROM system_async_task_policy WHERE ${OWNER_RANGE} LIMIT 1`).get() !== undefined;
}

function readOwnerPolicies(db: Db): Map<string, ClaimPolicy> {
  return policyMap(statement(db, `SELECT policy_key, max_concurrency, enabled FROM system_async_task_policy WHERE ${OWNER_RANGE}`).all() as PolicyRow[]);
}

function liveWorkers(db: Db, seenAfter: string): Map<string, number> {
  const rows = statement(db, 'SELECT task_types FROM system_async_task_worker WHERE last_seen_at >= ?').all(seenAfter) as { task_types: string }[];
  return liveByType(rows.map((row) => row.task_types));
}

/** RUNNING + CANCEL_REQUESTED rows per type (what the limits count), and how many `workerId` holds. */
function leasesByType(db: Db, workerId: string): Map<string, TypeLeases> {
  // INDEXED BY: left alone, the planner may scan a wider index or the table — every finished row, on every claim.
  const rows = statement(
    db,
    `SELECT task_type, COUNT(*) AS n, SUM(lease_owner = ?) AS mine FROM system_async_task INDEXED BY ix_system_async_task_leased
    WHERE status IN ${LEASED_SQL} GROUP BY task_type`,
  ).all(workerId) as { task_type: string; n: number; mine: number }[];
  return new Map(rows.map((row) => [row.task_type, { n: row.n, mine: row.mine }]));
}

/** RUNNING + CANCEL_REQUESTED rows per type: what the limits count. */
export function leasedByType(db: Db): Map<string, number> {
  return new Map([...leasesByType(db, '').entries()].map(([type, { n }]) => [type, n]));
}

/** Leased rows per owner (owned rows only), through the leased index: as many rows as there are leases. */
function leasedByOwner(db: Db): Map<string, number> {
  const rows = statement(
    db,
    `SELECT owner, COUNT(*) AS n FROM system_async_task INDEXED BY ix_system_async_task_leased
    WHERE status IN ${LEASED_SQL} AND owner IS NOT NULL GROUP BY owner`,
  ).all() as { owner: string; n: number }[];
  return new Map(rows.map((row) => [row.owner, row.n]));
}
