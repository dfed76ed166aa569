/**
 * Adaptive limits in the store (core/adaptive.ts; the rule: rules/adaptive.ts):
 * the per-type configuration and state (system_async_task_adaptive), the
 * audit trail of limit changes (system_async_task_limit_change) and the window
 * reads the controller decides from. The statements are the same on every
 * dialect: they run through SideSql. Times are the database clock.
 */
import { ADAPTIVE_ACTOR, type AdaptiveConfig, type AdaptiveState, type LimitChange, type LimitChangeKind } from '../core/adaptive.js';
import { uuidv7 } from '../core/ids.js';
import { typePolicyKey } from '../core/policy-keys.js';
import { guardSideStore } from './base.js';
import * as rules from './rules/adaptive.js';
import { sideSqlOf, type GuardedStatement, type SideSql } from './side-sql.js';
import type { Actor, Store } from './types.js';

export type { OutcomeCounts, LimitStep } from './rules/adaptive.js';

/** The controller's own actor in the trail. */
const CONTROLLER: Actor = { id: ADAPTIVE_ACTOR, name: null };

export interface OutcomeScope {
  taskType?: string;
  owner?: string;
}

export class AdaptiveStore {
  constructor(
    private readonly store: Store,
    private readonly sql: SideSql,
  ) {}

  async getAdaptive({ taskType }: { taskType: string }): Promise<AdaptiveState | null> {
    const rows = await this.sql.rows('reading an adaptive limit', rules.selectStateSql(this.sql, 'WHERE task_type = ?'), [taskType]);
    return rows[0] ? rules.stateFromRow(rows[0], (v) => this.sql.readTime(v)) : null;
  }

  async listAdaptive(): Promise<AdaptiveState[]> {
    const rows = await this.sql.rows('listing adaptive limits', rules.selectStateSql(this.sql, 'ORDER BY task_type'), []);
    return rows.map((row) => rules.stateFromRow(row, (v) => this.sql.readTime(v)));
  }

  /**
   * Turns adaptation on (or re-configures it): it starts from the type's policy limit clamped to the bounds,
   * else from maxLimit; the policy holds that start, and the trail says so — one transaction.
   */
  async saveAdaptive({ config, actor }: { config: AdaptiveConfig; actor: Actor }): Promise<AdaptiveState> {
    const now = await this.store.now();
    const policy = (await this.store.listPolicies()).find((p) => p.policyKey === typePolicyKey(config.taskType));
    const held = policy?.maxConcurrency ?? null;
    const start = Math.min(config.maxLimit, Math.max(config.minLimit, held ?? config.maxLimit));
    const bounds = `${config.minLimit}..${config.maxLimit}`;
    const cause = held === null ? `adaptive on (${bounds}): starts at the maximum` : `adaptive on (${bounds}): starts from the policy's ${held}`;
    await this.guarded('saving an adaptive limit', [
      ...rules.saveStatements(this.sql, config, { start, now, policyExists: policy !== undefined }),
      this.change(config.taskType, held, start, 'set', cause, actor, now),
    ]);
    return (await this.getAdaptive({ taskType: config.taskType }))!;
  }

  /** Finished attempts started since `since` (of a type, an owner, or all), by outcome and error code. */
  async outcomeCounts({ since, scope }: { since: Date; scope: OutcomeScope }): Promise<rules.OutcomeCounts> {
    const filters: string[] = [];
    const values: unknown[] = [this.sql.time(since)];
    if (scope.taskType !== undefined) {
      filters.push('t.task_type = ?');
      values.push(scope.taskType);
    }
    if (scope.owner !== undefined) {
      filters.push('t.owner = ?');
      values.push(scope.owner);
    }
    const rows = await this.sql.rows('counting attempt outcomes', rules.outcomeCountsSql(this.sql, filters.join(' AND ')), values);
    return rules.countsFromRows(rows);
  }

