/**
 * The tables the fault handlers write (FAULTS.md): one `executions` row per
 * handler start (autocommit), one `effects` row per task (a second write of
 * the same task counts in `writes`). They live beside tasklease's tables on
 * each store, reached through the handler's own connection — not the
 * store's, so that cutting the worker's connections leaves them alone.
 * Test plumbing, like test/helpers' schema setup: the only SQL here is the
 * handlers' own tables.
 */
export type HandlerDb = { dialect: 'postgres'; url: string; schema: string } | { dialect: 'mysql'; uri: string } | { dialect: 'sqlite'; path: string };

export interface HandlerTables {
  create(): Promise<void>;
  logExecution(taskId: string, attempt: number, worker: string): Promise<void>;
  writeEffect(taskId: string, attempt: number, worker: string): Promise<void>;
  /** Executions logged (by one worker, or all). */
  executions(worker?: string): Promise<number>;
  effects(): Promise<{ taskId: string; attempt: number; writes: number }[]>;
  /** A durable step's fn began (ctx.step, the steps mode): one row per run of fn. */
  logStepRun(taskId: string, name: string, attempt: number, worker: string): Promise<void>;
  /** The runs of each step's fn, in the order logged: [name, attempt, worker]. */
  stepRuns(taskId: string): Promise<[string, number, string][]>;
  /** Makes a lease look expired to the database (the worker holding it is not told): a zombie its own clock cannot see. */
  expireLease(taskId: string): Promise<void>;
  /** (task, attempt) pairs whose handler started more than once: none may (the failover suite). */
  repeatedExecutions(): Promise<{ taskId: string; attempt: number; runs: number }[]>;
  /** The tables of the store's schema (or database, or file), sorted: the hostile-input cases check that it is intact. */
  tableNames(): Promise<string[]>;
  /**
   * Every row of tasklease's tables (but the worker registry, which heartbeats rewrite), each as JSON, sorted per table:
   * two equal snapshots mean no state changed in between (the refused admin calls).
   */
  snapshot(): Promise<Record<string, string[]>>;
  /** Empties the handlers' tables and tasklease's task tables (between cases; the schema and its version stay). */
  reset(): Promise<void>;
  close(): Promise<void>;
}

const TASK_TABLES = [
  'system_async_task',
  'system_async_task_step',
  'system_async_task_log',
  'system_async_task_attempt',
  'system_async_task_failure',
  'system_async_task_dead_letter',
  'system_async_task_worker',
];

