/**
 * When and how much to claim. One claim at a time; a request made while a
 * claim runs asks for one more after it (a claim answers every request made
 * before it: their outcomes and submits were committed). Claims fill the
 * free room (slots plus prefetch) in batches; where the store can, an
 * outcome write carries the next claim (claim-along: one round trip per
 * batch where limits bind). Polling is the fallback for wake-ups that never
 * come: soon after work was found, backing off while claims find nothing.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Task } from '../core/task.js';
import type { ClaimParams, Store } from '../store/types.js';
import type { Announcer } from './events.js';
import type { ExecutionTable } from './execution-table.js';
import type { ClaimAlong } from './outcome-writer.js';
import type { ResolvedWorkerOptions } from './options.js';
import { SendAnchor } from './send-anchor.js';

export class ClaimScheduler implements ClaimAlong {
  private claiming: Promise<void> | null = null;
  private claimAlongDone: (() => void) | null = null;
  private claimAgain = false;
  private claimAlong: SendAnchor | null = null;
  private pollTimer: TimerHandle = undefined;
  private pollDelayMs = 0;
  private active = false;
  /** Resolves when the first policy read is done: an operator's settings apply from the first claim. */
  private ready: Promise<void> = Promise.resolve();
  /** The last claim brought fewer tasks than it asked for: the queue is (nearly) empty, or limits bind. */
  lastClaimShort = false;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedWorkerOptions,
    private readonly table: ExecutionTable,
    private readonly clock: Clock,
    private readonly events: Announcer,
    private readonly taskTypes: readonly string[],
    /** Takes the leases of a claim (or hands them back if the worker is stopping); `sentAt`: when the claim was sent (monotonic), which is when its leases count from. */
    private readonly adopt: (tasks: Task[], sentAt: number) => void,
  ) {}

  start(ready: Promise<void>): void {
    this.active = true;
    this.ready = ready;
    this.request();
  }

  /** No more claims; resolves when the one in flight (if any) has been adopted. */
  async stop(): Promise<void> {
    this.active = false;
    this.clock.clearTimeout(this.pollTimer);
    await this.claiming;
  }

  request(): void {
    if (!this.active) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = this.claimUntilFull().then((found) => {
      this.claiming = null;
      this.armPoll(found);
      if (this.claimAgain) {
        this.claimAgain = false;
        this.request();
      }
    });
  }

  /** Just before an outcome write: what to claim with it, unless a claim is in flight. */
  begin(): ClaimParams | null {
    // (No wait for the first policy read: an outcome exists only after a claim, which waited for it.)
    if (!this.active || this.claiming) return null;
    const params = this.next();
    if (params === null) return null;
    this.claiming = new Promise<void>((resolve) => (this.claimAlongDone = resolve));
    this.claimAlong = new SendAnchor(() => this.clock.now());
    params.onSent = this.claimAlong.onSent;
    return params;
  }

  end(claimed: Task[] | null, params: ClaimParams): void {
    this.claiming = null;
    this.claimAlongDone?.();
    this.claimAlongDone = null;
    if (claimed === null) return this.request(); // the write failed and claimed nothing: claim on our own
    this.adopt(claimed, this.claimAlong?.at ?? this.clock.now());
    this.lastClaimShort = claimed.length < params.limit;
    this.armPoll(claimed.length > 0);
    // A full batch may leave more behind; a request made during the write may want more.
    if (claimed.length === params.limit || this.claimAgain) this.request();
  }

  /** Claims until the room is filled or the queue is empty; true if it leased anything. */
  private async claimUntilFull(): Promise<boolean> {
    let found = false;
    await this.ready;
    try {
      while (this.active) {
        const params = this.next();
        if (params === null) return found;
        // The leases count from when the claim is on a connection: not from when it began to wait for one
        // behind handlers holding the pool (a lease the database just granted must not arrive half spent).
        const sent = new SendAnchor(() => this.clock.now());
        params.onSent = sent.onSent;
        const tasks = await this.store.claimTasks(params);
        this.adopt(tasks, sent.at);
        this.events.storeAnswered();
        found ||= tasks.length > 0;
        this.lastClaimShort = tasks.length < params.limit;
        if (this.lastClaimShort) return found;
        // A synchronous store (SQLite) resolves at once: let timers, I/O and the outcome writer run
        // before the next claim, or a long backlog would starve heartbeats and the stop signal.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (error) {
      this.events.emit('error', { operation: 'claimTasks', error });
    }
    return found;
  }

  /** What to claim now, or null when there is no room; marks the claim as started (see claimAgain). */
  private next(): ClaimParams | null {
    const o = this.options;
    // A quarantined task waits for the others to finish, then runs alone: claiming more would only delay it.
    if (this.table.holdsIsolated) return null;
    const capacity = o.concurrency + o.prefetch;
    // Finished attempts whose outcome write is in flight do not take room: their work is done, and
    // claiming while they are written keeps the claim and the write overlapping. Still, never more
    // than two capacities of leases in all.
    const held = this.table.size;
    const room = Math.min(capacity - (held - this.table.finishing), 2 * capacity - held);
    // While work is waiting, wait until half the capacity is free: fewer, larger claims.
    if (room <= 0 || (this.table.waiting > 0 && room * 2 < capacity)) return null;
    this.claimAgain = false;
    return {
      workerId: o.workerId,
      taskTypes: this.taskTypes,
      limit: Math.min(room, o.claimBatchSize),
      leaseMs: o.leaseMs,
      globalConcurrency: o.globalConcurrency,
      typeConcurrency: o.typeConcurrency,
      // Three heartbeats: a worker that missed one renewal of its registry row still counts as live.
      liveWithinMs: 3 * o.heartbeatIntervalMs,
      ownerConcurrency: o.ownerConcurrency,
      fairOwners: o.fairOwners,
    };
  }

  private armPoll(found: boolean): void {
    if (!this.active) return;
    const o = this.options;
    this.pollDelayMs = found ? o.minPollIntervalMs : Math.min(o.pollIntervalMs, Math.max(o.minPollIntervalMs, this.pollDelayMs * 2));
    this.clock.clearTimeout(this.pollTimer);
    this.pollTimer = this.clock.setTimeout(() => this.request(), this.pollDelayMs);
  }
}
