/**
 * The periodic recovery sweep (DESIGN §3): expired leases requeued or failed,
 * expired cancel requests finished, due retries queued, waiting tasks past
 * their deadline failed. The rules are the store's; this only runs them on
 * a timer, one sweep at a time.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Store } from '../store/types.js';
import type { Announcer } from './events.js';

export class RecoverySweeper {
  private timer: TimerHandle = undefined;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly events: Announcer,
    private readonly options: { recoveryIntervalMs: number; recoveryBatchSize: number },
  ) {}

  /** Sweeps now and then every recoveryIntervalMs; 0 disables the sweep in this worker. */
  start(): void {
    if (this.options.recoveryIntervalMs <= 0) return;
    this.timer = this.clock.setInterval(() => void this.sweep(), this.options.recoveryIntervalMs);
    void this.sweep();
  }

  /** No more sweeps; resolves when the one in flight has ended. */
  async stop(): Promise<void> {
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }

  private sweep(): Promise<void> {
    this.sweeping ??= this.store
      .recover({ batchSize: this.options.recoveryBatchSize })
      .then(
        (result) => this.events.emit('recoveryBatch', { result }),
        (error: unknown) => this.events.emit('error', { operation: 'recover', error }),
      )
      .finally(() => {
        this.sweeping = null;
      });
    return this.sweeping;
  }
}
