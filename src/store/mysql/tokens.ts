/** API tokens on MySQL/MariaDB (see ../tokens.ts); DATETIME(3) in UTC like every table here. */
import { TOKEN_COLUMNS, tokenFromRow, type ApiTokenRecord, type NewApiToken, type TokenStore } from '../tokens.js';
import { decode, sqlTime } from './encode.js';
import type { MysqlStore } from './store.js';

export class MysqlTokenStore implements TokenStore {
  constructor(private readonly store: MysqlStore) {}

  async insertToken({ token }: { token: NewApiToken }): Promise<ApiTokenRecord> {
    const db = this.store.db;
    await db.run((conn) =>
      db.exec(
        conn,
        `INSERT INTO system_async_task_api_token (id, name, role, owner, token_hash, created_at, expires_at)
      VALUES (?, ?, ?, ?, ?, NOW(3), ?)`,
        [token.id, token.name, token.role, token.owner, token.tokenHash, token.expiresAt === null ? null : sqlTime(token.expiresAt)],
      ),
    );
    return (await this.select('WHERE id = ?', [token.id]))[0]!;
  }

  async findTokenByHash({ tokenHash }: { tokenHash: string }): Promise<ApiTokenRecord | null> {
    return (await this.select('WHERE token_hash = ?', [tokenHash]))[0] ?? null;
  }

  listTokens(): Promise<ApiTokenRecord[]> {
    return this.select('ORDER BY created_at DESC, id DESC', []);
  }

  async revokeToken({ id }: { id: string }): Promise<boolean> {
    const db = this.store.db;
    const result = await db.run((conn) =>
      db.exec(conn, 'UPDATE system_async_task_api_token SET revoked_at = NOW(3) WHERE id = ? AND revoked_at IS NULL', [id]),
    );
    return result.affectedRows === 1;
  }

  async markTokenUsed({ id }: { id: string }): Promise<void> {
    const db = this.store.db;
    await db.run((conn) => db.exec(conn, 'UPDATE system_async_task_api_token SET last_used_at = NOW(3) WHERE id = ?', [id]));
  }

  private async select(rest: string, values: unknown[]): Promise<ApiTokenRecord[]> {
    const db = this.store.db;
    const rows = await db.run((conn) => db.rows(conn, `SELECT ${TOKEN_COLUMNS} FROM system_async_task_api_token ${rest}`, values));
    return rows.map((row) => tokenFromRow(row, decode.time));
  }
}
