/** API tokens on SQLite (see ../tokens.ts); times are the store's UTC text. */
import { TOKEN_COLUMNS, tokenFromRow, type ApiTokenRecord, type NewApiToken, type TokenStore } from '../tokens.js';
import { statement } from './connection.js';
import type { SqliteStore } from './store.js';
import { fromSqliteTime, toSqliteTime } from './encode.js';

export class SqliteTokenStore implements TokenStore {
  constructor(private readonly store: SqliteStore) {}

  async insertToken({ token }: { token: NewApiToken }): Promise<ApiTokenRecord> {
    await this.store.writeOne(() =>
      statement(
        this.store.db,
        `INSERT INTO system_async_task_api_token (id, name, role, owner, token_hash, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        token.id,
        token.name,
        token.role,
        token.owner,
        token.tokenHash,
        this.store.nowText(),
        token.expiresAt === null ? null : toSqliteTime(token.expiresAt.getTime()),
      ),
    );
    return (await this.byId(token.id))!;
  }

  async findTokenByHash({ tokenHash }: { tokenHash: string }): Promise<ApiTokenRecord | null> {
    const row = await this.store.read(() =>
      statement(this.store.db, `SELECT ${TOKEN_COLUMNS} FROM system_async_task_api_token WHERE token_hash = ?`).get(tokenHash),
    );
    return row ? tokenFromRow(row as Record<string, unknown>, fromSqliteTime) : null;
  }

  async listTokens(): Promise<ApiTokenRecord[]> {
    const rows = await this.store.read(() =>
      statement(this.store.db, `SELECT ${TOKEN_COLUMNS} FROM system_async_task_api_token ORDER BY created_at DESC, id DESC`).all(),
    );
    return rows.map((row) => tokenFromRow(row as Record<string, unknown>, fromSqliteTime));
  }

  async revokeToken({ id }: { id: string }): Promise<boolean> {
    const result = await this.store.writeOne(() =>
      statement(this.store.db, 'UPDATE system_async_task_api_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(this.store.nowText(), id),
    );
    return result.changes === 1;
  }

  async markTokenUsed({ id }: { id: string }): Promise<void> {
    await this.store.writeOne(() =>
      statement(this.store.db, 'UPDATE system_async_task_api_token SET last_used_at = ? WHERE id = ?').run(this.store.nowText(), id),
    );
  }

  private async byId(id: string): Promise<ApiTokenRecord | null> {
    const row = await this.store.read(() => statement(this.store.db, `SELECT ${TOKEN_COLUMNS} FROM system_async_task_api_token WHERE id = ?`).get(id));
    return row ? tokenFromRow(row as Record<string, unknown>, fromSqliteTime) : null;
  }
}
