/**
 * Wake-ups on MySQL/MariaDB. There is no LISTEN/NOTIFY: the store publishes
 * its writes on an in-process LocalBus (base.ts), shared by every store of
 * this process on the same database, so a submit wakes this process's
 * workers at once; workers in other processes find new tasks by polling.
 */
import { LocalBus } from '../local-bus.js';

/** The bus of a database, keyed by host:port/database. */
export function wakeupBus(identity: string): LocalBus {
  return LocalBus.for(`mysql:${identity}`);
}
