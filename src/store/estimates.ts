/**
 * The reads a start estimate needs (client/estimate.ts): a waiting task's
 * place in claim order per scope (rules/estimate.ts), an owner's leased
 * count, and the recent throughput of a scope from the attempt table. The
 * statements are the same on every dialect: they run through SideSql.
 */
import { guardSideStore } from './base.js';
import * as rules from './rules/estimate.js';
import { sideSqlOf, type SideSql } from './side-sql.js';
import type { Store } from './types.js';

export type { AheadScope } from './rules/estimate.js';

/** Finished attempts of a scope started since a moment, and their first and last finish (null: none). */
export interface FinishedSince {
  finished: number;
  firstFinish: Date | null;
  lastFinish: Date | null;
}

export class EstimateStore {
  constructor(private readonly sql: SideSql) {}

  /** Claimable tasks of the scope ahead of `taskId` in claim order, due by `dueBy`; at most `cap`. */
  async countAhead(params: { taskId: string; scope: rules.AheadScope; dueBy: Date; cap: number }): Promise<number> {
    const rows = await this.sql.rows('counting tasks ahead', rules.aheadSql(this.sql, params.scope, params.cap), [params.taskId, this.sql.time(params.dueBy)]);
    return Number(rows[0]?.n ?? 0);
  }

  /** Tasks of the task's sequence key that run before it (the head and those waiting ahead). */
  async sequenceAhead({ taskId }: { taskId: string }): Promise<number> {
    const rows = await this.sql.rows('counting a sequence’s tasks ahead', rules.sequenceAheadSql(this.sql), [taskId]);
    return Number(rows[0]?.n ?? 0);
  }

  /** The mean run time (start to finish) of the last attempts of a type started since `since`; null: none finished. */
  async meanRunMs(params: { since: Date; taskType: string }): Promise<number | null> {
    const rows = await this.sql.rows('reading recent run times', rules.recentRunsSql(this.sql), [this.sql.time(params.since), params.taskType]);
    if (rows.length === 0) return null;
    const total = rows.reduce((sum, row) => sum + (this.sql.readTime(row.finished_at).getTime() - this.sql.readTime(row.started_at).getTime()), 0);
    return total / rows.length;
  }

  async leasedOfOwner({ owner }: { owner: string }): Promise<number> {
    const rows = await this.sql.rows('counting an owner’s leased tasks', rules.leasedOfOwnerSql(this.sql), [owner]);
    return Number(rows[0]?.n ?? 0);
  }

  /** Finished attempts started since `since`: of a type, of an owner, or (neither) of all. */
  async finishedSince(params: { since: Date; taskType?: string; owner?: string }): Promise<FinishedSince> {
    const filter = params.taskType !== undefined ? 't.task_type = ?' : params.owner !== undefined ? 't.owner = ?' : '';
    const values = [this.sql.time(params.since), ...(params.taskType !== undefined ? [params.taskType] : params.owner !== undefined ? [params.owner] : [])];
    const rows = await this.sql.rows('reading recent throughput', rules.finishedSinceSql(this.sql, filter), values);
    const time = (value: unknown): Date | null => (value === null || value === undefined ? null : this.sql.readTime(value));
    return { finished: Number(rows[0]?.n ?? 0), firstFinish: time(rows[0]?.first_finish), lastFinish: time(rows[0]?.last_finish) };
  }
}

/** The EstimateStore on the same database (and connections) as `store`, guarded like the store's own methods. */
export async function estimateStoreOf(store: Store): Promise<EstimateStore> {
  return guardSideStore(store, new EstimateStore(await sideSqlOf(store)));
}