  /** The controller's step (rules/adaptive.ts stepStatements): false when another worker or an operator came first. */
  step(params: { state: AdaptiveState; step: rules.LimitStep; now: Date }): Promise<boolean> {
    const { state, step, now } = params;
    const cooldownCutoff = new Date(now.getTime() - state.cooldownMs);
    return this.sql.guarded('stepping an adaptive limit', [
      ...rules.stepStatements(this.sql, { taskType: state.taskType, from: state.currentLimit, to: step.to, now, cooldownCutoff }),
      this.change(state.taskType, state.currentLimit, step.to, step.kind, step.cause, CONTROLLER, now),
    ]);
  }

  /** An operator set the policy's limit by hand: adaptation is suspended until `until` (null: until resumed). False: not adaptive. */
  async override(params: { taskType: string; from: number | null; limit: number; until: Date | null; actor: Actor }): Promise<boolean> {
    const now = await this.store.now();
    const span = params.until === null ? 'until resumed' : `until ${params.until.toISOString()}`;
    return this.sql.guarded('overriding an adaptive limit', [
      rules.overrideStatement(this.sql, { taskType: params.taskType, limit: params.limit, until: params.until, now }),
      this.change(
        params.taskType,
        params.from,
        params.limit,
        'override',
        `operator override: ${params.limit}, adaptation suspended ${span}`,
        params.actor,
        now,
      ),
    ]);
  }

  /** Adaptation again, from the limit in force: an operator's resume, or (`expired`) the controller's when the override's time is up. */
  async resume(params: { state: AdaptiveState; actor?: Actor; expired?: boolean }): Promise<boolean> {
    const now = await this.store.now();
    const { state } = params;
    const cause = params.expired ? 'override expired: adaptation resumes' : 'operator resume: adaptation resumes';
    return this.sql.guarded('resuming an adaptive limit', [
      rules.resumeStatement(this.sql, { taskType: state.taskType, now, dueBy: params.expired ? now : null }),
      this.change(state.taskType, state.currentLimit, state.currentLimit, 'resume', cause, params.actor ?? CONTROLLER, now),
    ]);
  }

  /** No more adaptation; the limit stays. False: it was not on. */
  async disable(params: { state: AdaptiveState; actor: Actor }): Promise<boolean> {
    const now = await this.store.now();
    const { state } = params;
    return this.sql.guarded('turning an adaptive limit off', [
      rules.disableStatement(this.sql, { taskType: state.taskType, now }),
      this.change(state.taskType, state.currentLimit, null, 'off', `adaptive off: the limit stays at ${state.currentLimit}`, params.actor, now),
    ]);
  }

  /** The trail of a type, newest first. */
  async listLimitChanges({ taskType, limit }: { taskType: string; limit: number }): Promise<LimitChange[]> {
    const rows = await this.sql.rows('reading limit changes', rules.selectChangesSql(this.sql, limit), [taskType]);
    return rows.map((row) => rules.changeFromRow(row, (v) => this.sql.readTime(v)));
  }

  /** Cleanup: the trail's rows older than `before`; how many. */
  purgeLimitChanges({ before }: { before: Date }): Promise<number> {
    return this.sql.exec('purging limit changes', rules.purgeChangesSql(this.sql), [this.sql.time(before)]);
  }

  private async guarded(action: string, statements: GuardedStatement[]): Promise<void> {
    await this.sql.guarded(action, statements);
  }

  private change(taskType: string, from: number | null, to: number | null, kind: LimitChangeKind, cause: string, actor: Actor, at: Date): GuardedStatement {
    return rules.changeStatement(this.sql, { id: uuidv7(), taskType, from, to, kind, cause, actor, at });
  }
}

/** The AdaptiveStore on the same database (and connections) as `store`, guarded like the store's own methods. */
export async function adaptiveStoreOf(store: Store): Promise<AdaptiveStore> {
  return guardSideStore(store, new AdaptiveStore(store, await sideSqlOf(store)));
}
