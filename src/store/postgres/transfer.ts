/** Raw rows in and out (../transfer.ts) on PostgreSQL, in the store's schema, on its pool. */
import * as shared from '../transfer.js';
import type { CountRowsParams, ExportRowsParams, TransferPage, TransferRow, TransferSql, TransferStore, TransferTableName } from '../transfer.js';
import { run, withClient } from './connection.js';
import { quoteIdent } from './options.js';
import type { PostgresStore } from './store.js';

function postgresTransfer(schema: string): TransferSql {
  return {
    table: (name) => `${quoteIdent(schema)}.${name}`,
    param: (index) => `$${index + 1}`,
    upsert: shared.onConflictUpdate,
    // node-postgres binds Dates and booleans as they are.
    ...shared.transferValues(
      (date) => date,
      (value) => (value instanceof Date ? value : new Date(String(value))),
      false,
    ),
  };
}

export class PostgresTransferStore implements TransferStore {
  private readonly sql: TransferSql;

  constructor(private readonly store: PostgresStore) {
    this.sql = postgresTransfer(store.schema);
  }

  async exportRows(params: ExportRowsParams): Promise<TransferPage> {
    const { sql, values } = shared.pageQuery(this.sql, params);
    const result = await run(this.store.pool, `reading ${params.table} to move`, sql, values);
    return shared.pageOf(this.sql, params.table, result.rows, params.limit);
  }

  async importRows(params: { table: TransferTableName; rows: readonly TransferRow[] }): Promise<number> {
    if (params.rows.length === 0) return 0;
    const spec = shared.TRANSFER_TABLES[params.table];
    const action = `writing moved ${params.table}`;
    // One transaction: a page lands whole or not at all.
    await withClient(this.store.pool, action, async (client, markBroken) => {
      await run(client, action, 'BEGIN');
      try {
        for (const batch of shared.upsertBatches(params.table, params.rows)) {
          const { sql, values } = shared.upsertQuery(this.sql, params.table, batch);
          await run(client, action, sql, values);
        }
        if ('identity' in spec) {
          // Rows came with their ids: the identity must hand out ids after them, or the next action row collides.
          const table = this.sql.table(spec.table);
          await run(client, action, `SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
        }
        await run(client, action, 'COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(markBroken);
        throw error;
      }
    });
    return params.rows.length;
  }

  async countRows(params: CountRowsParams): Promise<number> {
    const result = await run(this.store.pool, `counting ${params.table}`, shared.countQuery(this.sql, params));
    return Number(result.rows[0]!.n);
  }
}
