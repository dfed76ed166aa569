/**
 * The adaptive limit's rule, once for every dialect: what one evaluation
 * decides from a window's attempt outcomes (AIMD: multiplicative decrease at
 * or above the failure threshold, additive increase below it, within the
 * bounds), the statements of each change, and the rows they read.
 *
 * Invariants:
 * - the limit the claim reads is the TYPE:<type> policy's max_concurrency;
 *   the controller changes it only in the transaction of its compare-and-set
 *   on the adaptive row (current_limit = from AND changed_at ≤ now −
 *   cooldown), and only if the policy still holds `from` — so N workers
 *   evaluating at once make one step per cooldown, and an operator's write
 *   of the policy in between is never overwritten;
 * - the window never reaches back before the last change: each decision
 *   judges the limit in force, not the failures that caused the last step;
 * - every change of the limit writes its audit row in the same transaction.
 */
import type { AdaptiveConfig, AdaptiveState, LimitChange, LimitChangeKind } from '../../core/adaptive.js';
import { typePolicyKey } from '../../core/policy-keys.js';
import type { GuardedStatement, SideSql } from '../side-sql.js';
import type { Actor } from '../types.js';

export const ADAPTIVE_TABLE = 'system_async_task_adaptive';
export const LIMIT_CHANGE_TABLE = 'system_async_task_limit_change';
const POLICY_TABLE = 'system_async_task_policy';

/** Finished attempts of a window (outcomes SUCCESS, PARTIAL_SUCCESS, FAILED), and the failures by error code. */
export interface OutcomeCounts {
  finished: number;
  failed: number;
  byCode: Record<string, number>;
}

export interface LimitStep {
  to: number;
  kind: Extract<LimitChangeKind, 'decrease' | 'increase'>;
  cause: string;
}

/** What one evaluation does with the limit in force (`windowMs`: the window actually read). null: nothing. */
export function nextLimit(state: AdaptiveState, counts: OutcomeCounts, windowMs: number): LimitStep | null {
  if (counts.finished < state.minSamples) return null;
  const counted = state.codes === null ? counts.failed : state.codes.reduce((sum, code) => sum + (counts.byCode[code] ?? 0), 0);
  const rate = counted / counts.finished;
  const over = `over ${seconds(windowMs)} s, ${counts.finished} attempts`;
  if (rate >= state.failureThreshold) {
    const to = Math.max(state.minLimit, Math.min(state.currentLimit - 1, Math.floor(state.currentLimit * state.decreaseFactor)));
    if (to >= state.currentLimit) return null;
    return { to, kind: 'decrease', cause: `failure rate ${rate.toFixed(2)} ≥ ${state.failureThreshold} ${over}${codeSummary(counts, state.codes)}` };
  }
  const to = Math.min(state.maxLimit, state.currentLimit + state.increaseStep);
  if (to <= state.currentLimit) return null;
  return { to, kind: 'increase', cause: `success: +${to - state.currentLimit} (failure rate ${rate.toFixed(2)} < ${state.failureThreshold} ${over})` };
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1);
}

/** " (HTTP_503 ×17, TIMEOUT ×2)": the counted codes, most frequent first, at most three. */
function codeSummary(counts: OutcomeCounts, codes: readonly string[] | null): string {
  const entries = Object.entries(counts.byCode)
    .filter(([code]) => codes === null || codes.includes(code))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3);
  return entries.length === 0 ? '' : ` (${entries.map(([code, n]) => `${code} ×${n}`).join(', ')})`;
}

const STATE_COLUMNS =
  'task_type, min_limit, max_limit, window_ms, min_samples, failure_threshold, codes_json, decrease_factor, increase_step, cooldown_ms, enabled, overridden, override_until, current_limit, changed_at, updated_at';
const CHANGE_COLUMNS = 'id, task_type, from_limit, to_limit, cause_kind, cause, actor, actor_name, changed_at';

export function selectStateSql(sql: SideSql, where: string): string {
  return `SELECT ${STATE_COLUMNS} FROM ${sql.table(ADAPTIVE_TABLE)} ${where}`;
}

