/** Policy rows are keyed `GLOBAL` or `TYPE:<task_type>` (the seed's keys). */
export const GLOBAL_POLICY_KEY = 'GLOBAL';

export function typePolicyKey(taskType: string): string {
  return `TYPE:${taskType}`;
}
