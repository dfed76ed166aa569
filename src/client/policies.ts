/**
 * Runtime policies (seed article 1, "动态调整并发"): global and per-type max
 * concurrency, max attempts, retry base delay and an enabled flag, stored in
 * the database and read by every claim — a change applies on every worker in
 * the cluster at its next claim, without a restart. Per-owner (tenant)
 * policies hold a concurrency limit and an enabled flag; while any exists,
 * claims take turns across owners. Rate limits (rules/rates.ts): any of these
 * may hold N starts per period, and so may a rate key's policy (`{ rateKey }`:
 * one key, or `<group>:*` for every key `<group>:…`, each with its own budget).
 */
import { ValidationError } from '../core/errors.js';
import { GLOBAL_POLICY_KEY, KEY_POLICY_PREFIX, ownerPolicyKey, typePolicyKey } from '../core/policy-keys.js';
import { checkKnownKeys } from '../core/validate.js';
import type { Policy, PolicyInput, Store } from '../store/types.js';
import type { AdaptiveApi, OverrideOptions } from './adaptive.js';
import { checkTaskType } from '../core/definition.js';
import { checkNoNul } from '../core/text.js';
import { MAX_RATE_PERIOD_MS } from '../store/rules/rates.js';

export { GLOBAL_POLICY_KEY, ownerPolicyKey, typePolicyKey };

/** Which policy: null for GLOBAL, a task type, `{ owner }` for a tenant's, `{ rateKey }` for a rate key's (or `<group>:*`). */
export type PolicyTarget = string | null | { owner: string } | { rateKey: string };

export { MAX_RATE_PERIOD_MS };

/** What an operator may change; omitted fields keep their stored value (or the default). */
export interface PolicyChange {
  maxConcurrency?: number | null;
  maxAttempts?: number | null;
  retryBaseDelayMs?: number | null;
  enabled?: boolean;
  /** At most this many starts per ratePeriodMs in the policy's scope; give both or neither (null clears both). */
  rateLimit?: number | null;
  ratePeriodMs?: number | null;
}

const CHANGE_KEYS = ['maxConcurrency', 'maxAttempts', 'retryBaseDelayMs', 'enabled', 'rateLimit', 'ratePeriodMs'] as const;

export class PolicyApi {
  constructor(
    private readonly store: Store,
    /** Told of an operator's maxConcurrency on a type: on an adaptive type it is an override (client/adaptive.ts). */
    private readonly adaptive?: AdaptiveApi,
  ) {}

  /**
   * Changes the GLOBAL policy (null), a type's or an owner's, merging with what is stored. A maxConcurrency set on
   * an adaptive type is an operator override: recorded in its trail (as `options.actor`), adaptation suspended
   * until resumed — or for `options.overrideForMs`.
   */
  async update(target: PolicyTarget, change: PolicyChange, options: OverrideOptions = {}): Promise<Policy> {
    const input = validateChange(change);
    const { policyKey, taskType } = resolveTarget(target);
    const keyPolicy = policyKey.startsWith(KEY_POLICY_PREFIX);
    if (typeof target === 'object' && target !== null) {
      const fields = keyPolicy ? (['maxConcurrency', 'maxAttempts', 'retryBaseDelayMs', 'enabled'] as const) : (['maxAttempts', 'retryBaseDelayMs'] as const);
      const holds = keyPolicy
        ? 'a rate key policy holds rateLimit and ratePeriodMs only'
        : 'an owner policy holds maxConcurrency and enabled only (and a rate)';
      for (const field of fields) {
        if (input[field] !== undefined) throw new ValidationError(`${holds}, not ${field}`, field);
      }
    }
    const current = (await this.store.listPolicies()).find((p) => p.policyKey === policyKey);
    const policy: PolicyInput = {
      policyKey,
      taskType,
      maxConcurrency: input.maxConcurrency !== undefined ? input.maxConcurrency : (current?.maxConcurrency ?? null),
      maxAttempts: input.maxAttempts !== undefined ? input.maxAttempts : (current?.maxAttempts ?? null),
      retryBaseDelayMs: input.retryBaseDelayMs !== undefined ? input.retryBaseDelayMs : (current?.retryBaseDelayMs ?? null),
      enabled: input.enabled ?? current?.enabled ?? true,
      rateLimit: input.rateLimit !== undefined ? input.rateLimit : (current?.rateLimit ?? null),
      ratePeriodMs: input.ratePeriodMs !== undefined ? input.ratePeriodMs : (current?.ratePeriodMs ?? null),
    };
    if (keyPolicy && policy.rateLimit === null)
      throw new ValidationError('a rate key policy needs rateLimit and ratePeriodMs (reset it to remove it)', 'rateLimit');
    const saved = await this.store.savePolicy({ policy });
    if (typeof target === 'string' && input.maxConcurrency !== undefined && input.maxConcurrency !== null && this.adaptive)
      await this.adaptive.noteOverride(target, current?.maxConcurrency ?? null, input.maxConcurrency, options);
    return saved;
  }