export function stateFromRow(row: Record<string, unknown>, time: (value: unknown) => Date): AdaptiveState {
  return {
    taskType: String(row.task_type),
    minLimit: Number(row.min_limit),
    maxLimit: Number(row.max_limit),
    windowMs: Number(row.window_ms),
    minSamples: Number(row.min_samples),
    failureThreshold: Number(row.failure_threshold),
    codes: row.codes_json === null || row.codes_json === undefined ? null : (JSON.parse(String(row.codes_json)) as string[]),
    decreaseFactor: Number(row.decrease_factor),
    increaseStep: Number(row.increase_step),
    cooldownMs: Number(row.cooldown_ms),
    enabled: Number(row.enabled) === 1,
    overridden: Number(row.overridden) === 1,
    overrideUntil: row.override_until === null || row.override_until === undefined ? null : time(row.override_until),
    currentLimit: Number(row.current_limit),
    changedAt: time(row.changed_at),
    updatedAt: time(row.updated_at),
  };
}

export function selectChangesSql(sql: SideSql, limit: number): string {
  return `SELECT ${CHANGE_COLUMNS} FROM ${sql.table(LIMIT_CHANGE_TABLE)} WHERE task_type = ? ORDER BY changed_at DESC, id DESC LIMIT ${Math.trunc(limit)}`;
}

export function changeFromRow(row: Record<string, unknown>, time: (value: unknown) => Date): LimitChange {
  const limit = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    id: String(row.id),
    taskType: String(row.task_type),
    fromLimit: limit(row.from_limit),
    toLimit: limit(row.to_limit),
    kind: String(row.cause_kind) as LimitChangeKind,
    cause: String(row.cause),
    actor: String(row.actor),
    actorName: row.actor_name === null || row.actor_name === undefined ? null : String(row.actor_name),
    changedAt: time(row.changed_at),
  };
}

/**
 * Finished attempts started since `since`, by outcome and error code, of the tasks a filter names ('' : every
 * task; else a condition on t.). Reads the attempt table's started_at index and each task by its key.
 */
export function outcomeCountsSql(sql: SideSql, taskFilter: string): string {
  return `SELECT a.outcome, a.error_code, COUNT(*) AS n
    FROM ${sql.table('system_async_task_attempt')} a JOIN ${sql.table('system_async_task')} t ON t.id = a.task_id
    WHERE a.started_at >= ? AND a.finished_at IS NOT NULL AND a.outcome IN ('SUCCESS', 'PARTIAL_SUCCESS', 'FAILED')${taskFilter ? ` AND ${taskFilter}` : ''}
    GROUP BY a.outcome, a.error_code`;
}

export function countsFromRows(rows: readonly Record<string, unknown>[]): OutcomeCounts {
  const counts: OutcomeCounts = { finished: 0, failed: 0, byCode: {} };
  for (const row of rows) {
    const n = Number(row.n);
    counts.finished += n;
    if (row.outcome !== 'FAILED') continue;
    counts.failed += n;
    const code = row.error_code === null || row.error_code === undefined ? 'UNKNOWN' : String(row.error_code);
    counts.byCode[code] = (counts.byCode[code] ?? 0) + n;
  }
  return counts;
}

