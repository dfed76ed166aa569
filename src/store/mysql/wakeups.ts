/**
 * Wake-ups on MySQL/MariaDB. There is no LISTEN/NOTIFY. In-process: the
 * store publishes its writes on a LocalBus (base.ts), shared by every store
 * of this process on the same database, so a submit wakes this process's
 * workers at once. Across processes: every submit bumps a counter row after
 * its commit (../submit-wakeups.ts: at most one bump in flight per store; a
 * rolled-back submit wakes nobody), and a store with
 * listeners reads the counters' sum every few milliseconds — one primary-key
 * range read of 16 rows — and wakes its workers when the sum moves; it skips
 * the read while its workers drain a backlog (their last claim came back
 * full, or short only because limits bind, so they claim again anyway). Polling for
 * tasks (pollIntervalMs) stays the fallback when a read fails.
 */
import { randomInt } from 'node:crypto';
import { LocalBus } from '../local-bus.js';
import type { Conn, MysqlDatabase } from './connection.js';

/** Rows of system_async_task_wakeup (migration 4). */
const SLOTS = 16;
/** Back-off after a failed read (e.g. a schema not migrated yet): no error every few ms. */
const FAILED_READ_BACKOFF_MS = 1000;

/** The bus of a database, keyed by host:port/database. */
export function wakeupBus(identity: string): LocalBus {
  return LocalBus.for(`mysql:${identity}`);
}

/** After a submit's (or a requeue's) commit, in a statement of its own. */
export async function bumpWakeup(db: MysqlDatabase, conn: Conn): Promise<void> {
  await db.exec(conn, 'UPDATE system_async_task_wakeup SET version = version + 1 WHERE slot = ?', [randomInt(SLOTS)]);
}

async function readWakeups(db: MysqlDatabase): Promise<string> {
  const rows = await db.run((conn) => db.rows(conn, 'SELECT SUM(version) AS v FROM system_async_task_wakeup'));
  return String(rows[0]?.v ?? '');
}

/**
 * Reads the counters every `periodMs` while anyone listens, and calls
 * `onChange` when their sum moved since the last read. One read in flight at
 * a time; the timer never keeps the process alive.
 */
export class WakeupPoller {
  private listeners = 0;
  private timer: NodeJS.Timeout | null = null;
  private reading = false;
  private seen: string | null = null;

  constructor(
    private readonly db: MysqlDatabase,
    private readonly periodMs: number,
    private readonly onChange: () => void,
    /** A claim of this store that filled its limit began within the last period: the workers are draining a backlog and claim again anyway. */
    private readonly claimingNow: () => boolean,
  ) {}

  retain(): void {
    this.listeners += 1;
    // A read in flight reschedules itself; otherwise start now.
    if (this.listeners === 1 && this.periodMs > 0 && !this.reading && !this.timer) this.schedule(0);
  }

  release(): void {
    this.listeners = Math.max(0, this.listeners - 1);
    if (this.listeners === 0) this.stop();
  }

  /** No more reads (a read in flight finishes and does not reschedule). */
  stop(): void {
    this.listeners = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.seen = null;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    // Skipping a read delays a wake-up by one period at most: the next read still sees the sum moved.
    if (this.claimingNow()) return this.schedule(this.periodMs);
    this.reading = true;
    let delay = this.periodMs;
    try {
      const version = await readWakeups(this.db);
      // The first read after a start only sets the baseline: what came before, the worker's first claim finds.
      if (this.listeners > 0 && this.seen !== null && version !== this.seen) this.onChange();
      this.seen = this.listeners > 0 ? version : null;
    } catch {
      delay = FAILED_READ_BACKOFF_MS;
    } finally {
      this.reading = false;
    }
    if (this.listeners > 0 && !this.timer) this.schedule(delay);
  }
}
