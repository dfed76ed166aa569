/**
 * The database's work per task (issue 25): WAL (redo) bytes, commits and rows
 * written, read around a phase — a bulk enqueue, a drain. It does not depend
 * on how fast the machine is, so it holds up on a busy machine where rates do
 * not; but the servers are shared, and a server-wide counter takes in every
 * other session's work during the phase (the bench says so beside the figures
 * and takes medians over rounds). The meters: pg-work.ts (which also
 * attributes the WAL record by record to the system's own relations) and
 * mysql-work.ts (server-wide counters only).
 */
/** Where a system keeps its tables. */
export type WorkScope = { dialect: 'postgres'; schema: string } | { dialect: 'mysql'; database: string };

/** One phase's totals. */
export interface WorkTotals {
  /** Tasks the phase submitted or drained. */
  tasks: number;
  /** Server-wide WAL / redo written: PostgreSQL insert-LSN difference, MySQL Innodb_os_log_written. */
  walBytes: number;
  /** PostgreSQL with pg_walinspect: WAL of records on the system's relations and of the transactions that wrote them (commit records too). */
  ownWalBytes?: number;
  /** Full-page images within ownWalBytes (first change of a page after a checkpoint). */
  ownFpiBytes?: number;
  /** Transactions ended: PostgreSQL xact_commit + xact_rollback of the whole database; MySQL Com_commit + Com_rollback (explicit COMMITs only). */
  commits: number;
  /** PostgreSQL with pg_walinspect: commit / abort records of the transactions that wrote the system's relations (the commits that wait for a WAL flush). */
  writeCommits?: number;
  /** MySQL: Handler_commit (internal commits, autocommit statements included; server-wide). */
  handlerCommits?: number;
  /** Rows written: PostgreSQL n_tup_ins / n_tup_upd / n_tup_del of the system's schema; MySQL Handler_write / _update / _delete, server-wide. */
  inserted: number;
  updated: number;
  deleted: number;
  /** PostgreSQL: updates among `updated` that were HOT (no index entry written). */
  hotUpdated?: number;
  /** MySQL with log_bin: Binlog_bytes_written. */
  binlogBytes?: number;
  /** PostgreSQL: per table of the schema. */
  tables?: Record<string, { ins: number; upd: number; del: number; hot: number }>;
  /** PostgreSQL with pg_walinspect: own WAL bytes by resource manager / record type. */
  records?: Record<string, { count: number; bytes: number }>;
  /** What could not be read as intended (counters still moving, WAL already recycled, …). */
  notes?: string[];
}

/** Per task, rounded; the shape of the JSON lines. */
export interface WorkPerTask {
  tasks: number;
  walB: number;
  ownWalB?: number;
  ownFpiB?: number;
  commits: number;
  writeCommits?: number;
  handlerCommits?: number;
  rows: number;
  ins: number;
  upd: number;
  del: number;
  hot?: number;
  binlogB?: number;
  notes?: string[];
}

export interface Phase {
  /** Ends the phase: its totals over `tasks`. Call after every connection that did the phase's work has closed. */
  end(tasks: number): Promise<WorkTotals>;
}

export interface Meter {
  /** Marks a phase's start; call after the previous phase's connections have closed. */
  begin(): Promise<Phase>;
}

/** The per-task figures, and the decimals each keeps (bytes: 0; commits: 3; rows: 2). */
export const WORK_DIGITS = {
  walB: 0,
  ownWalB: 0,
  ownFpiB: 0,
  commits: 3,
  writeCommits: 3,
  handlerCommits: 3,
  rows: 2,
  ins: 2,
  upd: 2,
  del: 2,
  hot: 2,
  binlogB: 0,
} as const satisfies Partial<Record<keyof WorkPerTask, number>>;
export const WORK_FIGURES = Object.keys(WORK_DIGITS) as (keyof typeof WORK_DIGITS)[];

export const fixed = (value: number, digits: number): number => Math.round(value * 10 ** digits) / 10 ** digits;

export function perTask(totals: WorkTotals): WorkPerTask {
  const raw: Record<keyof typeof WORK_DIGITS, number | undefined> = {
    walB: totals.walBytes,
    ownWalB: totals.ownWalBytes,
    ownFpiB: totals.ownFpiBytes,
    commits: totals.commits,
    writeCommits: totals.writeCommits,
    handlerCommits: totals.handlerCommits,
    rows: totals.inserted + totals.updated + totals.deleted,
    ins: totals.inserted,
    upd: totals.updated,
    del: totals.deleted,
    hot: totals.hotUpdated,
    binlogB: totals.binlogBytes,
  };
  const out: Record<string, unknown> = { tasks: totals.tasks };
  for (const key of WORK_FIGURES) {
    const value = raw[key];
    if (value !== undefined) out[key] = fixed(value / Math.max(1, totals.tasks), WORK_DIGITS[key]);
  }
  if (totals.notes?.length) out.notes = totals.notes;
  return out as unknown as WorkPerTask;
}

/** Per-task figures of two phases over the same tasks (enqueue + drain): the task's whole life. */
export function sumPerTask(a: WorkPerTask, b: WorkPerTask): WorkPerTask {
  const out: Record<string, unknown> = { tasks: Math.min(a.tasks, b.tasks) };
  for (const key of WORK_FIGURES) {
    const [x, y] = [a[key], b[key]];
    if (x !== undefined && y !== undefined) out[key] = fixed(x + y, WORK_DIGITS[key]);
  }
  const notes = [...(a.notes ?? []), ...(b.notes ?? [])];
  if (notes.length > 0) out.notes = notes;
  return out as unknown as WorkPerTask;
}
