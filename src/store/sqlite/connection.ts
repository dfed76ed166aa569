/**
 * The SQLite connection: opened once per store (WAL, busy timeout), every
 * statement prepared once per connection and SQL text — preparing costs more
 * than running on the hot path — and the lock waits (LockWaits).
 */
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';
import { StoreError } from '../../core/errors.js';

export type Db = Database.Database;

/**
 * How long one statement may wait inside SQLite for another process's lock.
 * SQLite's busy handler sleeps inside the call, so this is how long the
 * event loop (timers, handlers' aborts, heartbeats) can freeze per try;
 * longer waits are LockWaits' tries, with the event loop free between them.
 */
export const BUSY_SLICE_MS = 20;

export function openDatabase(path: string, busyTimeoutMs: number): Db {
  try {
    const db = new Database(path);
    // Opening (WAL set-up, a recovery) may wait the whole timeout: nothing runs on this store yet.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma(`busy_timeout = ${Math.min(busyTimeoutMs, BUSY_SLICE_MS)}`);
    return db;
  } catch (error) {
    throw new StoreError(`cannot open SQLite database ${path}: ${whyNotOpened(path, error)}`, { cause: error });
  }
}

/** The reason in words: a missing directory is the common one (SQLite creates the file, not its folder). */
function whyNotOpened(path: string, error: unknown): string {
  const directory = dirname(resolve(path));
  if (path !== ':memory:' && !existsSync(directory)) return `its directory ${directory} does not exist (create it first)`;
  return error instanceof Error ? error.message : String(error);
}

const caches = new WeakMap<Db, Map<string, Database.Statement>>();

export function statement(db: Db, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let prepared = cache.get(sql);
  if (!prepared) cache.set(sql, (prepared = db.prepare(sql)));
  return prepared;
}

/**
 * Waits for another process's lock without blocking the event loop: each try
 * blocks at most BUSY_SLICE_MS, the tries are spaced by timers, and the whole
 * wait ends after busyTimeoutMs (then SQLITE_BUSY reaches the caller).
 *
 * Writes of this store take turns (one queue): while the lock is held
 * elsewhere, one write tries at a time instead of every pending heartbeat,
 * progress write and lease check each blocking a slice per round — the
 * chained waits that froze a worker for seconds. When nothing waits, a write
 * runs at once, synchronously, as before.
 */
export class LockWaits {
  private waiting = 0;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly busyTimeoutMs: number) {}

  /** A write: in turn behind this store's other waiting writes. */
  async write<T>(work: () => T): Promise<T> {
    const started = performance.now();
    if (this.waiting === 0) {
      try {
        return work();
      } catch (error) {
        if (!isBusy(error)) throw error;
      }
    }
    this.waiting += 1;
    // Each turn starts from the event loop: turns chained as microtasks would block one slice each, back to back.
    const turn = this.tail.then(() => setImmediate()).then(() => this.retry(work, started));
    this.tail = turn.then(noop, noop);
    try {
      return await turn;
    } finally {
      this.waiting -= 1;
    }
  }

  /** A read: WAL readers rarely meet a lock (a recovery, a checkpoint); they retry without queueing behind writes. */
  read<T>(work: () => T): Promise<T> {
    return this.retry(work, performance.now());
  }

  private async retry<T>(work: () => T, started: number): Promise<T> {
    for (let tries = 1; ; tries += 1) {
      try {
        return work();
      } catch (error) {
        if (!isBusy(error) || performance.now() - started >= this.busyTimeoutMs) throw error;
      }
      // Jittered, growing to 50 ms: several processes waiting for one lock do not all try at the same instant.
      await sleep(Math.min(50, 2 ** tries) * (0.5 + Math.random() / 2));
    }
  }
}

function isBusy(error: unknown): boolean {
  return String((error as { code?: unknown } | null)?.code ?? '').startsWith('SQLITE_BUSY');
}

function noop(): void {}
