/**
 * When a lease statement's grant may be counted from (store/types.ts
 * OnSent): the moment it was last put on a connection, moved on by what the
 * server later says the statement waited before it could grant (MySQL: the
 * claim lock). The database cannot have granted earlier, so a local lease
 * deadline counted from here never outlives the database's.
 */
import type { OnSent } from '../store/types.js';

export class SendAnchor {
  private sent: number;
  private anchor: number;

  constructor(private readonly now: () => number) {
    this.sent = this.anchor = now();
  }

  /** The moment the leases count from. */
  get at(): number {
    return this.anchor;
  }

  readonly onSent: OnSent = (serverWaitMs) => {
    if (serverWaitMs === undefined) this.sent = this.anchor = this.now();
    else this.anchor = this.sent + Math.max(0, serverWaitMs);
  };
}
