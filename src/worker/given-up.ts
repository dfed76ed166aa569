/**
 * Leases this worker gave up on its own (its local lease deadline passed
 * without a confirmed renewal: lease-keeper.ts) go back to the queue as soon
 * as the database answers — if they are still alive there.
 *
 * A give-up is the worker's doubt, not a crash: the database may well have
 * kept the lease (it was slow, or this process was starved). Left to expire,
 * each such lease would count as a lost one, and two of them quarantine a
 * healthy task (core/task.ts isQuarantined). So once the aborted handler has
 * stopped, the lease is renewed — which succeeds only while it is unexpired
 * and still this attempt's (rules/leases.ts) — and then handed back fenced:
 * a started attempt as RELEASED (recorded, uncharged), a never-started one
 * as a plain hand-back. A lease that had already expired is left to the
 * sweep, which counts it: the database did move on, as after a crash.
 * One statement of each kind per turn of the event loop, for every lease
 * given up in it.
 */
import type { Lease } from '../core/task.js';
import type { AttemptOutcome, Store } from '../store/types.js';
import type { Announcer } from './events.js';
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';

export class GivenUpLeases {
  private pending: { execution: Execution; started: boolean }[] = [];
  private scheduled = false;
  private readonly flushes = new Set<Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly leaseMs: number,
    private readonly table: ExecutionTable,
    private readonly events: Announcer,
  ) {}

  /** The worker gave up this lease; its handler (if any) was aborted and is handed back once it stopped. */
  add(execution: Execution, started: boolean): void {
    this.table.handingBack(1); // a quarantined task waits for it (execution-table.ts)
    void execution.handlerSettled.then(() => {
      this.pending.push({ execution, started });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        const flush = this.flush(this.pending.splice(0));
        this.flushes.add(flush);
        void flush.finally(() => this.flushes.delete(flush));
      });
    });
  }

  /** Resolves when every hand-back begun so far has settled (stop() waits for them). */
  async settled(): Promise<void> {
    await Promise.all([...this.flushes]);
  }

  private async flush(batch: { execution: Execution; started: boolean }[]): Promise<void> {
    try {
      const { renewed, cancelRequested } = await this.store.renewLeases({ leases: batch.map(({ execution }) => execution.lease), leaseMs: this.leaseMs });
      const alive = new Set([...renewed, ...cancelRequested]);
      const back = batch.filter(({ execution }) => alive.has(execution.task.id));
      const leases = (started: boolean): Lease[] => back.filter((item) => item.started === started).map(({ execution }) => execution.lease);
      const outcomes: AttemptOutcome[] = leases(true).map((lease) => ({ kind: 'RELEASED', lease, progress: null }));
      const [finished] = await Promise.all([this.store.finishAttempts({ outcomes }), this.store.releaseTasks({ leases: leases(false) })]);
      const applied = new Set(outcomes.filter((_, index) => finished.applied[index]).map((outcome) => outcome.lease.taskId));
      for (const { execution, started } of back) {
        if (started && !applied.has(execution.task.id)) continue;
        this.events.emit('released', { task: { ...execution.task, status: 'QUEUED' }, started });
      }
    } catch (error) {
      // The database is still out of reach: the leases expire and the sweep requeues them, counted.
      this.events.emit('error', { operation: 'releaseTasks', error });
    } finally {
      this.table.handingBack(-batch.length);
    }
  }
}
