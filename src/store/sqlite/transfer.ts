/** Raw rows in and out (../transfer.ts) on SQLite: times as the store's UTC text, booleans as 0/1. */
import * as shared from '../transfer.js';
import type { CountRowsParams, ExportRowsParams, TransferPage, TransferRow, TransferSql, TransferStore, TransferTableName } from '../transfer.js';
import { statement } from './connection.js';
import { fromSqliteTime, toSqliteTime } from './encode.js';
import type { SqliteStore } from './store.js';

const SQLITE_TRANSFER: TransferSql = {
  table: (name) => name,
  param: () => '?',
  upsert: shared.onConflictUpdate,
  ...shared.transferValues((date) => toSqliteTime(date.getTime()), fromSqliteTime, true),
};

export class SqliteTransferStore implements TransferStore {
  constructor(private readonly store: SqliteStore) {}

  async exportRows(params: ExportRowsParams): Promise<TransferPage> {
    const { sql, values } = shared.pageQuery(SQLITE_TRANSFER, params);
    const rows = await this.store.read(() => statement(this.store.db, sql).all(...values));
    return shared.pageOf(SQLITE_TRANSFER, params.table, rows as Record<string, unknown>[], params.limit);
  }

  async importRows(params: { table: TransferTableName; rows: readonly TransferRow[] }): Promise<number> {
    if (params.rows.length === 0) return 0;
    // One transaction: a page lands whole or not at all.
    return this.store.write(() => {
      for (const batch of shared.upsertBatches(params.table, params.rows)) {
        const { sql, values } = shared.upsertQuery(SQLITE_TRANSFER, params.table, batch);
        this.store.db.prepare(sql).run(...values);
      }
      return params.rows.length;
    });
  }

  async countRows(params: CountRowsParams): Promise<number> {
    const row = await this.store.read(() => statement(this.store.db, shared.countQuery(SQLITE_TRANSFER, params)).get());
    return Number((row as { n: number }).n);
  }
}
