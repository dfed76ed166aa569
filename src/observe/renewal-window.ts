/**
 * Lease renewals over a sliding window, behind the success-rate gauge (the
 * seed's async.task.lease.renewal.success.rate, read by its runbook with a
 * plain curl). PromQL users get the same figure from the two counters.
 */
interface Entry {
  at: number;
  attempted: number;
  succeeded: number;
}

export class RenewalWindow {
  private readonly entries: Entry[] = [];

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  record(attempted: number, succeeded: number): void {
    if (attempted <= 0) return;
    this.entries.push({ at: this.now(), attempted, succeeded });
    this.prune();
  }

  /** Share of renewals in the window that kept their lease; 1 when none was attempted (nothing failed). */
  rate(): number {
    this.prune();
    let attempted = 0;
    let succeeded = 0;
    for (const e of this.entries) {
      attempted += e.attempted;
      succeeded += e.succeeded;
    }
    return attempted === 0 ? 1 : succeeded / attempted;
  }

  private prune(): void {
    const oldest = this.now() - this.windowMs;
    let drop = 0;
    while (drop < this.entries.length && this.entries[drop]!.at < oldest) drop += 1;
    if (drop > 0) this.entries.splice(0, drop);
  }
}
