/**
 * A small door for side stores whose statements are the same on every
 * dialect (adaptive limits, start estimates): rows of a read, and a guarded
 * batch — statements in one transaction, where a statement marked `one` that
 * changes no row (a compare-and-set that lost) rolls the whole batch back.
 * Statements use `?` placeholders (PostgreSQL's adapter numbers them);
 * times travel as `time(date)` and come back through `readTime`. Each dialect
 * adapter (<dialect>/side-sql.ts) runs on its store's own connections and
 * write path (SQLite: BEGIN IMMEDIATE through the store's lock turns).
 */
import type { Row } from './rows.js';
import type { Dialect, Store } from './types.js';

export interface GuardedStatement {
  sql: string;
  values: readonly unknown[];
  /** 'one': exactly one row must change, else nothing of the batch is kept. */
  expect: 'one' | 'any';
}

export interface SideSql {
  readonly dialect: Dialect;
  /** A table's name as a statement names it (PostgreSQL: in the store's schema). */
  table(name: string): string;
  /** A Date as a parameter of this dialect. */
  time(date: Date): unknown;
  readTime(value: unknown): Date;
  rows(action: string, sql: string, values: readonly unknown[]): Promise<Row[]>;
  /** One statement in autocommit; how many rows it changed. */
  exec(action: string, sql: string, values: readonly unknown[]): Promise<number>;
  /** true: every statement ran and the batch committed; false: a `one` statement changed nothing, all rolled back. */
  guarded(action: string, statements: readonly GuardedStatement[]): Promise<boolean>;
}

/** Thrown inside a guarded batch's transaction to roll it back; never leaves the adapter. */
export class GuardLost extends Error {}

/**
 * The SideSql of `store`, loading only its dialect's adapter. Not guarded
 * itself (its helpers are synchronous): the side stores built on it are
 * (guardSideStore: closed check, error mapping).
 */
export async function sideSqlOf(store: Store): Promise<SideSql> {
  switch (store.dialect) {
    case 'sqlite':
      return new (await import('./sqlite/side-sql.js')).SqliteSideSql(store as import('./sqlite/store.js').SqliteStore);
    case 'postgres':
      return new (await import('./postgres/side-sql.js')).PostgresSideSql(store as import('./postgres/store.js').PostgresStore);
    case 'mysql':
      return new (await import('./mysql/side-sql.js')).MysqlSideSql(store as import('./mysql/store.js').MysqlStore);
  }
}
