/** API tokens on PostgreSQL (see ../tokens.ts), in the store's schema, on its pool. */
import { TOKEN_COLUMNS, tokenFromRow, type ApiTokenRecord, type NewApiToken, type TokenStore } from '../tokens.js';
import { run } from './connection.js';
import { quoteIdent } from './options.js';
import type { PostgresStore } from './store.js';

const asDate = (value: unknown): Date => (value instanceof Date ? value : new Date(String(value)));

export class PostgresTokenStore implements TokenStore {
  private readonly table: string;

  constructor(private readonly store: PostgresStore) {
    this.table = `${quoteIdent(store.schema)}.system_async_task_api_token`;
  }

  async insertToken({ token }: { token: NewApiToken }): Promise<ApiTokenRecord> {
    const result = await run(
      this.store.pool,
      'creating an API token',
      `INSERT INTO ${this.table} (id, name, role, owner, token_hash, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, clock_timestamp(), $6) RETURNING ${TOKEN_COLUMNS}`,
      [token.id, token.name, token.role, token.owner, token.tokenHash, token.expiresAt],
    );
    return tokenFromRow(result.rows[0]!, asDate);
  }

  async findTokenByHash({ tokenHash }: { tokenHash: string }): Promise<ApiTokenRecord | null> {
    const result = await run(this.store.pool, 'reading an API token', `SELECT ${TOKEN_COLUMNS} FROM ${this.table} WHERE token_hash = $1`, [tokenHash]);
    return result.rows[0] ? tokenFromRow(result.rows[0], asDate) : null;
  }

  async listTokens(): Promise<ApiTokenRecord[]> {
    const result = await run(this.store.pool, 'listing API tokens', `SELECT ${TOKEN_COLUMNS} FROM ${this.table} ORDER BY created_at DESC, id DESC`);
    return result.rows.map((row) => tokenFromRow(row, asDate));
  }

  async revokeToken({ id }: { id: string }): Promise<boolean> {
    const result = await run(
      this.store.pool,
      'revoking an API token',
      `UPDATE ${this.table} SET revoked_at = clock_timestamp() WHERE id = $1 AND revoked_at IS NULL`,
      [id],
    );
    return result.rowCount === 1;
  }

  async markTokenUsed({ id }: { id: string }): Promise<void> {
    await run(this.store.pool, 'marking an API token used', `UPDATE ${this.table} SET last_used_at = clock_timestamp() WHERE id = $1`, [id]);
  }
}
