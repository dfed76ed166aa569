/**
 * The MySQL/MariaDB claim: one short transaction under a named lock, in two
 * round trips.
 *
 * Why a lock at all, with SKIP LOCKED? SKIP LOCKED keeps claimers off each
 * other's rows, but the limits are about rows nobody locks: two claimers that
 * both count 4 RUNNING tasks of a type capped at 5 would each take one. So
 * counting and claiming are serialized by GET_LOCK (one per database), held
 * from before the count until after COMMIT.
 *
 * Round trip 1: GET_LOCK, BEGIN, the clock into @tasklease_now (one reading
 * for the whole claim), one read of policies + leased
 * counts, and the candidates (SKIP LOCKED). The candidates are read before
 * the counts are known, so each type asks for as many as its cap could allow
 * (the last policies seen, else the defaults); the fresh counts and policies
 * then decide, in code, how many are taken. A type whose fresh policy allows
 * more than was asked for (a cap raised since) is read again at once, so a
 * policy change still applies on the very next claim. Round trip 2: the
 * UPDATE, the attempt rows, COMMIT and RELEASE_LOCK.
 *
 * Fairness (rules/fairness.ts): each type's room is this worker's fair
 * share among the live workers of the type (the registry, read in round
 * trip 1). When owners are in play (an OWNER: policy, a default owner limit,
 * or fairOwners) the candidates are each owner's first rows of each type, by
 * a window (which cannot lock: the round robin's choice is locked after,
 * SKIP LOCKED) — two more round trips, for owner claims only. Whether owners
 * were in play last time decides what round trip 1 reads.
 *
 * Rate limits (rules/rates.ts): round trip 1 also reads the rate policies
 * (an index range on rate_limit: nothing, for a plain claim). With a rate
 * policy set, one more round trip reads the start log, and the log rows of
 * the starts go out with the claim's writes; with per-key or per-owner rates
 * the candidates are ranked per key and owner without the exhausted ones (a
 * window, locked after, as for owners).
 *
 * Claim-along (finish-claim.ts): an outcome write may carry the claim in the
 * same transaction. Its leases are still counted in round trip 1 (they end in
 * round trip 2, with the claim's writes), so the claim counts them as free:
 * it holds their rows locked, and the fenced writes that end them commit with it.
 */
import { GLOBAL_POLICY_KEY, OWNER_POLICY_PREFIX, ownerPolicyKey, typePolicyKey } from '../../core/policy-keys.js';
import { TaskStatus } from '../../core/status.js';
import type { Task } from '../../core/task.js';
import { claimOrder } from '../claim-order.js';
import { taskFromRow, type Row } from '../rows.js';
import {
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
  ratePolicyOf,
  rateScopesOf,
  ratesByRow,
  type ClaimPolicy,
  type RatePolicy,
  type TypeLeases,
} from '../rules/index.js';
import type { ClaimParams } from '../types.js';
import type { Statement, TransactionSteps } from './connection.js';
import { addMs, decode, sqlTime } from './encode.js';

/** Policy caps (policy_key → max_concurrency) seen by the last claim: only how many candidates to ask for. */
export type CapCache = Map<string, number | null>;
/** In the CapCache: present when the last claim found owners in play. */
const OWNERS_SEEN = OWNER_POLICY_PREFIX;
/** In the CapCache: present when the last claim left claimable rows behind (a type's candidates came back as many as asked for). */
const WORK_LEFT = '';

/** The last claim left claimable rows behind: its workers claim again when their leases end, whatever is submitted. */
export function workLeft(caps: CapCache): boolean {
  return caps.has(WORK_LEFT);
}

/** A lease the claim's own transaction ends before it commits (claim-along): its slot is free. */
export interface EndedLease {
  taskType: string;
  owner: string | null;
  leaseOwner: string;
}

/** The claim's round trips; `ended`, known once the first step answered, lists the leases the same transaction ends. */
export interface ClaimSteps extends TransactionSteps {
  ended?(): readonly EndedLease[];
}

