/**
 * Rate limits, written once: at most N starts (claims, every attempt) per
 * period in a scope — GLOBAL, TYPE:<type>, OWNER:<owner>, or a rate key
 * (policy KEY:<k>, else KEY:<group>:*; core/policy-keys.ts ratePolicyKeys).
 *
 * Exact across processes: every claim that takes a rate-limited row counts
 * the scope's starts in (now − period, now] in the start log, takes only
 * while that count is below N, and appends one log row per start per scope —
 * all under the claim's serialization (SQLite BEGIN IMMEDIATE, MySQL's named
 * lock, PostgreSQL's exclusive schema lock, which every claim takes while a
 * rate policy exists). So any window of length period ending at a start holds
 * at most N starts. The log is kept at about N rows per scope: a claim that
 * writes a scope deletes its rows older than the scope's period (and on
 * PostgreSQL, rows of scopes without a policy any more).
 *
 * Head-of-line: rows of an exhausted key or owner are left out of the
 * candidates, and each key's and owner's takes stop at its room, so a key at
 * its limit never hides another key's tasks behind it.
 *
 * SQLite and MySQL decide in code with RateBudget; PostgreSQL's claim
 * function renders the same rule as SQL (postgres/claim.ts ratesQuery).
 */
import {
  GLOBAL_POLICY_KEY,
  KEY_POLICY_PREFIX,
  keyPolicyKey,
  OWNER_POLICY_PREFIX,
  ownerPolicyKey,
  ratePolicyKeys,
  typePolicyKey,
} from '../../core/policy-keys.js';
import type { Row } from '../rows.js';

/** The longest rate period: a day. No window needs a start older than that, whatever the policies say. */
export const MAX_RATE_PERIOD_MS = 24 * 3600 * 1000;

export interface RatePolicy {
  limit: number;
  periodMs: number;
}

/** A row of the start log, its time in ms of the database clock. */
export interface RateStart {
  scopeKey: string;
  startedAtMs: number;
}

/** The rate policy of a logged scope key (a key's own or its group's for KEY: scopes); undefined: none. */
export function ratePolicyOf(scopeKey: string, policies: ReadonlyMap<string, RatePolicy>): RatePolicy | undefined {
  if (!scopeKey.startsWith(KEY_POLICY_PREFIX)) return policies.get(scopeKey);
  for (const key of ratePolicyKeys(scopeKey.slice(KEY_POLICY_PREFIX.length))) {
    const policy = policies.get(key);
    if (policy) return policy;
  }
  return undefined;
}

/** The scope keys a row's start counts in (each has a rate policy), in a fixed order. */
export function rateScopesOf(row: Row, policies: ReadonlyMap<string, RatePolicy>): string[] {
  const scopes: string[] = [];
  if (policies.has(GLOBAL_POLICY_KEY)) scopes.push(GLOBAL_POLICY_KEY);
  const type = typePolicyKey(String(row.task_type));
  if (policies.has(type)) scopes.push(type);
  if (row.owner !== null && row.owner !== undefined && policies.has(ownerPolicyKey(String(row.owner)))) scopes.push(ownerPolicyKey(String(row.owner)));
  if (row.rate_key !== null && row.rate_key !== undefined) {
    const key = keyPolicyKey(String(row.rate_key));
    if (ratePolicyOf(key, policies)) scopes.push(key);
  }
  return scopes;
}

/** Whether any policy of these rate-limits owners or rate keys (the claim then needs the per-key/owner candidates). */
export function ratesByRow(policies: ReadonlyMap<string, RatePolicy>): boolean {
  return [...policies.keys()].some((key) => key.startsWith(OWNER_POLICY_PREFIX) || key.startsWith(KEY_POLICY_PREFIX));
}

/**
 * What one claim may still start in each scope: N − starts in (now − period, now]. Takes are counted as the
 * claim picks rows, so that the picks of one claim stay within the room too.
 */
export class RateBudget {
  private readonly used = new Map<string, number>();
  private readonly oldest = new Map<string, number>();
  /** Scope keys of every take, one entry per start per scope: the log rows to insert. */
  readonly log: string[] = [];

  constructor(
    readonly policies: ReadonlyMap<string, RatePolicy>,
    starts: readonly RateStart[],
    readonly nowMs: number,
  ) {
    for (const { scopeKey, startedAtMs } of starts) {
      const policy = ratePolicyOf(scopeKey, policies);
      if (!policy || startedAtMs <= nowMs - policy.periodMs) continue;
      this.used.set(scopeKey, (this.used.get(scopeKey) ?? 0) + 1);
      this.oldest.set(scopeKey, Math.min(this.oldest.get(scopeKey) ?? Infinity, startedAtMs));
    }
  }

  /** Starts in each scope's window (scopes with a policy and at least one start). */
  usedByScope(): ReadonlyMap<string, number> {
    return this.used;
  }

