/**
 * A clock that moves only when a test says so. One object serves as the
 * worker's Clock (monotonic `now()` and timers) and, through `wallNow`, as the
 * SQLite store's and the client's wall clock: delays, deadlines, retry
 * backoff, leases and schedules all read the same time.
 *
 * Timers due later than now fire during advance()/setTime(), in due order,
 * each with the clock set to its due time. A timer due now (0 ms) fires on the
 * next turn of the event loop, as a real one would: a worker's "at once" (a
 * deadline already past, a zero grace period) needs no advance.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { InvalidStateError } from '../core/errors.js';

interface Timer {
  id: number;
  at: number;
  callback: () => void;
  /** Set for an interval: its period. */
  every: number | null;
}

export class TestClock implements Clock {
  private monotonic = 0;
  private readonly origin: number;
  private readonly timers = new Map<number, Timer>();
  private nextId = 1;

  /** `start`: the wall time the clock shows first. Default: the real time now. */
  constructor(start: Date | number = Date.now()) {
    this.origin = typeof start === 'number' ? start : start.getTime();
    if (!Number.isFinite(this.origin)) throw new InvalidStateError('TestClock: start must be a valid date');
  }

  /** Monotonic milliseconds (the worker's clock): starts at 0. */
  now(): number {
    return this.monotonic;
  }

  /** Wall-clock milliseconds since the epoch (the store's and the client's clock). */
  wallNow(): number {
    return this.origin + this.monotonic;
  }

  /** The wall time as a Date. */
  date(): Date {
    return new Date(this.wallNow());
  }

  /** Timers armed and not fired or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    return this.arm(callback, ms, null);
  }

  setInterval(callback: () => void, ms: number): TimerHandle {
    return this.arm(callback, ms, Math.max(1, ms));
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.timers.delete(handle);
  }

  clearInterval(handle: TimerHandle): void {
    this.clearTimeout(handle);
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new InvalidStateError(`TestClock.advance: ms must be a finite number >= 0, got ${ms}`);
    const until = this.monotonic + ms;
    for (let timer = this.nextDue(until); timer; timer = this.nextDue(until)) {
      this.monotonic = Math.max(this.monotonic, timer.at);
      if (timer.every === null) this.timers.delete(timer.id);
      else timer.at += timer.every;
      timer.callback();
    }
    this.monotonic = until;
  }

  /** Moves the wall clock forward to `date` (never back: a monotonic clock cannot), firing timers on the way. */
  setTime(date: Date | number): void {
    const target = typeof date === 'number' ? date : date.getTime();
    if (!Number.isFinite(target)) throw new InvalidStateError('TestClock.setTime: not a valid date');
    if (target < this.wallNow()) {
      throw new InvalidStateError(
        `TestClock.setTime: ${new Date(target).toISOString()} is before the clock's ${this.date().toISOString()}; time only moves forward`,
      );
    }
    this.advance(target - this.wallNow());
  }

  private arm(callback: () => void, ms: number, every: number | null): number {
    const id = this.nextId++;
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    this.timers.set(id, { id, at: this.monotonic + delay, callback, every });
    // Due now: the next turn of the event loop fires it (unless cleared or fired by an advance first).
    if (delay === 0 && every === null) {
      setImmediate(() => {
        const timer = this.timers.get(id);
        if (timer && timer.at <= this.monotonic) {
          this.timers.delete(id);
          timer.callback();
        }
      });
    }
    return id;
  }

  /** The earliest timer due at or before `until` (the first armed among equals). */
  private nextDue(until: number): Timer | undefined {
    let next: Timer | undefined;
    for (const timer of this.timers.values()) if (timer.at <= until && (next === undefined || timer.at < next.at)) next = timer;
    return next;
  }
}
