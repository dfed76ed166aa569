/**
 * Claim-along on MySQL/MariaDB: an outcome write that carries the worker's
 * next claim, in one transaction of two round trips instead of two
 * transactions of two (under binding limits, every batch of outcomes is
 * followed by a claim). Round trip 1: the named claim lock, BEGIN, the
 * outcome rows locked (finish.ts), then the claim's reads (claim.ts).
 * Round trip 2: the fenced outcome writes, then the claim's writes, COMMIT
 * and the lock release. The claim counts the leases the outcomes end as free
 * (claim.ts freeEnded): their rows are locked by this transaction, and the
 * writes that end them commit with the claim, so limits still hold.
 * The claim lock comes first, as in every claim: its holder may then wait
 * for an outcome row that a short transaction holds (a renewal, a cancel
 * request), none of which ever waits for the claim lock, so no cycle forms.
 */
import type { Task } from '../../core/task.js';
import type { Row } from '../rows.js';
import type { AttemptOutcome, ClaimParams, FinishAndClaimResult } from '../types.js';
import { claim, type CapCache, type ClaimSteps, type EndedLease } from './claim.js';
import type { BatchedTransaction, Statement } from './connection.js';
import { lockOutcomeRows, planOutcomes, type OutcomePlan } from './finish.js';
import { settle } from './flows.js';

export async function finishAndClaim(
  tx: BatchedTransaction,
  outcomes: readonly AttemptOutcome[],
  params: ClaimParams,
  caps: CapCache,
): Promise<FinishAndClaimResult> {
  const steps = new FinishingSteps(tx, outcomes);
  const claimed: Task[] = await claim(steps, params, caps);
  // A claim that took nothing sent no writes of its own: the outcomes still must.
  const result = await steps.flush();
  return { ...result, claimed };
}

/** The claim's round trips, with the outcome lock in front of the first and the outcome writes in front of the last. */
class FinishingSteps implements ClaimSteps {
  private plan: OutcomePlan | null = null;
  private written = false;

  constructor(
    private readonly tx: BatchedTransaction,
    private readonly outcomes: readonly AttemptOutcome[],
  ) {}

  ended(): readonly EndedLease[] {
    return (this.plan?.ended ?? []).map((row: Row) => ({
      taskType: String(row.task_type),
      owner: row.owner === null ? null : String(row.owner),
      leaseOwner: String(row.lease_owner),
    }));
  }

  async step(statements: readonly Statement[]): Promise<unknown[]> {
    if (this.plan) return this.tx.step(statements);
    const [rows, ...results] = (await this.tx.step([lockOutcomeRows(this.outcomes), ...statements])) as unknown[];
    this.plan = planOutcomes(this.outcomes, rows as Row[]);
    return results;
  }

  async last(statements: readonly Statement[]): Promise<unknown[]> {
    const writes = this.written ? [] : this.plan!.writes;
    this.written = true;
    if (writes.length > 0 && this.plan!.flowEnded.length > 0) {
      // A flow node ended: its children settle before the commit (flows.ts), in a round trip of their own.
      this.plan!.check(await this.tx.step(writes));
      this.released = await settle(this.tx, this.plan!.flowEnded);
      return this.tx.last(statements);
    }
    const results = await this.tx.last([...writes, ...statements]);
    if (writes.length > 0) this.plan!.check(results);
    return results.slice(writes.length);
  }

  private released: string[] = [];

  /** The outcome writes, if the claim's last step did not carry them; the outcomes' answer. */
  async flush(): Promise<OutcomePlan['result']> {
    if (!this.written && this.plan!.writes.length > 0) await this.last([]);
    return this.released.length > 0 ? { ...this.plan!.result, released: this.released } : this.plan!.result;
  }
}
