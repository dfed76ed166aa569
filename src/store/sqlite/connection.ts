/**
 * The SQLite connection: opened once per store (WAL, busy timeout), and every
 * statement prepared once per connection and SQL text — preparing costs more
 * than running on the hot path.
 */
import Database from 'better-sqlite3';
import { StoreError } from '../../core/errors.js';

export type Db = Database.Database;

export function openDatabase(path: string, busyTimeoutMs: number): Db {
  try {
    const db = new Database(path);
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    return db;
  } catch (error) {
    throw new StoreError(`cannot open SQLite database ${path}`, { cause: error });
  }
}

const caches = new WeakMap<Db, Map<string, Database.Statement>>();

export function statement(db: Db, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  let prepared = cache.get(sql);
  if (!prepared) cache.set(sql, (prepared = db.prepare(sql)));
  return prepared;
}