  async get(target: PolicyTarget): Promise<Policy | null> {
    const { policyKey } = resolveTarget(target);
    return (await this.store.listPolicies()).find((p) => p.policyKey === policyKey) ?? null;
  }

  list(): Promise<Policy[]> {
    return this.store.listPolicies();
  }

  /** Back to the workers' defaults. On an adaptive type this turns adaptation off (recorded): its limit is the policy. */
  async reset(target: PolicyTarget, options: OverrideOptions = {}): Promise<boolean> {
    const removed = await this.store.deletePolicy({ policyKey: resolveTarget(target).policyKey });
    if (typeof target === 'string' && this.adaptive && (await this.adaptive.get(target))?.enabled) await this.adaptive.disable(target, options);
    return removed;
  }
}

/** The policy key (and the task type column) of a target; validates the type or owner. */
function resolveTarget(target: PolicyTarget): { policyKey: string; taskType: string | null } {
  if (target === null) return { policyKey: GLOBAL_POLICY_KEY, taskType: null };
  if (typeof target === 'string') {
    checkTaskType(target);
    return { policyKey: typePolicyKey(target), taskType: target };
  }
  if (typeof target === 'object' && 'rateKey' in target) {
    const rateKey = (target as { rateKey?: unknown }).rateKey;
    if (typeof rateKey !== 'string' || rateKey.length === 0 || rateKey.length > 255) {
      throw new ValidationError('a rate key policy needs a rateKey: a string of 1 to 255 characters (or <group>:*)', 'rateKey');
    }
    checkNoNul('rateKey', rateKey, 'policy');
    return { policyKey: `${KEY_POLICY_PREFIX}${rateKey}`, taskType: null };
  }
  const owner = (target as { owner?: unknown } | undefined)?.owner;
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 255) {
    throw new ValidationError('an owner policy needs an owner: a string of 1 to 255 characters', 'owner');
  }
  checkNoNul('owner', owner, 'policy');
  return { policyKey: ownerPolicyKey(owner), taskType: null };
}

function validateChange(change: PolicyChange): PolicyChange {
  if (typeof change !== 'object' || change === null) throw new ValidationError('a policy change must be an object', 'change');
  try {
    checkKnownKeys('policy', change, CHANGE_KEYS);
  } catch (error) {
    throw new ValidationError((error as Error).message, (error as ValidationError).field);
  }
  positiveOrNull(change.maxConcurrency, 'maxConcurrency', 100_000);
  positiveOrNull(change.maxAttempts, 'maxAttempts', 100);
  if (change.retryBaseDelayMs !== undefined && change.retryBaseDelayMs !== null) {
    const v = change.retryBaseDelayMs;
    if (!Number.isInteger(v) || v < 0 || v > 7 * 24 * 3600 * 1000)
      throw new ValidationError(`retryBaseDelayMs must be an integer from 0 to 7 days in ms, got ${String(v)}`, 'retryBaseDelayMs');
  }
  if (change.enabled !== undefined && typeof change.enabled !== 'boolean') throw new ValidationError('enabled must be true or false', 'enabled');
  positiveOrNull(change.rateLimit, 'rateLimit', 1_000_000);
  positiveOrNull(change.ratePeriodMs, 'ratePeriodMs', MAX_RATE_PERIOD_MS);
  const limitSet = change.rateLimit !== undefined && change.rateLimit !== null;
  const periodSet = change.ratePeriodMs !== undefined && change.ratePeriodMs !== null;
  if (limitSet !== periodSet || (change.rateLimit === null) !== (change.ratePeriodMs === null)) {
    throw new ValidationError('give rateLimit and ratePeriodMs together (both null clears the rate)', limitSet ? 'ratePeriodMs' : 'rateLimit');
  }
  return change;
}

function positiveOrNull(value: unknown, field: string, max: number): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new ValidationError(`${field} must be an integer from 1 to ${max} (or null for the default), got ${String(value)}`, field);
  }
}
