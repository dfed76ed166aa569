/**
 * Batches attempt outcomes: everything that finishes in one tick of the event
 * loop is written by one finishAttempts call. While a write is in flight new
 * outcomes queue behind it, so under load batches grow by themselves.
 */
import type { AttemptOutcome, Store } from '../store/types.js';

export interface PendingOutcome<T> {
  outcome: AttemptOutcome;
  token: T;
}

export class OutcomeWriter<T> {
  private pending: PendingOutcome<T>[] = [];
  private scheduled = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    /** Called per outcome with whether the fenced write applied. */
    private readonly onWritten: (item: PendingOutcome<T>, applied: boolean) => void,
    private readonly onError: (error: unknown) => void,
    private readonly retryDelayMs: number,
    private readonly maxBatch = 1000,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  enqueue(outcome: AttemptOutcome, token: T): void {
    this.pending.push({ outcome, token });
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.kick();
    });
  }

  /** Resolves when nothing is pending or in flight. */
  async drain(): Promise<void> {
    while (this.running || this.pending.length > 0) {
      if (!this.running) this.kick();
      await this.running;
    }
  }

  private kick(): void {
    if (this.running || this.pending.length === 0) return;
    this.running = this.writeAll().finally(() => {
      this.running = null;
      if (this.pending.length > 0) this.kick();
    });
  }

  private async writeAll(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      let results: boolean[];
      try {
        results = await this.store.finishAttempts({ outcomes: batch.map((item) => item.outcome) });
      } catch (error) {
        // The leases are still ours until they expire; try again. If they expire
        // first, the fenced write will say so and the outcome is dropped.
        this.pending.unshift(...batch);
        this.onError(error);
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs));
        continue;
      }
      batch.forEach((item, index) => this.onWritten(item, results[index] === true));
    }
  }
}
