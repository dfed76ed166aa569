/**
 * Keeps this worker's leases: one renewal statement per heartbeat for all of
 * them, the renewal's answer applied (renewed / cancel requested / lost), and
 * a local lease deadline on the monotonic clock. A lease counts as confirmed
 * from the moment its renewal was *put on a connection* (store OnSent: the
 * database may have extended it later, never earlier — and a wait for a
 * connection of this process's own pool is not the database's silence), and
 * a handler is aborted before that deadline passes without a newer
 * confirmation — a hung database, a starved pool or a slow answer never
 * leaves a handler running past a lease another worker may hold.
 * Every renewal checks that deadline before it is sent: after a blocked event
 * loop the heartbeat's timer may run before the deadline's, and a lease past
 * its local deadline is given up, never renewed (the store renews no expired
 * lease either: rules/leases.ts).
 *
 * A renewal's answer names task ids; it is applied only to the execution of
 * the very lease sent (task and attempt): the task may have been claimed
 * again meanwhile, and that newer attempt is not what the answer speaks of.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Lease, TaskProgress } from '../core/task.js';
import type { RenewResult, Store } from '../store/types.js';
import type { Announcer, LeaseLossReason } from './events.js';
import type { Execution } from './execution.js';
import type { ExecutionTable } from './execution-table.js';
import { GivenUpLeases } from './given-up.js';
import { SendAnchor } from './send-anchor.js';
import type { ResolvedWorkerOptions } from './options.js';

/** A renewal's answer, with what it was about: the leases sent and when. */
interface Renewal {
  result: RenewResult;
  /** When the statement was put on a connection (monotonic). */
  sentAt: number;
  sent: readonly Lease[];
  /** How long it waited for a connection (the lease pool's queue), and its round trip from then. */
  waitMs: number;
  roundTripMs: number;
}

/** A renewal that took more than this share of the slack (lease − safety margin − heartbeat interval) is reported. */
const RISKY_SHARE_OF_SLACK = 0.5;

