/**
 * A small typed event emitter. Unlike node:events it gives 'error' no special
 * meaning, and a listener that throws cannot break the emitter's caller.
 */
export type Listener<T> = (event: T) => void;

export class Emitter<Events extends object> {
  private readonly listeners = new Map<keyof Events, Set<Listener<never>>>();

  on<K extends keyof Events>(name: K, listener: Listener<Events[K]>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener as Listener<never>);
    return () => this.off(name, listener);
  }

  off<K extends keyof Events>(name: K, listener: Listener<Events[K]>): void {
    this.listeners.get(name)?.delete(listener as Listener<never>);
  }

  once<K extends keyof Events>(name: K, listener: Listener<Events[K]>): () => void {
    const off = this.on(name, (event) => {
      off();
      listener(event);
    });
    return off;
  }

  /** Resolves with the first event that satisfies `predicate`. */
  waitFor<K extends keyof Events>(name: K, predicate: (event: Events[K]) => boolean = () => true): Promise<Events[K]> {
    return new Promise((resolve) => {
      const off = this.on(name, (event) => {
        if (!predicate(event)) return;
        off();
        resolve(event);
      });
    });
  }

  /** Whether anyone listens: lets a hot path skip building an event nobody reads. */
  protected listening(name: keyof Events): boolean {
    return (this.listeners.get(name)?.size ?? 0) > 0;
  }

  protected emit<K extends keyof Events>(name: K, event: Events[K]): void {
    const set = this.listeners.get(name);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<Events[K]>)(event);
      } catch {
        // observers must not break the worker
      }
    }
  }
}
