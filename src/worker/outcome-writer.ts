/**
 * Batches attempt outcomes: everything that finishes in one tick of the event
 * loop is written by one finishAttempts call. While a write is in flight new
 * outcomes queue behind it, so under load batches grow by themselves.
 *
 * Where the store can (finishAndClaim) and the worker wants to (ClaimAlong),
 * the write also claims the worker's next tasks in the same round trip.
 */
import type { Task } from '../core/task.js';
import type { AttemptOutcome, ClaimParams, Store } from '../store/types.js';

/** The worker's side of claiming along with an outcome write. */
export interface ClaimAlong {
  /** Just before a write: what to claim with it, or null for no claim. */
  begin(): ClaimParams | null;
  /** After the write's outcomes were reported: what it claimed, or null when the write failed (nothing was claimed). */
  end(claimed: Task[] | null, params: ClaimParams): void;
}

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
    /** Called per outcome with whether the fenced write applied, and whether a claim went with it. */
    private readonly onWritten: (item: PendingOutcome<T>, applied: boolean, claimedAlong: boolean) => void,
    private readonly onError: (error: unknown) => void,
    private readonly retryDelayMs: number,
    private readonly claimAlong: ClaimAlong | null = null,
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
      const outcomes = batch.map((item) => item.outcome);
      const claim = this.store.capabilities.finishAndClaim && this.claimAlong ? this.claimAlong.begin() : null;
      let results: boolean[];
      let claimed: Task[] = [];
      try {
        if (claim) ({ applied: results, claimed } = await this.store.finishAndClaim({ outcomes, claim }));
        else results = await this.store.finishAttempts({ outcomes });
      } catch (error) {
        // Nothing was written or claimed. The leases are still ours until they expire; try again. If
        // they expire first, the fenced write will say so and the outcome is dropped.
        if (claim) this.claimAlong!.end(null, claim);
        this.pending.unshift(...batch);
        this.onError(error);
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs));
        continue;
      }
      batch.forEach((item, index) => this.onWritten(item, results[index] === true, claim !== null));
      if (claim) this.claimAlong!.end(claimed, claim);
    }
  }
}
