/**
 * The wake-ups of submits made in a store's own transactions, sent after
 * their commits rather than inside them, at most one in flight: whatever is
 * submitted while one is on its way goes out in the next, with every task
 * type named since: under a flood of concurrent submits, one per round trip
 * instead of one per submit (PostgreSQL keeps the NOTIFY in the statement of
 * a submit made alone, where it costs no round trip). Inside the transaction, a wake-up made the submits commit one at a
 * time: a PostgreSQL transaction that NOTIFYs holds a database-wide lock from
 * its commit until its WAL is flushed, and a MySQL submit held its wake-up
 * counter's row lock through its commit (bench/http-load.ts). Best effort,
 * like every wake-up: a lost one is made up by the workers' poll.
 */
import type { InsertTaskResult } from './types.js';

/** The task types a submit created (an idempotent hit creates nothing, and wakes nobody). */
export function createdTypes(results: readonly InsertTaskResult[]): string[] {
  return [...new Set(results.filter((r) => r.created).map((r) => r.task.taskType))];
}

export class SubmitWakeups {
  private types: Set<string> | null = null;
  private all = false;
  private sending: Promise<void> | null = null;

  /** `send`: one wake-up naming `taskTypes` (empty: every type); its failure is ignored. */
  constructor(private readonly send: (taskTypes: readonly string[]) => Promise<void>) {}

  /** After a submit's commit: wakes the types it created, if any. */
  created(results: readonly InsertTaskResult[]): void {
    const types = createdTypes(results);
    if (types.length > 0) this.submitted(types);
  }

  /** After a commit that created tasks of `taskTypes` (empty: wake every type). */
  submitted(taskTypes: readonly string[]): void {
    if (taskTypes.length === 0) this.all = true;
    else for (const type of taskTypes) (this.types ??= new Set()).add(type);
    this.sending ??= this.drain();
  }

  /** Resolves once nothing is left to send (a store's close). */
  async settled(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async drain(): Promise<void> {
    try {
      while (this.all || this.types) {
        const types = this.all ? [] : [...this.types!];
        this.all = false;
        this.types = null;
        await this.send(types).catch(() => undefined);
      }
    } finally {
      this.sending = null;
    }
  }
}
