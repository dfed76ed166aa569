/**
 * The database's work per task in the report (issue 25): each round's `work`
 * lines (per system: enqueue phase, drain phase, total), their medians over
 * the rounds, tasklease-postgres / graphile-worker in each round and over the
 * rounds, and the table printed beside the rates.
 */
import { WORK_DIGITS, WORK_FIGURES, fixed, type WorkPerTask } from './db-work.js';
import { find, inRound, isResult, markdownTable, median, type Line } from './report-lines.js';
import type { ResultLine } from './types.js';

/** The pair whose ratio every later change to the write path reports. */
export const WORK_PAIR = ['tasklease-postgres', 'graphile-worker'] as const;

/**
 * The figures a ratio is taken of. The headline is own WAL without its
 * full-page images: how many of those a phase writes depends on when a
 * checkpoint began, not on the system (they are shown, not compared).
 */
const RATIOS = ['ownWalNoFpiB', 'ownWalB', 'walB', 'commits', 'writeCommits', 'rows'] as const;

const round2 = (value: number): number => Math.round(value * 100) / 100;
const isNumber = (value: unknown): value is number => typeof value === 'number' && !Number.isNaN(value);

/** Each figure's median over the rounds, on its own; a figure missing from a round is left out. */
export function medianWork(works: WorkPerTask[]): WorkPerTask {
  const out: Record<string, unknown> = { tasks: median(works.map((w) => w.tasks)) };
  for (const key of WORK_FIGURES) {
    const values = works.map((w) => w[key]).filter(isNumber);
    if (values.length > 0 && values.length === works.length) out[key] = fixed(median(values), WORK_DIGITS[key]);
  }
  const notes = [...new Set(works.flatMap((w) => w.notes ?? []))];
  if (notes.length > 0) out.notes = notes;
  return out as unknown as WorkPerTask;
}

/** The headline figure: own WAL where it was measured, else the server-wide WAL. */
function headline(work: WorkPerTask): { value: number; unit: string } {
  return work.ownWalB !== undefined ? { value: work.ownWalB, unit: 'own WAL B/task' } : { value: work.walB, unit: 'WAL B/task' };
}

function ratios(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  const withoutFpi = (w: Record<string, unknown>): number | undefined => (isNumber(w.ownWalB) && isNumber(w.ownFpiB) ? w.ownWalB - w.ownFpiB : undefined);
  for (const key of RATIOS) {
    const x = key === 'ownWalNoFpiB' ? withoutFpi(a) : a[key];
    const y = key === 'ownWalNoFpiB' ? withoutFpi(b) : b[key];
    if (isNumber(x) && isNumber(y) && y > 0) out[key] = round2(x / y);
  }
  return out;
}

/** The work line of a system in one round. */
export function workLine(system: string, round: number, enqueue: WorkPerTask, drain: WorkPerTask, total: WorkPerTask): ResultLine {
  return { system, workload: 'work', round, ...headline(total), enqueue, drain, total };
}

/** tasklease-postgres / graphile-worker over each task's whole life in round `round`, where both were measured. */
export function workRatios(lines: Line[], round: number): ResultLine[] {
  const [a, b] = WORK_PAIR.map((system) => inRound(lines, system, 'work', round)?.total as WorkPerTask | undefined);
  if (!a || !b) return [];
  const r = ratios({ ...a }, { ...b });
  const value = r.ownWalNoFpiB ?? r.walB;
  return value === undefined ? [] : [{ system: WORK_PAIR[0], workload: 'work-ratio', round, vs: WORK_PAIR[1], value, unit: '×', ...r }];
}

/** Summary lines: each system's medians over the rounds, and the medians of the per-round ratios. */
export function summarizeWork(lines: Line[]): ResultLine[] {
  const rounds = lines.filter(isResult).filter((l) => typeof l.round === 'number');
  const out: ResultLine[] = [];
  for (const system of new Set(rounds.filter((l) => l.workload === 'work').map((l) => l.system))) {
    const mine = rounds.filter((l) => l.system === system && l.workload === 'work');
    const phase = (key: 'enqueue' | 'drain' | 'total'): WorkPerTask => medianWork(mine.map((l) => l[key] as WorkPerTask));
    const total = phase('total');
    out.push({ system, workload: 'work', ...headline(total), rounds: mine.map((l) => l.value), enqueue: phase('enqueue'), drain: phase('drain'), total });
  }
  const perRound = rounds.filter((l) => l.workload === 'work-ratio');
  if (perRound.length > 0) {
    const medians: Record<string, number> = {};
    for (const key of RATIOS) {
      const values = perRound.map((l) => l[key]).filter(isNumber);
      if (values.length === perRound.length) medians[key] = round2(median(values));
    }
    const values = perRound.map((l) => l.value);
    out.push({
      system: WORK_PAIR[0],
      workload: 'work-ratio',
      vs: WORK_PAIR[1],
      value: round2(median(values)),
      unit: '× (median of rounds)',
      rounds: values,
      ...medians,
    });
  }
  return out;
}