type Run = (sql: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

/** The same statements on every dialect: `?` placeholders (PostgreSQL's are numbered by `run`), standard types. */
function tablesOver(run: Run, prefix: string, upsert: string, listTables: string, close: () => Promise<void>, past: string): HandlerTables {
  const executions = `${prefix}executions`;
  const effects = `${prefix}effects`;
  const stepRuns = `${prefix}step_runs`;
  const tableNames = async () => (await run(listTables)).map((row) => String(Object.values(row)[0])).sort();
  return {
    async create() {
      await run(`CREATE TABLE IF NOT EXISTS ${executions} (task_id VARCHAR(64) NOT NULL, attempt INTEGER NOT NULL, worker VARCHAR(64) NOT NULL)`);
      await run(
        `CREATE TABLE IF NOT EXISTS ${effects} (task_id VARCHAR(64) PRIMARY KEY, attempt INTEGER NOT NULL, worker VARCHAR(64) NOT NULL, writes INTEGER NOT NULL DEFAULT 1)`,
      );
      await run(
        `CREATE TABLE IF NOT EXISTS ${stepRuns} (n INTEGER NOT NULL, task_id VARCHAR(64) NOT NULL, name VARCHAR(200) NOT NULL, attempt INTEGER NOT NULL, worker VARCHAR(64) NOT NULL)`,
      );
    },
    async logStepRun(taskId, name, attempt, worker) {
      // n: the order of the runs (the processes' clocks and row order say nothing reliable).
      await run(`INSERT INTO ${stepRuns} (n, task_id, name, attempt, worker) SELECT COALESCE(MAX(n), 0) + 1, ?, ?, ?, ? FROM ${stepRuns}`, [
        taskId,
        name,
        attempt,
        worker,
      ]);
    },
    async stepRuns(taskId) {
      const rows = await run(`SELECT name, attempt, worker FROM ${stepRuns} WHERE task_id = ? ORDER BY n`, [taskId]);
      return rows.map((r) => [String(r.name), Number(r.attempt), String(r.worker)]);
    },
    async expireLease(taskId) {
      await run(`UPDATE ${prefix}system_async_task SET lease_until = ${past} WHERE id = ?`, [taskId]);
    },
    async logExecution(taskId, attempt, worker) {
      await run(`INSERT INTO ${executions} (task_id, attempt, worker) VALUES (?, ?, ?)`, [taskId, attempt, worker]);
    },
    async writeEffect(taskId, attempt, worker) {
      await run(`INSERT INTO ${effects} (task_id, attempt, worker) VALUES (?, ?, ?) ${upsert}`, [taskId, attempt, worker]);
    },
    async executions(worker) {
      const rows = await run(`SELECT count(*) AS n FROM ${executions}${worker === undefined ? '' : ' WHERE worker = ?'}`, worker === undefined ? [] : [worker]);
      return Number(rows[0]!.n);
    },
    async effects() {
      return (await run(`SELECT task_id, attempt, writes FROM ${effects}`)).map((r) => ({
        taskId: String(r.task_id),
        attempt: Number(r.attempt),
        writes: Number(r.writes),
      }));
    },
    async repeatedExecutions() {
      const rows = await run(`SELECT task_id, attempt, count(*) AS runs FROM ${executions} GROUP BY task_id, attempt HAVING count(*) > 1`);
      return rows.map((r) => ({ taskId: String(r.task_id), attempt: Number(r.attempt), runs: Number(r.runs) }));
    },
    tableNames,
    async snapshot() {
      const rows: Record<string, string[]> = {};
      for (const table of (await tableNames()).filter((name) => name.startsWith('system_async_task') && name !== 'system_async_task_worker')) {
        rows[table] = (await run(`SELECT * FROM ${prefix}${table}`))
          .map((row) => JSON.stringify(row, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
          .sort();
      }
      return rows;
    },
    async reset() {
      for (const table of [executions, effects, stepRuns, ...TASK_TABLES.map((name) => `${prefix}${name}`)]) await run(`DELETE FROM ${table}`);
    },
    close,
  };
}

const ON_CONFLICT = 'ON CONFLICT (task_id) DO UPDATE SET attempt = EXCLUDED.attempt, worker = EXCLUDED.worker, writes = effects.writes + 1';

export async function openHandlerTables(db: HandlerDb, label: string): Promise<HandlerTables> {
  switch (db.dialect) {
    case 'postgres': {
      const { default: pg } = await import('pg');
      // Bounded waits: a handler whose own table write hangs on a connection cut by a fault (a crash, a freeze) fails
      // and is retried, instead of holding its task, alive and renewed, for ever (seen once in a chaos run's drain).
      const pool = new pg.Pool({ connectionString: db.url, max: 4, application_name: `tlh-${label}`, connectionTimeoutMillis: 15_000, query_timeout: 15_000 });
      pool.on('error', () => undefined);
      const numbered = (sql: string, n = 0) => sql.replace(/\?/g, () => `$${++n}`);
      const run: Run = async (sql, values = []) => (await pool.query(numbered(sql), values)).rows;
      const list = `SELECT table_name FROM information_schema.tables WHERE table_schema = '${db.schema}'`;
      return tablesOver(run, `"${db.schema}".`, ON_CONFLICT, list, () => pool.end(), "now() - interval '1 second'");
    }
    case 'mysql': {
      const { default: mysql } = await import('mysql2/promise');
      const pool = mysql.createPool({ uri: db.uri, connectionLimit: 4 });
      const run: Run = async (sql, values = []) => (await pool.query(sql, values))[0] as Record<string, unknown>[];
      const upsert = 'ON DUPLICATE KEY UPDATE writes = writes + 1, attempt = VALUES(attempt), worker = VALUES(worker)';
      const list = 'SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()';
      return tablesOver(run, '', upsert, list, () => pool.end(), 'NOW(3) - INTERVAL 1 SECOND');
    }
    case 'sqlite': {
      const { default: Database } = await import('better-sqlite3');
      const file = new Database(db.path, { timeout: 10_000 });
      file.pragma('journal_mode = WAL');
      const run: Run = async (sql, values = []) => {
        const statement = file.prepare(sql);
        return statement.reader ? (statement.all(...values) as Record<string, unknown>[]) : (statement.run(...values), []);
      };
      const list = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'";
      // The store's time format (sqlite/encode.ts toSqliteTime): UTC, 'YYYY-MM-DD HH:MM:SS.sss'.
      return tablesOver(run, '', ON_CONFLICT, list, async () => void file.close(), "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 second')");
    }
  }
}
