/** Policy rows are keyed `GLOBAL`, `TYPE:<task_type>` (the seed's keys) or `OWNER:<owner>` (a tenant's limit). */
export const GLOBAL_POLICY_KEY = 'GLOBAL';
export const OWNER_POLICY_PREFIX = 'OWNER:';

export function typePolicyKey(taskType: string): string {
  return `TYPE:${taskType}`;
}

export function ownerPolicyKey(owner: string): string {
  return `${OWNER_POLICY_PREFIX}${owner}`;
}
