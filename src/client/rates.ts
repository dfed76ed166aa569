/**
 * Rate usage now (rules/rates.ts): for each kind of rate scope — global, type,
 * owner, key — how many scopes have spent their rate and how many starts their
 * windows hold. Counts by kind only, never by key or owner value: the rate
 * gauges' labels stay bounded however many keys there are.
 */
import { GLOBAL_POLICY_KEY, KEY_POLICY_PREFIX, keyPolicyKey, OWNER_POLICY_PREFIX, ownerPolicyKey, ratePolicyKeys, typePolicyKey } from '../core/policy-keys.js';
import type { Task } from '../core/task.js';
import { RateBudget, ratePolicies } from '../store/rules/rates.js';
import type { Store } from '../store/types.js';

export const RATE_SCOPE_KINDS = ['global', 'type', 'owner', 'key'] as const;
export type RateScopeKind = (typeof RATE_SCOPE_KINDS)[number];

export interface RateUsage {
  /** Scopes whose window holds their limit: their tasks wait for the next slot. */
  spent: Record<RateScopeKind, number>;
  /** Starts in the scopes' windows. */
  starts: Record<RateScopeKind, number>;
}

export function rateScopeKind(scopeKey: string): RateScopeKind {
  if (scopeKey === GLOBAL_POLICY_KEY) return 'global';
  if (scopeKey.startsWith(OWNER_POLICY_PREFIX)) return 'owner';
  if (scopeKey.startsWith(KEY_POLICY_PREFIX)) return 'key';
  return 'type';
}

/** One read of the policies and one of the start log (its rows of the longest period); null without a rate policy. */
export async function rateUsage(store: Store): Promise<RateUsage | null> {
  const policies = ratePolicies(
    (await store.listPolicies()).map((p) => ({ policy_key: p.policyKey, rate_limit: p.rateLimit ?? null, rate_period_ms: p.ratePeriodMs ?? null })),
  );
  if (policies.size === 0) return null;
  const withinMs = Math.max(...[...policies.values()].map((p) => p.periodMs));
  const { now, starts } = await store.listRateStarts({ withinMs });
  const budget = new RateBudget(
    policies,
    starts.map((s) => ({ scopeKey: s.scopeKey, startedAtMs: s.startedAt.getTime() })),
    now.getTime(),
  );
  const usage: RateUsage = { spent: { global: 0, type: 0, owner: 0, key: 0 }, starts: { global: 0, type: 0, owner: 0, key: 0 } };
  for (const [scopeKey, used] of budget.usedByScope()) {
    const kind = rateScopeKind(scopeKey);
    usage.starts[kind] += used;
    if (budget.room(scopeKey) === 0) usage.spent[kind] += 1;
  }
  return usage;
}

export interface RateState {
  /** Where the starts are counted: GLOBAL, TYPE:<type>, OWNER:<owner> or KEY:<rateKey>. */
  scope: string;
  /** The policy that sets the rate (for a key: KEY:<rateKey> or its group's KEY:<group>:*). */
  policyKey: string;
  rateLimit: number;
  ratePeriodMs: number;
  /** Starts in the last period. */
  used: number;
  /** When the oldest start of the window leaves it; null while the window has room. */
  nextSlotAt: Date | null;
}

/** The rates that apply to a task (the same lookup as the claims': rules/rates.ts) and their windows, read now. */
export async function rateStates(store: Store, task: Task, policies: Awaited<ReturnType<Store['listPolicies']>>): Promise<RateState[]> {
  const byKey = new Map(policies.filter((p) => p.rateLimit != null && p.ratePeriodMs != null).map((p) => [p.policyKey, p]));
  if (byKey.size === 0) return [];
  const scopes: { scope: string; policyKey: string }[] = [GLOBAL_POLICY_KEY, typePolicyKey(task.taskType)]
    .concat(task.owner === null ? [] : [ownerPolicyKey(task.owner)])
    .filter((key) => byKey.has(key))
    .map((key) => ({ scope: key, policyKey: key }));
  if (task.rateKey !== null) {
    const policyKey = ratePolicyKeys(task.rateKey).find((key) => byKey.has(key));
    if (policyKey) scopes.push({ scope: keyPolicyKey(task.rateKey), policyKey });
  }
  if (scopes.length === 0) return [];
  const windows = await store.rateWindows({
    scopes: scopes.map(({ scope, policyKey }) => ({ scopeKey: scope, periodMs: byKey.get(policyKey)!.ratePeriodMs! })),
  });
  return scopes.map(({ scope, policyKey }, i) => {
    const policy = byKey.get(policyKey)!;
    const window = windows[i]!;
    const spent = window.used >= policy.rateLimit! && window.oldestStartAt !== null;
    return {
      scope,
      policyKey,
      rateLimit: policy.rateLimit!,
      ratePeriodMs: policy.ratePeriodMs!,
      used: window.used,
      nextSlotAt: spent ? new Date(window.oldestStartAt!.getTime() + policy.ratePeriodMs!) : null,
    };
  });
}
