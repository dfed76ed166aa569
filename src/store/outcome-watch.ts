/**
 * In-process wake-ups for waiters (client.waitFor), per database: the
 * writes that may end a task ping every waiter of this process, which then
 * re-reads its own row. Nothing is done while nobody waits (one map lookup),
 * so the drain does not pay for the feature. Kept apart from the workers'
 * bus: a worker must not claim on every finished task.
 */
import type { LocalBus } from './local-bus.js';

const waiters = new WeakMap<LocalBus, Set<() => void>>();

export function watchLocal(bus: LocalBus, listener: () => void): () => void {
  let set = waiters.get(bus);
  if (!set) waiters.set(bus, (set = new Set()));
  const entry = (): void => listener();
  set.add(entry);
  return () => {
    set.delete(entry);
  };
}

export function pingLocal(bus: LocalBus): void {
  const set = waiters.get(bus);
  if (!set || set.size === 0) return;
  for (const listener of [...set]) {
    try {
      listener();
    } catch {
      // a waiter's bug must not break the write that pinged
    }
  }
}
