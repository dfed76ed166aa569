/**
 * Applies pending migrations (migrations.ts). Several processes may start at
 * once: BEGIN IMMEDIATE makes the second wait for the first, then find the
 * versions applied.
 */
import { ErrorCode, TaskLeaseError } from '../../core/errors.js';
import { statement, type Db } from './connection.js';
import { SQLITE_MIGRATIONS } from './migrations.js';

export const EXPECTED_SCHEMA_VERSION = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1]!.version;

export function migrate(db: Db, now: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS tasklease_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  db.transaction(() => {
    const current = appliedVersion(db);
    if (current > EXPECTED_SCHEMA_VERSION) {
      throw new TaskLeaseError(
        ErrorCode.SCHEMA_MISMATCH,
        `the database schema is at version ${current}, newer than this tasklease knows (${EXPECTED_SCHEMA_VERSION}): upgrade tasklease`,
      );
    }
    for (const migration of SQLITE_MIGRATIONS) {
      if (migration.version <= current) continue;
      db.exec(migration.sql);
      statement(db, 'INSERT INTO tasklease_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, now);
    }
  }).immediate();
}

/** The highest migration applied; 0 when the database was never migrated. */
export function schemaVersion(db: Db): number {
  const exists = statement(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tasklease_migrations'").get();
  return exists ? appliedVersion(db) : 0;
}

function appliedVersion(db: Db): number {
  const row = statement(db, 'SELECT MAX(version) AS v FROM tasklease_migrations').get() as { v: number | null };
  return row.v ?? 0;
}