/** The audit row of a change. */
export function changeStatement(
  sql: SideSql,
  change: { id: string; taskType: string; from: number | null; to: number | null; kind: LimitChangeKind; cause: string; actor: Actor; at: Date },
): GuardedStatement {
  return {
    sql: `INSERT INTO ${sql.table(LIMIT_CHANGE_TABLE)} (${CHANGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    values: [
      change.id,
      change.taskType,
      change.from,
      change.to,
      change.kind,
      change.cause.slice(0, 1000),
      change.actor.id,
      change.actor.name ?? null,
      sql.time(change.at),
    ],
    expect: 'one',
  };
}

/** The controller's step: the compare-and-set on the adaptive row, then the policy only if it still holds `from`. */
export function stepStatements(sql: SideSql, p: { taskType: string; from: number; to: number; now: Date; cooldownCutoff: Date }): GuardedStatement[] {
  return [
    {
      sql: `UPDATE ${sql.table(ADAPTIVE_TABLE)} SET current_limit = ?, changed_at = ?
        WHERE task_type = ? AND current_limit = ? AND enabled = 1 AND overridden = 0 AND changed_at <= ?`,
      values: [p.to, sql.time(p.now), p.taskType, p.from, sql.time(p.cooldownCutoff)],
      expect: 'one',
    },
    {
      sql: `UPDATE ${sql.table(POLICY_TABLE)} SET max_concurrency = ?, update_time = ? WHERE policy_key = ? AND max_concurrency = ?`,
      values: [p.to, sql.time(p.now), typePolicyKey(p.taskType), p.from],
      expect: 'one',
    },
  ];
}

/**
 * `set`: the adaptive row replaced (enabled, no override, at `start`), and the type's policy at `start` — updated,
 * or inserted when `policyExists` is false (its other fields the defaults).
 */
export function saveStatements(sql: SideSql, config: AdaptiveConfig, p: { start: number; now: Date; policyExists: boolean }): GuardedStatement[] {
  const now = sql.time(p.now);
  const policyKey = typePolicyKey(config.taskType);
  return [
    { sql: `DELETE FROM ${sql.table(ADAPTIVE_TABLE)} WHERE task_type = ?`, values: [config.taskType], expect: 'any' },
    {
      sql: `INSERT INTO ${sql.table(ADAPTIVE_TABLE)} (${STATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, NULL, ?, ?, ?)`,
      values: [
        config.taskType,
        config.minLimit,
        config.maxLimit,
        config.windowMs,
        config.minSamples,
        config.failureThreshold,
        config.codes === null ? null : JSON.stringify(config.codes),
        config.decreaseFactor,
        config.increaseStep,
        config.cooldownMs,
        p.start,
        now,
        now,
      ],
      expect: 'one',
    },
    p.policyExists
      ? {
          sql: `UPDATE ${sql.table(POLICY_TABLE)} SET max_concurrency = ?, update_time = ? WHERE policy_key = ?`,
          values: [p.start, now, policyKey],
          expect: 'one',
        }
      : {
          sql: `INSERT INTO ${sql.table(POLICY_TABLE)} (policy_key, task_type, max_concurrency, update_time) VALUES (?, ?, ?, ?)`,
          values: [policyKey, config.taskType, p.start, now],
          expect: 'one',
        },
  ];
}

/** An operator's override: adaptation suspended (until `until`, or a resume), the limit as the operator set it. */
export function overrideStatement(sql: SideSql, p: { taskType: string; limit: number; until: Date | null; now: Date }): GuardedStatement {
  return {
    sql: `UPDATE ${sql.table(ADAPTIVE_TABLE)} SET overridden = 1, override_until = ?, current_limit = ?, changed_at = ?, updated_at = ?
      WHERE task_type = ? AND enabled = 1`,
    values: [p.until === null ? null : sql.time(p.until), p.limit, sql.time(p.now), sql.time(p.now), p.taskType],
    expect: 'one',
  };
}

/**
 * Adaptation again from the limit in force: by an operator (`dueBy` null), or by the controller when the
 * override's time is up (`dueBy`: now; only an override with an end that has passed).
 */
export function resumeStatement(sql: SideSql, p: { taskType: string; now: Date; dueBy: Date | null }): GuardedStatement {
  const due = p.dueBy === null ? '' : ' AND override_until IS NOT NULL AND override_until <= ?';
  return {
    sql: `UPDATE ${sql.table(ADAPTIVE_TABLE)} SET overridden = 0, override_until = NULL, changed_at = ?, updated_at = ?
      WHERE task_type = ? AND enabled = 1 AND overridden = 1${due}`,
    values: [sql.time(p.now), sql.time(p.now), p.taskType, ...(p.dueBy === null ? [] : [sql.time(p.dueBy)])],
    expect: 'one',
  };
}

/** `off`: no more evaluations; the limit stays where it is (the policy is the operator's again). */
export function disableStatement(sql: SideSql, p: { taskType: string; now: Date }): GuardedStatement {
  return {
    sql: `UPDATE ${sql.table(ADAPTIVE_TABLE)} SET enabled = 0, overridden = 0, override_until = NULL, updated_at = ? WHERE task_type = ? AND enabled = 1`,
    values: [sql.time(p.now), p.taskType],
    expect: 'one',
  };
}

/** Cleanup: the trail older than the cut-off (a handful of rows per type and cooldown: one statement). */
export function purgeChangesSql(sql: SideSql): string {
  return `DELETE FROM ${sql.table(LIMIT_CHANGE_TABLE)} WHERE changed_at < ?`;
}