const bytes = (value: number | undefined): string => (value === undefined ? '—' : Math.round(value).toLocaleString('en-US'));
const fix = (value: number | undefined, digits: number): string => (value === undefined ? '—' : value.toFixed(digits));
const times = (value: unknown): string => (isNumber(value) ? `${value.toFixed(2)}×` : '—');

export const WORK_NOTE = [
  "**own WAL**: from pg_walinspect, the WAL records between the phase's start and end that touch the system's own relations (its schema's tables, indexes, sequences, TOAST), and every record of the transactions that wrote them, commit records included — other sessions' WAL is not in it; FPI: full-page images within it (first change of a page after a checkpoint began).",
  "**server WAL**: the pg_current_wal_insert_lsn() difference (MySQL: Innodb_os_log_written) — server-wide: the servers are shared, and every other session's WAL during the phase is in it.",
  "**commits**: xact_commit + xact_rollback of the whole database (pg_stat_database), read-only transactions and other sessions' in the same database included; in parentheses the commit records of the system's own writing transactions (own WAL), the commits that wait for a WAL flush. MySQL: Com_commit (explicit COMMITs) [Handler_commit], server-wide.",
  "**rows**: n_tup_ins + n_tup_upd + n_tup_del over the system's schema (pg_stat_user_tables; HOT updates are among the updates). MySQL: Handler_write + Handler_update + Handler_delete, server-wide.",
  `**÷ ${WORK_PAIR[1]}**: the median of the per-round ratios of the totals: own WAL without its full-page images (how many a phase writes depends on when a checkpoint began), writing commits, rows; server-wide WAL and database-wide commits where own ones were not measured.`,
];

/** How the bench's phases run (the probe says how its own do). */
export const BENCH_PHASES =
  "**phases**: enqueue = the warm-up and timed bulk submit, producer connections closed before and after (PostgreSQL 15 backends flush their statistics at exit; the counters are read once they stop moving); drain = from before the worker process started to after it exited, warm-up included; both over the same tasks, so total = one task's submit, claim and finish. Medians over the rounds, each figure on its own.";

/** The table of the database's work per task, or nothing when no system was measured. */
export function workTable(lines: Line[], phasesNote = BENCH_PHASES): string[] {
  const summaries = lines.filter(isResult).filter((l) => l.round === undefined && l.workload === 'work');
  if (summaries.length === 0) return [];
  const ratio = find(lines, WORK_PAIR[0], 'work-ratio');
  const rows = summaries.map((line) => {
    const [e, d, t] = (['enqueue', 'drain', 'total'] as const).map((key) => line[key] as WorkPerTask);
    const phases = (key: 'walB' | 'ownWalB'): string => (t![key] === undefined ? '—' : `${bytes(e![key])} + ${bytes(d![key])} = ${bytes(t![key])}`);
    const commits = t!.writeCommits !== undefined ? ` (${fix(t!.writeCommits, 3)})` : t!.handlerCommits !== undefined ? ` [${fix(t!.handlerCommits, 3)}]` : '';
    return [
      line.system,
      `${phases('ownWalB')}${t!.ownFpiB ? ` (FPI ${bytes(t!.ownFpiB)})` : ''}`,
      phases('walB'),
      `${fix(t!.commits, 3)}${commits}`,
      `${fix(t!.ins, 2)} + ${fix(t!.upd, 2)} + ${fix(t!.del, 2)} = ${fix(t!.rows, 2)}${t!.hot !== undefined ? ` (HOT ${fix(t!.hot, 2)})` : ''}`,
      line.system === WORK_PAIR[0] && ratio
        ? `${times(ratio.ownWalNoFpiB ?? ratio.walB)} / ${times(ratio.writeCommits ?? ratio.commits)} / ${times(ratio.rows)}`
        : '',
    ];
  });
  const header = [
    'system',
    'own WAL B/task: enqueue + drain = total',
    'server WAL B/task: enqueue + drain = total',
    'commits/task (writing)',
    'rows/task: ins + upd + del = total (HOT)',
    `÷ ${WORK_PAIR[1]}: WAL / commits / rows`,
  ];
  const notes = [...new Set(summaries.flatMap((l) => (l.total as WorkPerTask).notes ?? []))];
  return [
    "Database work per task (each task's submit, claim and finish; medians over the rounds)",
    '',
    markdownTable(header, rows),
    '',
    ...[...WORK_NOTE, phasesNote].map((note) => `- ${note}`),
    ...(notes.length > 0 ? ['', `Caveats in this run: ${notes.join('; ')}`] : []),
  ];
}