export async function claim(tx: ClaimSteps, params: ClaimParams, caps: CapCache): Promise<Task[]> {
  const taskTypes = [...new Set(params.taskTypes)];
  const guessOwners = ownersInPlay(params, caps.has(OWNERS_SEEN));
  // Owner claims read their candidates once the rooms are known; plain claims guess and lock them at once.
  const asked = new Map(taskTypes.map((taskType) => [taskType, guessOwners ? 0 : guessRoom(params, caps, taskType)]));
  const statements = [
    { sql: 'SET @tasklease_now = NOW(3)' },
    stateStatement(taskTypes, params, guessOwners),
    ...(guessOwners ? [] : taskTypes.map((t) => candidatesStatement(t, asked.get(t)!))),
  ];
  const [, stateRows, ...candidateSets] = (await tx.step(statements)) as Row[][];
  const state = readState(stateRows!);
  const ended = tx.ended?.() ?? [];
  freeEnded(state, ended, params.workerId);
  const owners = ownersInPlay(params, state.ownerPolicies.size > 0);
  rememberCaps(caps, taskTypes, state.policies, owners);
  const full = taskTypes.some((t, i) => asked.get(t)! > 0 && candidateSets[i]?.length === asked.get(t));
  if (full) caps.set(WORK_LEFT, null);
  else caps.delete(WORK_LEFT);
  const global = state.policies.get(GLOBAL_POLICY_KEY);
  if (global && !global.enabled) return [];
  const room = Math.min(params.limit, (global?.maxConcurrency ?? params.globalConcurrency) - state.leasedTotal);
  if (room <= 0) return [];
  const rooms = typeRooms(taskTypes, params, (type) => state.policies.get(typePolicyKey(type)), state.leasedByType, state.live);
  if (state.rates.size > 0) return claimWithinRates(tx, params, state, rooms, room, { owners, guessOwners, ended, taskTypes, asked, candidateSets });
  const chosen = owners
    ? await pickByOwner(tx, params, state, rooms, room, guessOwners, ended)
    : await pickPlain(tx, taskTypes, rooms, room, asked, candidateSets);
  if (chosen.length === 0) return [];
  return lease(tx, params, chosen, state.now);
}

interface PlainRead {
  owners: boolean;
  guessOwners: boolean;
  ended: readonly EndedLease[];
  taskTypes: readonly string[];
  asked: Map<string, number>;
  candidateSets: Row[][];
}

/** A claim while a rate policy exists: one more round trip for the start log; the log rows go with the claim's writes. */
async function claimWithinRates(
  tx: ClaimSteps,
  params: ClaimParams,
  state: ClaimState,
  rooms: Map<string, number>,
  claimRoom: number,
  read: PlainRead,
): Promise<Task[]> {
  const maxPeriod = Math.max(...[...state.rates.values()].map((p) => p.periodMs));
  const [starts] = (await tx.step([
    {
      sql: 'SELECT scope_key, started_at FROM system_async_task_rate_start WHERE started_at > @tasklease_now - INTERVAL ? MICROSECOND',
      values: [maxPeriod * 1000],
    },
  ])) as Row[][];
  const nowMs = decode.time(state.now).getTime();
  const budget = new RateBudget(
    state.rates,
    starts!.map((row) => ({ scopeKey: String(row.scope_key), startedAtMs: decode.time(row.started_at).getTime() })),
    nowMs,
  );
  const room = budget.cutRooms(rooms, claimRoom);
  if (room <= 0 || rooms.size === 0) return [];
  let chosen: Row[];
  if (ratesByRow(state.rates)) {
    const { owners, rateKeys } = budget.exhausted();
    const ranked = (taskType: string, perGroup: number) => ratedStatement(taskType, perGroup, rateKeys, owners);
    chosen = await pickByOwner(tx, params, state, rooms, room, read.guessOwners, read.ended, budget, ranked, !read.owners);
  } else if (read.owners) {
    chosen = await pickByOwner(tx, params, state, rooms, room, read.guessOwners, read.ended, budget);
  } else {
    const plain = await pickPlain(tx, read.taskTypes, rooms, room, read.asked, read.candidateSets);
    chosen = pickWithinRates(plain, rooms, room, budget);
  }
  if (chosen.length === 0) return [];
  // The log from the rows actually leased (a row locked elsewhere was left out after the pick).
  const log = chosen.flatMap((row) => rateScopesOf(row, state.rates));
  const prunes: Statement[] = [...new Set(log)].map((scopeKey) => ({
    sql: 'DELETE FROM system_async_task_rate_start WHERE scope_key = ? AND started_at <= ?',
    values: [scopeKey, sqlTime(new Date(nowMs - ratePolicyOf(scopeKey, state.rates)!.periodMs))],
  }));
  // Keys that start no more (and scopes without a policy any more) keep no rows past the longest period.
  prunes.push({ sql: 'DELETE FROM system_async_task_rate_start WHERE started_at <= ?', values: [sqlTime(new Date(nowMs - maxPeriod))] });
  const logRows =
    log.length === 0
      ? []
      : [{ sql: 'INSERT INTO system_async_task_rate_start (scope_key, started_at) VALUES ?', values: [log.map((scope) => [scope, state.now])] }];
  return lease(tx, params, chosen, state.now, [...logRows, ...prunes]);
}