  /** Starts left in a scope this period; Infinity without a rate policy. */
  room(scopeKey: string): number {
    const policy = ratePolicyOf(scopeKey, this.policies);
    return policy ? Math.max(0, policy.limit - (this.used.get(scopeKey) ?? 0)) : Infinity;
  }

  /** When the next start of an exhausted scope may happen: its oldest start in the window + the period. */
  nextSlotAtMs(scopeKey: string): number | null {
    const policy = ratePolicyOf(scopeKey, this.policies);
    const oldest = this.oldest.get(scopeKey);
    return policy && oldest !== undefined ? oldest + policy.periodMs : null;
  }

  /** Owners and rate keys with no start left this period: the claim leaves their rows out of its candidates. */
  exhausted(): { owners: string[]; rateKeys: string[] } {
    const owners: string[] = [];
    const rateKeys: string[] = [];
    for (const scopeKey of this.used.keys()) {
      if (this.room(scopeKey) > 0) continue;
      if (scopeKey.startsWith(OWNER_POLICY_PREFIX)) owners.push(scopeKey.slice(OWNER_POLICY_PREFIX.length));
      else if (scopeKey.startsWith(KEY_POLICY_PREFIX)) rateKeys.push(scopeKey.slice(KEY_POLICY_PREFIX.length));
    }
    return { owners, rateKeys };
  }

  admits(row: Row): boolean {
    return rateScopesOf(row, this.policies).every((scope) => this.room(scope) > 0);
  }

  take(row: Row): void {
    for (const scope of rateScopesOf(row, this.policies)) {
      this.used.set(scope, (this.used.get(scope) ?? 0) + 1);
      this.log.push(scope);
    }
  }

  /** The scopes this claim wrote, each with the cut-off before which its log rows are no longer needed. */
  prunes(): { scopeKey: string; beforeMs: number }[] {
    return [...new Set(this.log)].map((scopeKey) => ({ scopeKey, beforeMs: this.nowMs - ratePolicyOf(scopeKey, this.policies)!.periodMs }));
  }

  /** Cuts a claim's room and its types' rooms to what the GLOBAL and TYPE: rates leave. */
  cutRooms(rooms: Map<string, number>, room: number): number {
    for (const [type, typeRoom] of rooms) {
      const left = Math.min(typeRoom, this.room(typePolicyKey(type)));
      if (left > 0) rooms.set(type, left);
      else rooms.delete(type);
    }
    return Math.min(room, this.room(GLOBAL_POLICY_KEY));
  }
}

/** Rate policies from policy rows (policy_key, rate_limit, rate_period_ms); rows without a rate are left out. */
export function ratePolicies(rows: readonly Row[]): Map<string, RatePolicy> {
  const policies = new Map<string, RatePolicy>();
  for (const row of rows) {
    if (row.rate_limit === null || row.rate_limit === undefined || row.rate_period_ms === null || row.rate_period_ms === undefined) continue;
    policies.set(String(row.policy_key), { limit: Number(row.rate_limit), periodMs: Number(row.rate_period_ms) });
  }
  return policies;
}

/** Greedy in claim order (candidates sorted): a row is taken while the claim, its type and every rate scope it counts in have room. */
export function pickWithinRates(candidates: readonly Row[], rooms: ReadonlyMap<string, number>, room: number, budget: RateBudget): Row[] {
  const takenByType = new Map<string, number>();
  const chosen: Row[] = [];
  for (const row of candidates) {
    if (chosen.length >= room) break;
    const type = String(row.task_type);
    const byType = takenByType.get(type) ?? 0;
    if (byType >= (rooms.get(type) ?? 0) || !budget.admits(row)) continue;
    takenByType.set(type, byType + 1);
    budget.take(row);
    chosen.push(row);
  }
  return chosen;
}

/**
 * ratePolicyKeys (core/policy-keys.ts) as PostgreSQL SQL: the group policy key of a rate key expression,
 * `KEY:<part before the first ':'>:*`, or NULL for a key without a group (no ':', or ':' first).
 */
export function keyGroupPolicySql(rateKey: string): string {
  return `CASE WHEN strpos(${rateKey}, ':') > 1 THEN '${KEY_POLICY_PREFIX}' || split_part(${rateKey}, ':', 1) || ':*' END`;
}

/**
 * The rate policy of a logged scope key expression as a LATERAL subquery over `policies` (rows policy_key,
 * rate_limit, rate_period_ms): its own policy, else for KEY: scopes its group's.
 */
export function scopeRatePolicySql(scopeKey: string, policies: string): string {
  const rateKey = `substr(${scopeKey}, ${KEY_POLICY_PREFIX.length + 1})`;
  return `(SELECT rp.rate_limit, rp.rate_period_ms FROM ${policies} rp
      WHERE rp.policy_key = ${scopeKey}
        OR (starts_with(${scopeKey}, '${KEY_POLICY_PREFIX}') AND rp.policy_key = ${keyGroupPolicySql(rateKey)})
      ORDER BY rp.policy_key = ${scopeKey} DESC LIMIT 1)`;
}
