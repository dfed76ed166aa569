/**
 * Holds SQLite's write lock on the file given for the milliseconds given, as
 * another process (a backup, a long import) would: prints "locked" once it
 * has it and "released" after COMMIT.
 */
import Database from 'better-sqlite3';

const [path, holdMs] = [process.argv[2]!, Number(process.argv[3])];
const db = new Database(path);
db.pragma('busy_timeout = 10000');
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
setTimeout(() => {
  db.exec('COMMIT');
  db.close();
  process.stdout.write('released\n');
}, holdMs);