/**
 * Each rate key's and owner's first `perGroup` claimable rows of a type (and of the rows with neither), without the exhausted keys and owners
 * (a window over the type's claimable rows; no locks). '' stands for an empty list: no owner or rate key is ''.
 */
function ratedStatement(taskType: string, perGroup: number, rateKeys: readonly string[], owners: readonly string[]): Statement {
  return {
    sql: `SELECT id, task_type, owner, rate_key, priority, available_at, create_time FROM (
      SELECT id, task_type, owner, rate_key, priority, available_at, create_time,
        ROW_NUMBER() OVER (PARTITION BY rate_key ORDER BY priority DESC, available_at, create_time, id) AS key_rank,
        ROW_NUMBER() OVER (PARTITION BY owner ORDER BY priority DESC, available_at, create_time, id) AS owner_rank,
        ROW_NUMBER() OVER (PARTITION BY rate_key IS NULL AND owner IS NULL ORDER BY priority DESC, available_at, create_time, id) AS plain_rank
      FROM system_async_task FORCE INDEX (ix_system_async_task_claim)
      WHERE claimable = 1 AND task_type = ? AND available_at <= @tasklease_now AND (deadline_at IS NULL OR deadline_at > @tasklease_now)
        AND (rate_key IS NULL OR rate_key NOT IN (?)) AND (owner IS NULL OR owner NOT IN (?))
    ) ranked WHERE (rate_key IS NULL OR key_rank <= ?) AND (owner IS NULL OR owner_rank <= ?)
      AND (rate_key IS NOT NULL OR owner IS NOT NULL OR plain_rank <= ?)`,
    values: [taskType, rateKeys.length > 0 ? rateKeys : [''], owners.length > 0 ? owners : [''], perGroup, perGroup, perGroup],
  };
}

async function pickPlain(
  tx: ClaimSteps,
  taskTypes: readonly string[],
  rooms: Map<string, number>,
  room: number,
  asked: Map<string, number>,
  candidateSets: Row[][],
): Promise<Row[]> {
  const candidates: Row[] = [];
  const reread: { taskType: string; allowed: number }[] = [];
  taskTypes.forEach((taskType, index) => {
    const allowed = Math.min(room, rooms.get(taskType) ?? 0);
    if (allowed <= 0) return;
    const found = candidateSets[index] ?? [];
    // Fewer rows than asked for: that was every claimable row of the type. As many: there may be more.
    if (allowed > asked.get(taskType)! && found.length === asked.get(taskType)!) reread.push({ taskType, allowed });
    else candidates.push(...found.slice(0, allowed));
  });
  if (reread.length > 0) {
    // Our own locks are not skipped: the rows read before come back, in the same order, with the ones after them.
    const sets = (await tx.step(reread.map(({ taskType, allowed }) => candidatesStatement(taskType, allowed)))) as Row[][];
    sets.forEach((rows) => candidates.push(...rows));
  }
  // Rows locked but not chosen are released at COMMIT, untouched.
  return candidates.sort(claimOrder).slice(0, room);
}

async function pickByOwner(
  tx: ClaimSteps,
  params: ClaimParams,
  state: ClaimState,
  rooms: Map<string, number>,
  room: number,
  counted: boolean,
  ended: readonly EndedLease[],
  rates?: RateBudget,
  rankedOf: (taskType: string, perGroup: number) => Statement = rankedStatement,
  claimOrderOnly = false,
): Promise<Row[]> {
  const ranked = [...rooms].map(([taskType, typeRoom]) => rankedOf(taskType, Math.min(typeRoom, room)));
  if (ranked.length === 0) return [];
  // Claim order only (no owners in play): no owner counts needed.
  const countNow = !counted && !claimOrderOnly;
  const sets = (await tx.step(countNow ? [ownerLeasedStatement(), ...ranked] : ranked)) as Row[][];
  const ownerLeased = countNow ? freeOwners(ownerCounts(sets.shift()!), ended) : state.leasedByOwner;
  const roomOf = (owner: string): number =>
    ownerRoom(state.ownerPolicies.get(ownerPolicyKey(owner)), params.ownerConcurrency ?? null, ownerLeased.get(owner) ?? 0);
  const picked = claimOrderOnly ? pickWithinRates(sets.flat().sort(claimOrder), rooms, room, rates!) : pickRoundRobin(sets.flat(), rooms, roomOf, room, rates);
  if (picked.length === 0) return [];
  // Locked now; a row another transaction holds or changed since is left out (it is claimed next time, or was taken).
  const [locked] = (await tx.step([
    { sql: 'SELECT * FROM system_async_task WHERE id IN (?) AND claimable = 1 FOR UPDATE SKIP LOCKED', values: [picked.map((row) => String(row.id))] },
  ])) as Row[][];
  return locked!.sort(claimOrder);
}

