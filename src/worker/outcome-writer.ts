/**
 * Batches attempt outcomes: everything that finishes in one tick of the event
 * loop is written by one finishAttempts call. While a write is in flight new
 * outcomes queue behind it, so under load batches grow by themselves.
 *
 * Where the store can (capability finishAndClaim) and the worker wants to
 * (ClaimAlong), the write also claims the worker's next tasks in the same
 * round trip.
 *
 * A failed write is retried as a whole when the database could not be
 * reached (the leases are still ours until they expire, and the fence says so
 * if they did). A write the database refused (a value it cannot store) is
 * split until the outcome at fault stands alone, so it cannot hold the others
 * hostage; that one is written as FAILED (OUTCOME_NOT_WRITABLE) instead, and
 * if even that is refused it is left to lease expiry.
 *
 * A write retried after an unreachable failure may have committed the first
 * time: an outcome its retry reports as not applied is checked against the
 * row before it is reported as a lost lease (commit-doubt.ts).
 */
import type { Clock } from '../core/clock.js';
import { ErrorCode, TaskLeaseError, ValidationError, truncate } from '../core/errors.js';
import { newTraceId } from '../core/failure.js';
import type { Task } from '../core/task.js';
import type { AttemptOutcome, ClaimParams, FinishResult, Store } from '../store/types.js';
import { outcomeCommitted } from './commit-doubt.js';

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
  /** A write carrying it failed as unreachable: that write may have committed. */
  inDoubt?: boolean;
}

export interface OutcomeWriterOptions<T> {
  store: Store;
  clock: Clock;
  /**
   * Called per outcome with whether the fenced write applied (false: the lease is gone, or the outcome could
   * not be written), whether a claim went with it, and the dead letter it made (null: none).
   */
  onWritten: (item: PendingOutcome<T>, applied: boolean, claimedAlong: boolean, deadLetterId: string | null) => void;
  onError: (error: unknown) => void;
  /** Wait before retrying a write that could not reach the database. */
  retryDelayMs: number;
  claimAlong?: ClaimAlong | null;
  maxBatch?: number;
}

export class OutcomeWriter<T> {
  private pending: PendingOutcome<T>[] = [];
  /** Groups split off a refused batch, written one group at a time before anything else. */
  private isolated: PendingOutcome<T>[][] = [];
  private scheduled = false;
  private running: Promise<void> | null = null;

  constructor(private readonly options: OutcomeWriterOptions<T>) {}

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
    while (this.running || this.pending.length > 0 || this.isolated.length > 0) {
      if (!this.running) this.kick();
      await this.running;
    }
  }

  private kick(): void {
    if (this.running || (this.pending.length === 0 && this.isolated.length === 0)) return;
    this.running = this.writeAll().finally(() => {
      this.running = null;
      if (this.pending.length > 0 || this.isolated.length > 0) this.kick();
    });
  }

  private async writeAll(): Promise<void> {
    const { clock, retryDelayMs, maxBatch = 1000 } = this.options;
    while (this.isolated.length > 0 || this.pending.length > 0) {
      const batch = this.isolated.shift() ?? this.pending.splice(0, maxBatch);
      if (!(await this.write(batch))) await new Promise((resolve) => clock.setTimeout(() => resolve(undefined), retryDelayMs));
    }
  }

  /** Writes one batch; false when the database could not be reached and the batch waits for another try. */
  private async write(batch: PendingOutcome<T>[]): Promise<boolean> {
    const { store, claimAlong } = this.options;
    const outcomes = batch.map((item) => item.outcome);
    const claim = store.capabilities.finishAndClaim && claimAlong ? claimAlong.begin() : null;
    let results: FinishResult;
    let claimed: Task[] = [];
    try {
      if (claim) ({ claimed, ...results } = await store.finishAndClaim({ outcomes, claim }));
      else results = await store.finishAttempts({ outcomes });
    } catch (error) {
      if (claim) claimAlong!.end(null, claim);
      this.options.onError(error);
      if (refusedByDatabase(error)) {
        this.isolate(batch, error);
        return true;
      }
      for (const item of batch) item.inDoubt = true;
      this.pending.unshift(...batch);
      return false;
    }
    const applied = batch.some((item, index) => item.inDoubt && !results.applied[index]) ? await this.resolveDoubts(batch, results.applied) : results.applied;
    // Only failures for good carry a dead letter: the common batch looks nothing up.
    const letters = results.deadLetters.length === 0 ? null : new Map(results.deadLetters.map((d) => [d.taskId, d.deadLetterId]));
    batch.forEach((item, index) => this.options.onWritten(item, applied[index] === true, claim !== null, letters?.get(item.outcome.lease.taskId) ?? null));
    if (claim) claimAlong!.end(claimed, claim);
    return true;
  }

  /** Outcomes a retry found already closed: applied when the database shows they were ours. */
  private async resolveDoubts(batch: PendingOutcome<T>[], results: boolean[]): Promise<boolean[]> {
    return Promise.all(
      batch.map(async (item, index) => {
        if (results[index] === true || !item.inDoubt) return results[index] === true;
        try {
          return await outcomeCommitted(this.options.store, item.outcome);
        } catch (error) {
          this.options.onError(error);
          return false; // still in doubt: reported as lost, as before
        }
      }),
    );
  }

  private isolate(batch: PendingOutcome<T>[], error: unknown): void {
    if (batch.length > 1) {
      const middle = Math.ceil(batch.length / 2);
      this.isolated.unshift(batch.slice(0, middle), batch.slice(middle));
      return;
    }
    const item = batch[0]!;
    const { outcome } = item;
    if (outcome.kind === 'FAILED' && outcome.failure.errorCode === ErrorCode.OUTCOME_NOT_WRITABLE) {
      this.options.onWritten(item, false, false, null); // refused twice: the sweep will deal with it when the lease expires
      return;
    }
    const reason = error instanceof Error ? error.message : String(error);
    this.isolated.unshift([
      {
        token: item.token,
        outcome: {
          kind: 'FAILED',
          lease: outcome.lease,
          progress: null,
          failure: {
            errorCode: ErrorCode.OUTCOME_NOT_WRITABLE,
            retryable: false,
            traceId: newTraceId(),
            message: truncate(`the database refused this attempt's ${outcome.kind} outcome: ${reason}`, 1000),
          },
        },
      },
    ]);
  }
}

/** A value the database will not take is refused again on every try; an unreachable database is not. */
function refusedByDatabase(error: unknown): boolean {
  return error instanceof ValidationError || !(error instanceof TaskLeaseError);
}
