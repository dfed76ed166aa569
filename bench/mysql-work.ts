/**
 * MySQL / MariaDB work per phase from SHOW GLOBAL STATUS: redo bytes
 * (Innodb_os_log_written), COMMITs, internal commits, handler row writes and,
 * with log_bin, binlog bytes. The server updates these as statements run (no
 * flush to wait for), but they are server-wide: every other session's work
 * during the phase is in them.
 */
import mysql from 'mysql2/promise';
import { MYSQL_URL } from './config.js';
import type { Meter } from './db-work.js';

const MYSQL_COUNTERS = [
  'Innodb_os_log_written',
  'Com_commit',
  'Com_rollback',
  'Handler_commit',
  'Handler_write',
  'Handler_update',
  'Handler_delete',
  'Binlog_bytes_written',
] as const;

async function mysqlStatus(): Promise<{ counters: Record<string, number>; logBin: boolean }> {
  const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 3000 });
  try {
    const [rows] = await connection.query<mysql.RowDataPacket[]>(`SHOW GLOBAL STATUS WHERE Variable_name IN (${MYSQL_COUNTERS.map(() => '?').join(', ')})`, [
      ...MYSQL_COUNTERS,
    ]);
    const [bin] = await connection.query<mysql.RowDataPacket[]>('SELECT @@log_bin AS logBin');
    const counters = Object.fromEntries(rows.map((row) => [String(row.Variable_name), Number(row.Value)]));
    return { counters, logBin: Number(bin[0]?.logBin) === 1 };
  } finally {
    await connection.end();
  }
}

/** MySQL / MariaDB: global status counters, which the server updates as statements run (no flush to wait for). */
export function mysqlMeter(): Meter {
  return {
    async begin() {
      const start = await mysqlStatus();
      return {
        async end(tasks) {
          const { counters, logBin } = await mysqlStatus();
          const diff = (name: (typeof MYSQL_COUNTERS)[number]): number => (counters[name] ?? 0) - (start.counters[name] ?? 0);
          return {
            tasks,
            walBytes: diff('Innodb_os_log_written'),
            commits: diff('Com_commit') + diff('Com_rollback'),
            handlerCommits: diff('Handler_commit'),
            inserted: diff('Handler_write'),
            updated: diff('Handler_update'),
            deleted: diff('Handler_delete'),
            ...(logBin ? { binlogBytes: diff('Binlog_bytes_written') } : {}),
          };
        },
      };
    },
  };
}
