/**
 * Applies pending migrations. Several processes may start at once: a
 * GET_LOCK per database makes them take turns, and each reads the applied
 * versions only once it holds the lock, so every migration runs exactly once.
 */
import { ErrorCode, TaskLeaseError } from '../../core/errors.js';
import type { Conn, MysqlDatabase } from './connection.js';
import { MIGRATION_TABLE, MYSQL_MIGRATIONS, migrationTableSql, renderStatement } from './migrations.js';
import { lockName } from './options.js';

const MIGRATE_LOCK_SECONDS = 60;

export async function migrate(db: MysqlDatabase): Promise<void> {
  const database = await db.databaseName();
  const name = lockName('migrate', database);
  await db.run(async (conn) => {
    await db.getLock(conn, name, MIGRATE_LOCK_SECONDS);
    try {
      await applyPending(db, conn);
    } finally {
      await db.query(conn, 'DO RELEASE_LOCK(?)', [name]);
    }
  });
}

async function applyPending(db: MysqlDatabase, conn: Conn): Promise<void> {
  const collation = await db.identifierCollation(conn);
  await db.exec(conn, migrationTableSql(collation));
  const rows = await db.rows(conn, `SELECT MAX(version) AS v FROM ${MIGRATION_TABLE}`);
  const current = Number(rows[0]?.v ?? 0);
  const newest = MYSQL_MIGRATIONS[MYSQL_MIGRATIONS.length - 1]?.version ?? 0;
  if (current > newest) {
    throw new TaskLeaseError(
      ErrorCode.SCHEMA_MISMATCH,
      `the database schema is at version ${current}, newer than this tasklease (${newest}): upgrade tasklease`,
    );
  }
  for (const migration of MYSQL_MIGRATIONS) {
    if (migration.version <= current) continue;
    // DDL commits implicitly; each statement is idempotent (IF NOT EXISTS), so a crash here re-runs cleanly.
    for (const statement of migration.statements) await db.exec(conn, renderStatement(statement, collation));
    await db.exec(conn, `INSERT INTO ${MIGRATION_TABLE} (version, name, applied_at) VALUES (?, ?, NOW(3))`, [migration.version, migration.name]);
  }
}

/** The highest migration applied; 0 when the database was never migrated. */
export async function schemaVersion(db: MysqlDatabase): Promise<number> {
  return db.run(async (conn) => {
    const tables = await db.rows(conn, 'SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?', [MIGRATION_TABLE]);
    if (tables.length === 0) return 0;
    const rows = await db.rows(conn, `SELECT MAX(version) AS v FROM ${MIGRATION_TABLE}`);
    return Number(rows[0]?.v ?? 0);
  });
}