async function lease(tx: ClaimSteps, params: ClaimParams, chosen: readonly Row[], now: string, more: readonly Statement[] = []): Promise<Task[]> {
  const ids = chosen.map((row) => String(row.id));
  const leaseUntil = addMs(now, params.leaseMs);
  const token = newLeaseToken();
  await tx.last([
    {
      sql: `UPDATE system_async_task SET status = ${STATUS_SQL.RUNNING}, lease_owner = ?, lease_until = ?, lease_token = ?,
       attempt_count = attempt_count + 1, start_time = COALESCE(start_time, ?), update_time = ?
     WHERE id IN (?)`,
      values: [params.workerId, leaseUntil, token, now, now, ids],
    },
    {
      sql: 'INSERT INTO system_async_task_attempt (task_id, attempt, worker_id, started_at) VALUES ?',
      values: [chosen.map((row) => [row.id, Number(row.attempt_count) + 1, params.workerId, now])],
    },
    ...more,
  ]);
  // The rows are locked by us, so what we wrote is exactly the candidate plus these columns: no read-back needed.
  return chosen.map((row) =>
    taskFromRow(
      {
        ...row,
        status: TaskStatus.RUNNING,
        lease_owner: params.workerId,
        lease_until: leaseUntil,
        lease_token: token,
        attempt_count: Number(row.attempt_count) + 1,
        start_time: row.start_time ?? now,
        update_time: now,
      },
      decode,
    ),
  );
}

/** How many candidates of a type to lock before the counts are known: what its cap (as last seen) could allow. */
function guessRoom(params: ClaimParams, caps: CapCache, taskType: string): number {
  const typeKey = typePolicyKey(taskType);
  const typeCap = caps.has(typeKey) ? (caps.get(typeKey) ?? params.typeConcurrency) : params.typeConcurrency;
  const globalCap = caps.has(GLOBAL_POLICY_KEY) ? (caps.get(GLOBAL_POLICY_KEY) ?? params.globalConcurrency) : params.globalConcurrency;
  return Math.max(0, Math.min(params.limit, typeCap, globalCap));
}

function rememberCaps(caps: CapCache, taskTypes: readonly string[], policies: Map<string, ClaimPolicy>, owners: boolean): void {
  for (const key of [GLOBAL_POLICY_KEY, ...taskTypes.map(typePolicyKey)]) {
    const policy = policies.get(key);
    if (policy) caps.set(key, policy.maxConcurrency);
    else caps.delete(key);
  }
  if (owners) caps.set(OWNERS_SEEN, null);
  else caps.delete(OWNERS_SEEN);
}

interface ClaimState {
  now: string;
  policies: Map<string, ClaimPolicy>;
  ownerPolicies: Map<string, ClaimPolicy>;
  leasedByType: Map<string, TypeLeases>;
  leasedTotal: number;
  leasedByOwner: Map<string, number>;
  live: Map<string, number>;
  /** Rate policies (rules/rates.ts): empty for a claim without any. */
  rates: Map<string, RatePolicy>;
}

/**
 * The clock, the policies (the types', the global one and every owner's)
 * and the leased counts in one read; the live workers when the claim shares
 * its rooms, the owners' counts when owners were in play last time. The
 * counts walk ix_system_async_task_leased (status first): only RUNNING and
 * CANCEL_REQUESTED rows, whatever the size of the backlog or the history.
 */
function stateStatement(taskTypes: readonly string[], params: ClaimParams, owners: boolean): Statement {
  const arms = [
    `SELECT 'now' AS kind, @tasklease_now AS k, NULL AS n, NULL AS m`,
    `SELECT 'policy', policy_key, max_concurrency, enabled FROM system_async_task_policy WHERE policy_key IN (?) OR policy_key LIKE '${OWNER_POLICY_PREFIX}%'`,
    `SELECT 'leased', task_type, COUNT(*), SUM(lease_owner = ?) FROM system_async_task FORCE INDEX (ix_system_async_task_leased)
       WHERE status IN ${LEASED_SQL} GROUP BY task_type`,
    // An empty range of ix_system_async_task_policy_rate while no rate policy exists.
    `SELECT 'rate', policy_key, rate_limit, rate_period_ms FROM system_async_task_policy FORCE INDEX (ix_system_async_task_policy_rate)
       WHERE rate_limit IS NOT NULL`,
  ];
  const values: unknown[] = [[GLOBAL_POLICY_KEY, ...taskTypes.map(typePolicyKey)], params.workerId];
  if (params.liveWithinMs !== undefined) {
    arms.push(`SELECT 'live', task_types, NULL, NULL FROM system_async_task_worker WHERE last_seen_at >= @tasklease_now - INTERVAL ? MICROSECOND`);
    values.push(Math.round(params.liveWithinMs) * 1000);
  }
  if (owners) arms.push(ownerLeasedStatement().sql);
  return { sql: arms.join('\n     UNION ALL '), values };
}