export class LeaseKeeper {
  private heartbeatTimer: TimerHandle = undefined;
  private deadlineTimer: TimerHandle = undefined;
  /** Heartbeats in flight (a slow renewal may still run when the next one starts). */
  private readonly beats = new Set<Promise<void>>();
  /** A heartbeat whose renewal has not answered yet: the next tick is skipped, not queued behind it. */
  private beating = false;
  /** Leases whose check (ctx.checkCancellation) waits for the next round; null when no round waits. */
  private queuedChecks: Map<string, Lease> | null = null;
  private checkRound: Promise<void> = Promise.resolve();
  /** How long the last renewal took to answer, its wait for a connection included. */
  private lastRenewalMs = 0;
  /** How long before the lease's end (counted from the send) the worker gives up on it. */
  readonly safetyMarginMs: number;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedWorkerOptions,
    private readonly table: ExecutionTable,
    private readonly clock: Clock,
    private readonly events: Announcer,
  ) {
    this.safetyMarginMs = Math.max(50, Math.min(options.leaseMs / 10, options.leaseMs - 2 * options.heartbeatIntervalMs));
    this.slackMs = options.leaseMs - this.safetyMarginMs - options.heartbeatIntervalMs;
    this.givenUp = new GivenUpLeases(store, options.leaseMs, table, events);
  }

  private readonly givenUp: GivenUpLeases;

  /**
   * How long a renewal may take, from the heartbeat that asks for it, before
   * the next heartbeat comes too late to keep the lease: lease − safety margin −
   * heartbeat interval. A worker whose renewals use up much of it is about to
   * give up live leases (the leasesAtRisk event, logged).
   */
  readonly slackMs: number;

  start(): void {
    this.heartbeatTimer = this.clock.setInterval(() => {
      const beat = this.heartbeat();
      this.beats.add(beat);
      void beat.finally(() => this.beats.delete(beat));
    }, this.options.heartbeatIntervalMs);
  }

  stop(): void {
    this.clock.clearInterval(this.heartbeatTimer);
    this.clock.clearTimeout(this.deadlineTimer);
    this.heartbeatTimer = this.deadlineTimer = undefined;
  }

  /**
   * New leases were taken (their claim confirmed them): make sure a deadline timer runs. A claim that came
   * back late (a slow statement, a busy process) brings leases with less time left than the heartbeat
   * assumes: if the next heartbeat could answer after their local deadline, they are renewed at once, in a
   * statement of their own (disjoint from any renewal in flight). A prompt claim renews nothing extra.
   */
  adopted(executions: readonly Execution[]): void {
    // A claim whose answer came after its leases' local deadline starts nothing: they are given up before any handler runs.
    this.expireUnconfirmed();
    const now = this.clock.now();
    // The next heartbeat comes within an interval — two while a renewal is in flight (the tick it overlaps is skipped) —
    // and takes as long as the last one did.
    const confirmedWithin = (this.beating ? 2 : 1) * this.options.heartbeatIntervalMs + this.lastRenewalMs;
    const late = executions.filter((execution) => execution.holdsLease && this.deadlineOf(execution) - now < confirmedWithin);
    if (late.length === 0 || this.heartbeatTimer === undefined) return;
    const beat = this.renew(late.map((execution) => execution.lease)).then(
      (answer) => void this.apply(answer),
      (error: unknown) => this.events.emit('error', { operation: 'renewLeases', error }),
    );
    this.beats.add(beat);
    void beat.finally(() => this.beats.delete(beat));
  }

  /**
   * A cancellation was requested (renewal answer or the store's wake-up): a
   * waiting task is handed back, which ends it CANCELLED; a running one's
   * handler is aborted and its outcome will be CANCELLED.
   */
  cancel(taskId: string): void {
    const execution = this.table.get(taskId);
    if (!execution?.holdsLease) return;
    if (execution.state === 'running') {
      execution.abort('CANCELLED', 'cancellation requested');
      return;
    }
    this.table.moveTo(execution, 'done');
    this.table.forgetIfSettled(execution);
    this.store.releaseTasks({ leases: [execution.lease] }).then(
      (released) => {
        if (released === 1) this.events.emit('cancelled', { task: { ...execution.task, status: 'CANCELLED' }, durationMs: 0 });
      },
      (error: unknown) => this.events.emit('error', { operation: 'releaseTasks', error }),
    );
  }

  /**
   * Asks the store about a lease (ctx.checkCancellation) and applies the
   * answer. Checks asked while one is on its way ride together on the next
   * one: one statement per round however many handlers ask, so a slow or
   * locked database never sees a queue of them (one per handler per call).
   */
  check(execution: Execution): Promise<void> {
    if (!execution.holdsLease) return Promise.resolve(); // lost already: its signal says so
    if (this.queuedChecks) {
      this.queuedChecks.set(execution.task.id, execution.lease);
      return this.checkRound;
    }
    const leases = new Map([[execution.task.id, execution.lease]]);
    this.queuedChecks = leases;
    this.checkRound = this.checkRound
      .catch(() => undefined)
      .then(async () => {
        // From here on, new checks wait for the round after this one.
        this.queuedChecks = null;
        this.apply(await this.renew([...leases.values()]));
      });
    return this.checkRound;
  }

  /**
   * One lease renewed in a commit that is on disk before it answers (ctx.fence: fence.ts), its answer applied as a
   * heartbeat's (a lost lease is lost, a cancellation request cancels); true when the lease held.
   */
  async confirmDurably(execution: Execution): Promise<boolean> {
    const answer = await this.renew([execution.lease], true);
    this.apply(answer);
    const id = execution.task.id;
    return answer.sent.length === 1 && (answer.result.renewed.includes(id) || answer.result.cancelRequested.includes(id));
  }

  async saveProgress(execution: Execution, progress: TaskProgress): Promise<boolean> {
    const ok = await this.store.saveProgress({ lease: execution.lease, progress });
    if (ok) this.events.emit('progress', { task: execution.task, progress });
    else this.loseLease(execution, 'write');
    return ok;
  }

  /** Resolves when the hand-backs of leases given up so far have settled (a graceful stop waits for them). */
  givenUpSettled(): Promise<void> {
    return this.givenUp.settled();
  }

  /** Resolves when every heartbeat sent so far has been answered (ctx.complete: none may still ask for its row). */
  async heartbeatsSettled(): Promise<void> {
    await Promise.all([...this.beats]);
  }

  /** The lease is gone: a waiting execution is dropped, a running (or committing) one aborted. */
  loseLease(execution: Execution, reason: LeaseLossReason): void {
    if (!execution.holdsLease && execution.state !== 'committing') return;
    const wasWaiting = execution.state === 'buffered';
    this.table.moveTo(execution, 'lost');
    this.table.forgetIfSettled(execution);
    this.events.emit('leaseLost', { task: execution.task, reason });
    // Given up here, not taken away: back to the queue, uncharged, if the database still has it (given-up.ts).
    if (reason === 'unreachable') this.givenUp.add(execution, !wasWaiting);
    if (!wasWaiting) execution.abort('LEASE_LOST', 'lease lost: another worker may own this task now');
  }

  private async heartbeat(): Promise<void> {
    const holders = this.table.leaseHolders();
    if (holders.length === 0 || this.beating) return;
    this.beating = true;
    try {
      const answer = await this.renew(holders.map((execution) => execution.lease));
      const lost = this.apply(answer);
      if (answer.sent.length > 0) this.events.storeAnswered();
      const { result, waitMs, roundTripMs } = answer;
      this.events.emit('heartbeat', { renewed: result.renewed.length, cancelRequested: result.cancelRequested.length, lost, waitMs, roundTripMs });
      if (waitMs + roundTripMs > RISKY_SHARE_OF_SLACK * this.slackMs) this.events.emit('leasesAtRisk', { waitMs, roundTripMs, slackMs: this.slackMs });
    } catch (error) {
      this.events.emit('error', { operation: 'renewLeases', error });
      this.expireUnconfirmed();
    } finally {
      this.beating = false;
    }
  }

  /**
   * Renews the leases whose execution has not ended (lost or done) and
   * whose local deadline has not passed; the others are answered lost
   * without asking (and a passed one is given up first): a renewal must
   * never revive a lease this worker should have given up already, whichever
   * timer ran first. (A committing execution is asked about only by confirm,
   * once its handler's transaction is over.)
   */
  private async renew(leases: readonly Lease[], durable = false): Promise<Renewal> {
    this.expireUnconfirmed();
    const sent = leases.filter((lease) => this.table.holderOf(lease)?.isFinal === false);
    const queuedAt = this.clock.now();
    // A store that does not say when its statement is on a connection leaves the (earlier) moment it was asked.
    const anchor = new SendAnchor(() => this.clock.now());
    const result: RenewResult =
      sent.length === 0
        ? { renewed: [], cancelRequested: [], lost: [] }
        : await this.store.renewLeases({ leases: sent, leaseMs: this.options.leaseMs, onSent: anchor.onSent, ...(durable ? { durable } : {}) });
    const sentAt = anchor.at;
    if (sent.length < leases.length) for (const lease of leases) if (!sent.includes(lease)) result.lost.push(lease.taskId);
    const roundTripMs = this.clock.now() - sentAt;
    if (sent.length > 0) this.lastRenewalMs = this.clock.now() - queuedAt;
    return { result, sentAt, sent, waitMs: sentAt - queuedAt, roundTripMs };
  }

  /** Applies a renewal's answer; returns how many leases were really lost (not merely finished meanwhile). */
  private apply({ result, sentAt, sent }: Renewal): number {
    const byTask = new Map(sent.map((lease) => [lease.taskId, lease]));
    const holderOf = (id: string): Execution | undefined => {
      const lease = byTask.get(id);
      return lease && this.table.holderOf(lease);
    };
    for (const id of [...result.renewed, ...result.cancelRequested]) {
      const execution = holderOf(id);
      if (execution && execution.leaseConfirmedAt < sentAt) execution.leaseConfirmedAt = sentAt;
    }
    for (const id of result.cancelRequested) if (holderOf(id)) this.cancel(id);
    let lost = 0;
    for (const id of result.lost) {
      const execution = holderOf(id);
      // An outcome written meanwhile also ends the lease: that is not a loss.
      if (execution?.holdsLease) {
        lost += 1;
        this.loseLease(execution, 'renewal');
      }
    }
    this.armDeadline();
    return lost;
  }

  /** Every lease whose local deadline has passed is given up. */
  private expireUnconfirmed(): void {
    const now = this.clock.now();
    for (const execution of this.table.leaseHolders()) {
      if (now >= this.deadlineOf(execution)) this.loseLease(execution, 'unreachable');
    }
    this.armDeadline();
  }

  private deadlineOf(execution: Execution): number {
    return execution.leaseConfirmedAt + this.options.leaseMs - this.safetyMarginMs;
  }

  /** One timer, at the earliest local deadline of the leases held. */
  private armDeadline(): void {
    this.clock.clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
    if (this.heartbeatTimer === undefined) return;
    let earliest = Infinity;
    for (const execution of this.table.leaseHolders()) earliest = Math.min(earliest, this.deadlineOf(execution));
    if (earliest === Infinity) return;
    this.deadlineTimer = this.clock.setTimeout(() => this.expireUnconfirmed(), Math.max(0, earliest - this.clock.now()));
  }
}
