/** Raw rows in and out (../transfer.ts) on MySQL/MariaDB: DATETIME(3) in UTC, booleans as TINYINT(1). */
import * as shared from '../transfer.js';
import type { CountRowsParams, ExportRowsParams, TransferPage, TransferRow, TransferSql, TransferStore, TransferTableName } from '../transfer.js';
import { decode, sqlTime } from './encode.js';
import type { MysqlStore } from './store.js';

const MYSQL_TRANSFER: TransferSql = {
  table: (name) => name,
  param: () => '?',
  // ON DUPLICATE KEY fires on any unique key: a row meeting another row's idempotency or unique key (not its own
  // primary key) must fail, as ON CONFLICT (key) does elsewhere, not overwrite that other row. The key columns are
  // set to themselves when the primary key matched, else to NULL, which NOT NULL refuses (strict mode).
  upsert: (spec, columns) =>
    `ON DUPLICATE KEY UPDATE ${spec.key.map((column) => `${column} = IF(${column} = VALUES(${column}), ${column}, NULL)`).join(', ')}, ${shared.updateColumns(spec, columns, (column) => `VALUES(${column})`)}`,
  ...shared.transferValues(sqlTime, decode.time, true),
};

export class MysqlTransferStore implements TransferStore {
  constructor(private readonly store: MysqlStore) {}

  async exportRows(params: ExportRowsParams): Promise<TransferPage> {
    const { sql, values } = shared.pageQuery(MYSQL_TRANSFER, params);
    const db = this.store.db;
    const rows = await db.run((conn) => db.rows(conn, sql, values));
    return shared.pageOf(MYSQL_TRANSFER, params.table, rows, params.limit);
  }

  async importRows(params: { table: TransferTableName; rows: readonly TransferRow[] }): Promise<number> {
    if (params.rows.length === 0) return 0;
    const db = this.store.db;
    // One transaction: a page lands whole or not at all. AUTO_INCREMENT moves past imported ids by itself.
    await db.transaction(async (conn) => {
      for (const batch of shared.upsertBatches(params.table, params.rows)) {
        const { sql, values } = shared.upsertQuery(MYSQL_TRANSFER, params.table, batch);
        await db.exec(conn, sql, values);
      }
    });
    return params.rows.length;
  }

  async countRows(params: CountRowsParams): Promise<number> {
    const db = this.store.db;
    const rows = await db.run((conn) => db.rows(conn, shared.countQuery(MYSQL_TRANSFER, params)));
    return Number(rows[0]!.n);
  }
}