/** The leases the transaction ends were counted in round trip 1: their slots are free. */
function freeEnded(state: ClaimState, ended: readonly EndedLease[], workerId: string): void {
  for (const { taskType, leaseOwner } of ended) {
    const leased = state.leasedByType.get(taskType);
    if (leased) state.leasedByType.set(taskType, { n: leased.n - 1, mine: leased.mine - (leaseOwner === workerId ? 1 : 0) });
    state.leasedTotal -= 1;
  }
  freeOwners(state.leasedByOwner, ended);
}

function freeOwners(counts: Map<string, number>, ended: readonly EndedLease[]): Map<string, number> {
  for (const { owner } of ended) {
    const n = owner === null ? undefined : counts.get(owner);
    if (n !== undefined) counts.set(owner!, n - 1);
  }
  return counts;
}

function readState(rows: readonly Row[]): ClaimState {
  const state: ClaimState = {
    now: '',
    policies: new Map(),
    ownerPolicies: new Map(),
    leasedByType: new Map(),
    leasedTotal: 0,
    leasedByOwner: ownerCounts(rows),
    live: liveByType(rows.filter((row) => row.kind === 'live').map((row) => row.k)),
    rates: new Map(),
  };
  for (const row of rows) {
    if (row.kind === 'now') state.now = String(row.k);
    else if (row.kind === 'policy') {
      const key = String(row.k);
      const policy = { maxConcurrency: row.n === null ? null : Number(row.n), enabled: Number(row.m) !== 0 };
      (key.startsWith(OWNER_POLICY_PREFIX) ? state.ownerPolicies : state.policies).set(key, policy);
    } else if (row.kind === 'rate' && row.m !== null) {
      state.rates.set(String(row.k), { limit: Number(row.n), periodMs: Number(row.m) });
    } else if (row.kind === 'leased') {
      state.leasedByType.set(String(row.k), { n: Number(row.n), mine: Number(row.m) });
      state.leasedTotal += Number(row.n);
    }
  }
  return state;
}

/** Leased rows per owner, through the leased index (as many rows as there are leases). */
function ownerLeasedStatement(): Statement {
  return {
    sql: `SELECT 'owner' AS kind, owner AS k, COUNT(*) AS n, NULL AS m FROM system_async_task FORCE INDEX (ix_system_async_task_leased)
       WHERE status IN ${LEASED_SQL} AND owner IS NOT NULL GROUP BY owner`,
  };
}

function ownerCounts(rows: readonly Row[]): Map<string, number> {
  return new Map(rows.filter((row) => row.kind === 'owner').map((row) => [String(row.k), Number(row.n)]));
}

/** Each owner's first `perOwner` claimable rows of a type (a window over the type's claimable rows; no locks). */
function rankedStatement(taskType: string, perOwner: number): Statement {
  return {
    sql: `SELECT id, task_type, owner, priority, available_at, create_time FROM (
      SELECT id, task_type, owner, priority, available_at, create_time,
        ROW_NUMBER() OVER (PARTITION BY owner ORDER BY priority DESC, available_at, create_time, id) AS rn
      FROM system_async_task FORCE INDEX (ix_system_async_task_claim)
      WHERE claimable = 1 AND task_type = ? AND available_at <= @tasklease_now AND (deadline_at IS NULL OR deadline_at > @tasklease_now)
    ) ranked WHERE rn <= ?`,
    values: [taskType, perOwner],
  };
}

/** One type's SKIP LOCKED select, walking the claim index in claim order; due and deadline judged by the claim's one clock reading. */
/** A type's claimable rows in claim order, locked (explain.ts shows its plan). Reads @tasklease_now. */
export function candidatesStatement(taskType: string, limit: number): Statement {
  return {
    sql: `SELECT * FROM system_async_task FORCE INDEX (ix_system_async_task_claim)
      WHERE claimable = 1 AND task_type = ? AND available_at <= @tasklease_now AND (deadline_at IS NULL OR deadline_at > @tasklease_now)
      ORDER BY priority DESC, available_at, create_time, id LIMIT ? FOR UPDATE SKIP LOCKED`,
    values: [taskType, limit],
  };
}
