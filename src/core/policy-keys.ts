/**
 * Policy rows are keyed `GLOBAL`, `TYPE:<task_type>` (the seed's keys), `OWNER:<owner>` (a tenant's limit) or
 * `KEY:<rate key>` / `KEY:<group>:*` (a rate key's rate limit: rules/rates.ts).
 */
export const GLOBAL_POLICY_KEY = 'GLOBAL';
export const OWNER_POLICY_PREFIX = 'OWNER:';
export const TYPE_POLICY_PREFIX = 'TYPE:';
export const KEY_POLICY_PREFIX = 'KEY:';

export function typePolicyKey(taskType: string): string {
  return `${TYPE_POLICY_PREFIX}${taskType}`;
}

export function ownerPolicyKey(owner: string): string {
  return `${OWNER_POLICY_PREFIX}${owner}`;
}

/** A rate key's own policy, and the scope its starts are logged under (one budget per key either way). */
export function keyPolicyKey(rateKey: string): string {
  return `${KEY_POLICY_PREFIX}${rateKey}`;
}

/** The policy a group of rate keys shares (`<group>:<anything>`): each key of the group gets its own budget of its rate. */
export function keyGroupPolicyKey(group: string): string {
  return `${KEY_POLICY_PREFIX}${group}:*`;
}

/**
 * Where the rate of key k comes from, most specific first: policy `KEY:<k>` if it exists, else `KEY:<g>:*`
 * where g is k's part before its first ':' (none for a key without ':'). The one lookup rule: the claims of
 * SQLite and MySQL call it, PostgreSQL's renders it (rules/rates.ts keyRateJoinSql), diagnose explains with it.
 */
export function ratePolicyKeys(rateKey: string): string[] {
  const colon = rateKey.indexOf(':');
  return colon <= 0 ? [keyPolicyKey(rateKey)] : [keyPolicyKey(rateKey), keyGroupPolicyKey(rateKey.slice(0, colon))];
}
