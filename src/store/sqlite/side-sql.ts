/** SideSql on SQLite (see ../side-sql.ts): reads and guarded batches through the store's lock turns. */
import { GuardLost, type GuardedStatement, type SideSql } from '../side-sql.js';
import type { Row } from '../rows.js';
import { statement } from './connection.js';
import { fromSqliteTime, toSqliteTime } from './encode.js';
import type { SqliteStore } from './store.js';

export class SqliteSideSql implements SideSql {
  readonly dialect = 'sqlite';

  constructor(private readonly store: SqliteStore) {}

  table(name: string): string {
    return name;
  }

  time(date: Date): unknown {
    return toSqliteTime(date.getTime());
  }

  readTime(value: unknown): Date {
    return fromSqliteTime(value);
  }

  rows(_action: string, sql: string, values: readonly unknown[]): Promise<Row[]> {
    return this.store.read(() => statement(this.store.db, sql).all(...values) as Row[]);
  }

  exec(_action: string, sql: string, values: readonly unknown[]): Promise<number> {
    return this.store.writeOne(() => statement(this.store.db, sql).run(...values).changes);
  }

  async guarded(_action: string, statements: readonly GuardedStatement[]): Promise<boolean> {
    try {
      await this.store.write(() => {
        for (const s of statements) {
          const changed = statement(this.store.db, s.sql).run(...s.values).changes;
          if (s.expect === 'one' && changed !== 1) throw new GuardLost();
        }
      });
      return true;
    } catch (error) {
      if (error instanceof GuardLost) return false;
      throw error;
    }
  }
}
