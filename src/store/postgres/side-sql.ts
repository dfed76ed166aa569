/** SideSql on PostgreSQL (see ../side-sql.ts): the store's pool and schema; `?` numbered as $n. */
import { GuardLost, type GuardedStatement, type SideSql } from '../side-sql.js';
import type { Row } from '../rows.js';
import { beginOn, run, withClient } from './connection.js';
import { decodePostgres } from './encode.js';
import { quoteIdent } from './options.js';
import type { PostgresStore } from './store.js';

/** The statements are ours (no `?` in their literals): each `?` becomes the next $n. */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

export class PostgresSideSql implements SideSql {
  readonly dialect = 'postgres';

  constructor(private readonly store: PostgresStore) {}

  table(name: string): string {
    return `${quoteIdent(this.store.schema)}.${name}`;
  }

  time(date: Date): unknown {
    return date;
  }

  readTime(value: unknown): Date {
    return decodePostgres.time(value);
  }

  async rows(action: string, sql: string, values: readonly unknown[]): Promise<Row[]> {
    return (await run(this.store.pool, action, numbered(sql), [...values])).rows as Row[];
  }

  async exec(action: string, sql: string, values: readonly unknown[]): Promise<number> {
    return (await run(this.store.pool, action, numbered(sql), [...values])).rowCount ?? 0;
  }

  guarded(action: string, statements: readonly GuardedStatement[]): Promise<boolean> {
    return withClient(this.store.pool, action, async (client) => {
      await client.query(beginOn(this.store.pool));
      try {
        for (const s of statements) {
          const result = await run(client, action, numbered(s.sql), [...s.values]);
          if (s.expect === 'one' && result.rowCount !== 1) throw new GuardLost();
        }
        await client.query('COMMIT');
        return true;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        if (error instanceof GuardLost) return false;
        throw error;
      }
    });
  }
}
