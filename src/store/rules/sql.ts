/**
 * Statuses, status sets and policy keys as SQL text: what the dialects
 * interpolate into their statements (and PostgreSQL into its claim and
 * outcome functions). Only constants of this codebase are written into SQL;
 * every value from outside travels as a parameter.
 */
import { GLOBAL_POLICY_KEY } from '../../core/policy-keys.js';
import { LEASED_STATUSES, TaskStatus, TERMINAL_STATUSES } from '../../core/status.js';

/** A string constant of this codebase as an SQL literal (never user input: no escaping is needed or done). */
export function literal(text: string): string {
  return `'${text}'`;
}

/** Every status as its SQL literal: `STATUS_SQL.RUNNING` is `'RUNNING'`. */
export const STATUS_SQL = Object.fromEntries(Object.values(TaskStatus).map((status) => [status, literal(status)])) as {
  readonly [K in TaskStatus]: string;
};

/** A list of statuses as SQL: `('RUNNING','CANCEL_REQUESTED')`. */
export function statusList(statuses: readonly TaskStatus[]): string {
  return `(${statuses.map(literal).join(',')})`;
}

/** Held by a worker: every fenced write requires one of these. */
export const LEASED_SQL = statusList(LEASED_STATUSES);
export const LEASED_STATUSES_SET: ReadonlySet<string> = new Set(LEASED_STATUSES);
/** What a claim may take (when due and before its deadline). */
const CLAIMABLE_STATUSES: readonly TaskStatus[] = ['QUEUED', 'RETRY_WAIT'];
export const CLAIMABLE_SQL = statusList(CLAIMABLE_STATUSES);
export const TERMINAL_SQL = statusList(TERMINAL_STATUSES);
/** Ends that keep a result and an artifact. */
export const SUCCESS_STATUSES: readonly TaskStatus[] = ['SUCCESS', 'PARTIAL_SUCCESS'];

/** The GLOBAL policy key as SQL, and the prefix of a type's key (`'TYPE:' || task_type`). */
export const GLOBAL_POLICY_SQL = literal(GLOBAL_POLICY_KEY);
export const TYPE_POLICY_PREFIX_SQL = literal('TYPE:');
