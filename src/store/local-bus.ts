/**
 * In-process delivery of store events. Stores without a server-side channel
 * (SQLite, MySQL) use it so that a submit wakes the workers of the same
 * process at once; PostgreSQL adds LISTEN/NOTIFY for the other processes.
 * Buses are shared per database key, so two store objects on one database
 * in one process hear each other.
 */
import type { StoreEvent, StoreListener } from './types.js';

const buses = new Map<unknown, LocalBus>();

export class LocalBus {
  private readonly listeners = new Set<StoreListener>();

  static for(key: unknown): LocalBus {
    let bus = buses.get(key);
    if (!bus) {
      bus = new LocalBus();
      buses.set(key, bus);
    }
    return bus;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  publish(event: StoreEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // a listener's bug must not break the producer that published
      }
    }
  }
}
