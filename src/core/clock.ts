/**
 * The worker's clock: a monotonic `now()` (immune to wall-clock steps, which
 * must never stretch or shorten a lease) and the timers the worker arms.
 * Injectable so that tests can drive time; production uses the system's.
 */
export type TimerHandle = { unref?(): unknown } | number | undefined;

export interface Clock {
  /** Milliseconds on a monotonic clock; only differences mean anything. */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  setInterval(callback: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle): void;
  /**
   * Wall-clock milliseconds since the epoch, for what is a wall time (a task's deadline, its create time).
   * Optional: absent means Date.now(). A test clock (tasklease/testing) moves it with its timers.
   */
  wallNow?(): number;
}

/** The wall clock of `clock` (Date.now() unless it keeps its own). */
export function wallNow(clock: Clock): number {
  return clock.wallNow ? clock.wallNow() : Date.now();
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (callback, ms) => setInterval(callback, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
  wallNow: () => Date.now(),
};
