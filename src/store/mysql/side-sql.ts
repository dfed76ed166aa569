/** SideSql on MySQL/MariaDB (see ../side-sql.ts): the store's pool; DATETIME(3) in UTC. */
import { GuardLost, type GuardedStatement, type SideSql } from '../side-sql.js';
import type { Row } from '../rows.js';
import { decode, sqlTime } from './encode.js';
import type { MysqlStore } from './store.js';

export class MysqlSideSql implements SideSql {
  readonly dialect = 'mysql';

  constructor(private readonly store: MysqlStore) {}

  table(name: string): string {
    return name;
  }

  time(date: Date): unknown {
    return sqlTime(date);
  }

  readTime(value: unknown): Date {
    return decode.time(value);
  }

  rows(_action: string, sql: string, values: readonly unknown[]): Promise<Row[]> {
    const db = this.store.db;
    return db.run((conn) => db.rows(conn, sql, [...values]));
  }

  async exec(_action: string, sql: string, values: readonly unknown[]): Promise<number> {
    const db = this.store.db;
    return (await db.run((conn) => db.exec(conn, sql, [...values]))).affectedRows;
  }

  async guarded(_action: string, statements: readonly GuardedStatement[]): Promise<boolean> {
    const db = this.store.db;
    try {
      await db.transaction(async (conn) => {
        for (const s of statements) {
          const result = await db.exec(conn, s.sql, [...s.values]);
          if (s.expect === 'one' && result.affectedRows !== 1) throw new GuardLost();
        }
      });
      return true;
    } catch (error) {
      // The transaction's runner maps what it catches: the guard travels as the mapped error's cause.
      if (error instanceof GuardLost || (error as { cause?: unknown }).cause instanceof GuardLost) return false;
      throw error;
    }
  }
}
