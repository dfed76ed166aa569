/** The readable table and bench/RESULTS.md. */
import { writeFileSync } from 'node:fs';
import type { Environment } from './env.js';
import type { BenchOptions } from './workloads.js';
import type { ResultLine } from './types.js';
import { find, inRound, isResult, markdownTable, median, type Line, type SkipLine } from './report-lines.js';
import { medianWork, summarizeWork, workTable } from './report-work.js';
import type { WorkPerTask } from './db-work.js';

export type { Line, SkipLine } from './report-lines.js';

const ROUNDED = ['enqueue', 'drain', 'two-workers'] as const;

/**
 * One line per system and interleaved workload, over its rounds: the median
 * rate (and CPU per task), or for pickup latency the percentiles of every
 * round's samples pooled.
 */
export function summarize(lines: Line[], pickups: Map<string, number[]>, stats: (values: number[]) => Record<string, number>): ResultLine[] {
  const results = lines.filter(isResult).filter((l) => typeof l.round === 'number');
  const systems = [...new Set(results.map((l) => l.system))];
  const out: ResultLine[] = [];
  for (const system of systems) {
    for (const workload of ROUNDED) {
      const rounds = results.filter((l) => l.system === system && l.workload === workload);
      if (rounds.length === 0) continue;
      const cpu = rounds.map((l) => l.cpuUsPerTask).filter((v): v is number => typeof v === 'number');
      const producer = rounds.map((l) => l.producerCpuUsPerTask).filter((v): v is number => typeof v === 'number');
      const work = rounds.map((l) => l.work).filter((w): w is WorkPerTask => typeof w === 'object' && w !== null);
      out.push({
        system,
        workload,
        value: Math.round(median(rounds.map((l) => l.value))),
        unit: 'tasks/s',
        rounds: rounds.map((l) => l.value),
        ...(cpu.length > 0 ? { cpuUsPerTask: Math.round(median(cpu) * 10) / 10 } : {}),
        ...(producer.length > 0 ? { producerCpuUsPerTask: Math.round(median(producer) * 10) / 10 } : {}),
        ...(work.length > 0 && work.length === rounds.length ? { work: medianWork(work) } : {}),
        ...(rounds.some((l) => l.partial) ? { partial: true } : {}),
        remaining: rounds.reduce((sum, l) => sum + (typeof l.remaining === 'number' ? l.remaining : 0), 0),
      });
    }
    const samples = pickups.get(system);
    if (samples && samples.length > 0) {
      const pooled = stats(samples);
      const rounds = results.filter((l) => l.system === system && l.workload === 'latency');
      out.push({
        system,
        workload: 'latency',
        value: pooled.p50!,
        unit: 'ms',
        ...pooled,
        roundP50: rounds.map((l) => l.p50),
        ...(rounds.some((l) => l.partial) ? { partial: true } : {}),
      });
    }
  }
  return [...out, ...summarizeWork(lines)];
}

const number = (value: number | undefined): string => (value === undefined || Number.isNaN(value) ? '—' : Math.round(value).toLocaleString('en-US'));
const ms = (value: number | undefined): string => (value === undefined || Number.isNaN(value) ? '—' : value.toFixed(value < 10 ? 2 : 1));
const ratio = (value: unknown): string => (typeof value === 'number' ? ` (${value.toFixed(2)}×)` : '');
const mark = (line: ResultLine | undefined): string => (line?.partial ? '*' : line?.remaining ? '!' : '');

/** One row per system, one column per workload. */
export function table(lines: Line[], options: BenchOptions): string {
  const systems = [...new Set(lines.map((l) => l.system))];
  const header = [
    'system',
    'enqueue/s',
    'drain/s (CPU µs/task)',
    'pickup p50 / p95 / p99 ms',
    '2 workers/s',
    `limits ${options.limits.global}/${options.limits.perType} /s`,
    `scale ${short(options.smallBacklog)} /s (RSS MB)`,
    `scale ${short(options.backlog)} /s (RSS MB)`,
  ];
  const rows = systems.map((system) => {
    const skipped = lines.find((l): l is SkipLine => l.system === system && 'skipped' in l && l.workload === 'all');
    if (skipped) return [system, `skipped: ${skipped.skipped}`, '', '', '', '', '', ''];
    const enqueue = find(lines, system, 'enqueue');
    const drain = find(lines, system, 'drain');
    const latency = find(lines, system, 'latency');
    const two = find(lines, system, 'two-workers');
    const limits = find(lines, system, 'limits');
    const small = find(lines, system, 'scale', options.smallBacklog);
    const large = find(lines, system, 'scale', options.backlog);
    const scale = (line: ResultLine | undefined): string =>
      line
        ? `${number(line.value)}${mark(line)}${typeof line.firstRate === 'number' ? ` [first ${short(options.smallBacklog)}: ${number(line.firstRate)}]` : ''} (${(line.peakRssMB as number[] | undefined)?.join('+') ?? '?'})`
        : '—';
    return [
      system,
      number(enqueue?.value),
      drain ? `${number(drain.value)}${mark(drain)}${typeof drain.cpuUsPerTask === 'number' ? ` (${Math.round(drain.cpuUsPerTask)})` : ''}` : '—',
      latency ? `${ms(latency.p50)} / ${ms(latency.p95)} / ${ms(latency.p99)}${latency.partial ? ` (n=${String(latency.samples)})` : ''}` : '—',
      two ? `${number(two.value)}${mark(two)}${ratio(drain ? two.value / drain.value : undefined)}` : '—',
      limits ? `${number(limits.value)}${mark(limits)}${ratio(drain ? limits.value / drain.value : undefined)}` : '—',
      scale(small),
      scale(large),
    ];
  });
  return markdownTable(header, rows);
}

function short(count: number): string {
  if (count >= 1_000_000 && count % 1_000_000 === 0) return `${count / 1_000_000}M`;
  if (count >= 1000 && count % 1000 === 0) return `${count / 1000}k`;
  return String(count);
}

const PG = 'tasklease-postgres';
const GRAPHILE = 'graphile-worker';

/** tasklease-postgres / graphile-worker (or another pair) in each round, where both ran. */
function roundRatios(lines: Line[], options: BenchOptions, workload: string, a = PG, b = GRAPHILE): number[] {
  const out: number[] = [];
  for (let r = 1; r <= options.rounds; r += 1) {
    const x = inRound(lines, a, workload, r)?.value;
    const y = inRound(lines, b, workload, r)?.value;
    out.push(x !== undefined && y ? x / y : Number.NaN);
  }
  return out;
}

/** Each round's ratios and pickups, then their medians: the figures to compare on a shared machine. */
export function roundsReport(lines: Line[], options: BenchOptions): string[] {
  const rows: string[][] = [];
  const fmt = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '—' : `${v.toFixed(2)}×`);
  const pickup = (system: string, r: number): string => {
    const line = inRound(lines, system, 'latency', r);
    return line ? `${ms(line.p50)} / ${ms(line.p99)}` : '—';
  };
  const columns = {
    drain: roundRatios(lines, options, 'drain'),
    two: roundRatios(lines, options, 'two-workers'),
    enqueue: roundRatios(lines, options, 'enqueue'),
    mysql: roundRatios(lines, options, 'drain', 'tasklease-mysql', PG),
  };
  for (let r = 1; r <= options.rounds; r += 1) {
    const i = r - 1;
    rows.push([
      String(r),
      fmt(columns.drain[i]),
      fmt(inRound(lines, PG, 'work-ratio', r)?.value),
      fmt(columns.two[i]),
      fmt(columns.enqueue[i]),
      fmt(columns.mysql[i]),
      pickup(PG, r),
      pickup(GRAPHILE, r),
      pickup('bullmq', r),
      pickup('tasklease-mysql', r),
    ]);
  }
  const pooled = (system: string): string => {
    const line = find(lines, system, 'latency');
    return line ? `${ms(line.p50)} / ${ms(line.p99)}` : '—';
  };
  rows.push([
    'median',
    fmt(median(columns.drain)),
    fmt(find(lines, PG, 'work-ratio')?.value),
    fmt(median(columns.two)),
    fmt(median(columns.enqueue)),
    fmt(median(columns.mysql)),
    pooled(PG),
    pooled(GRAPHILE),
    pooled('bullmq'),
    pooled('tasklease-mysql'),
  ]);
  const header = [
    'round',
    'drain PG/graphile',
    'WAL/task PG/graphile',
    '2 procs PG/graphile',
    'enqueue PG/graphile',
    'drain MySQL/PG',
    'pickup p50/p99 PG',
    'graphile',
    'BullMQ',
    'MySQL',
  ];
  return [
    "Per round (WAL/task: each task's own WAL without full-page images, submit + claim + finish, server-wide where not measured; pickup: ms; median row: pickups pooled over the rounds)",
    '',
    markdownTable(header, rows),
  ];
}

/**
 * The targets (issue 25, and issue 16's that it did not replace), as medians
 * of the per-round ratios within this run, where both sides were measured.
 */
export function targets(lines: Line[], options: BenchOptions): string[] {
  const out: string[] = [];
  const check = (label: string, value: number | undefined, goal: number, higherIsBetter: boolean, unit = '×'): void => {
    if (value === undefined || Number.isNaN(value)) return;
    const met = higherIsBetter ? value >= goal : value <= goal;
    const shown = (x: number): string => (unit === '×' || unit === ' ms' ? x.toFixed(2) : String(Math.round(x)));
    out.push(`- ${met ? 'met' : 'NOT met'}: ${label} = ${shown(value)}${unit} (target ${higherIsBetter ? '≥' : '≤'} ${shown(goal)}${unit})`);
  };
  const value = (system: string, workload: string, backlog?: number): number | undefined => find(lines, system, workload, backlog)?.value;
  const over = (a: number | undefined, b: number | undefined): number | undefined => (a !== undefined && b ? a / b : undefined);
  const work = find(lines, PG, 'work')?.total as { ownWalNoFpiB?: number; ownWalB?: number; walB?: number } | undefined;
  check('PostgreSQL WAL per task, submit + drain (own, no full-page images)', work?.ownWalNoFpiB ?? work?.ownWalB ?? work?.walB, 900, false, ' B');
  check('PostgreSQL drain / graphile-worker batched (median of rounds)', median(roundRatios(lines, options, 'drain')), 1, true);
  check('PostgreSQL drain, two processes / graphile-worker, two processes', median(roundRatios(lines, options, 'two-workers')), 1, true);
  check(`PostgreSQL drain under limits ${options.limits.global}/${options.limits.perType}`, value(PG, 'limits'), 4000, true, ' tasks/s');
  const pickup = find(lines, PG, 'latency');
  const graphilePickup = find(lines, GRAPHILE, 'latency');
  if (graphilePickup) check("PostgreSQL pickup p50 (graphile-worker's in the same rounds)", pickup?.p50, graphilePickup.p50 as number, false, ' ms');
  if (pickup) check('PostgreSQL pickup p99 (2 × its p50)', pickup.p99 as number, 2 * (pickup.p50 as number), false, ' ms');
  // "No worse": the ratios to PostgreSQL of the run before issue 25 (SQLite 1.01×, MySQL 0.44×), less the rounds' spread.
  check('SQLite drain / PostgreSQL drain (median of rounds)', median(roundRatios(lines, options, 'drain', 'tasklease-sqlite', PG)), 0.9, true);
  check('MySQL drain / PostgreSQL drain (median of rounds)', median(roundRatios(lines, options, 'drain', 'tasklease-mysql', PG)), 0.4, true);
  check('PostgreSQL bulk enqueue / graphile-worker addJobs (issue 16)', median(roundRatios(lines, options, 'enqueue')), 1.5, true);
  check('MySQL pickup p50, worker in another process (issue 16)', find(lines, 'tasklease-mysql', 'latency')?.p50, 25, false, ' ms');
  check(
    `PostgreSQL drain with ${short(options.backlog)} backlog / with ${short(options.smallBacklog)} (issue 16)`,
    over(value(PG, 'scale', options.backlog), value(PG, 'scale', options.smallBacklog)),
    0.9,
    true,
  );
  const bull = find(lines, 'bullmq', 'latency')?.p50;
  const pg = find(lines, PG, 'latency')?.p50;
  if (bull !== undefined && pg !== undefined)
    out.push(`- moonshot: PostgreSQL pickup p50 ${ms(pg)} ms vs BullMQ ${ms(bull)} ms (${pg <= bull ? 'matched' : 'not matched'})`);
  return out;
}

export interface RunInfo {
  command: string;
  options: BenchOptions;
  environment: Environment;
  settings: Record<string, Record<string, string>>;
  elapsedSeconds: number;
}

export function writeResults(path: string, lines: Line[], info: RunInfo): void {
  const { environment: env, options } = info;
  const goals = targets(lines, options);
  const work = workTable(lines);
  const text = [
    '# tasklease benchmark results',
    '',
    `Run finished ${env.date}; command \`${info.command}\` (${Math.round(info.elapsedSeconds)} s).`,
    '',
    '## Machine',
    '',
    `- load average (1 min) at start ${env.loadAverage.start}, at end ${env.loadAverage.end}: the machine is shared, so compare systems within one run`,
    `- ${env.machine.nproc} CPUs (${env.machine.cpu}), ${env.machine.memoryGiB} GiB memory, ${env.machine.os}`,
    `- services on the same machine: ${Object.entries(env.services)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `- packages: ${Object.entries(env.packages)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    '',
    '## Results',
    '',
    table(lines, options),
    '',
    "`*` stopped at its time limit (rate over the tasks done); `!` tasks left unfinished in the store after a complete drain (a bug); `[first 10k: …]` the rate over the first tasks of the large backlog, to separate the backlog's size from the volume processed.",
    '',
    ...(work.length > 0 ? ['## Database work per task', '', ...work.slice(2), ''] : []),
    ...roundsReport(lines, options),
    '',
    ...(goals.length > 0 ? ['## Targets (issue 25)', '', ...goals, ''] : []),
    '## Workloads and method',
    '',
    `- **rounds**: enqueue, drain, pickup latency and two workers run in ${options.rounds} interleaved rounds (systems in order, then in reverse order, …); the table gives each system's median over the rounds (pickup: every round's samples pooled), the per-round table each round's ratio, and the targets the median of those ratios. Limits and scale run once, after the rounds. tasklease runs from the built dist/ (compiled JavaScript), as its users run it.`,
    `- **enqueue**: ${options.warmupTasks.toLocaleString('en-US')} untimed warm-up tasks, then ${options.n.toLocaleString('en-US')} empty tasks by the orchestrator process, in calls of ${options.batch} (each system's bulk API), one call after another; producerCpuUsPerTask is the orchestrator's CPU per task (the database's is not in it).`,
    `- **drain**: those ${(options.n + options.warmupTasks).toLocaleString('en-US')} tasks, queued first, drained by one worker process at concurrency ${options.concurrency}; the first ${options.warmupTasks.toLocaleString('en-US')} handler starts warm the worker up, and the rate runs from the next start to the last, both taken in the worker process. CPU µs/task: the worker process's user + system CPU after its warm-up, per task (it holds up on a loaded machine better than the rate).`,
    `- **pickup latency**: one idle worker process; one task at a time, the next enqueued once the last has started; handler start (worker's wall clock) − the producer's wall clock just before the enqueue call (performance.timeOrigin + performance.now()). ${options.warmup} warm-up probes discarded per round, then up to ${Math.ceil(options.samples / options.rounds)} samples within ${Math.round(options.latencyBudgetMs / options.rounds / 1000)} s per round; after each probe starts, a random pause of 0–${options.latencyGapMs} ms (0–poll period for a worker that can only poll, so that probes meet the poll at a random phase) before the next is enqueued.`,
    `- **two workers**: as drain, with two worker processes (each at concurrency ${options.concurrency}) started together; the × is against the one-process drain.`,
    `- **limits**: as drain (${options.limitsN.toLocaleString('en-US')} timed tasks), under binding limits (global ${options.limits.global}, per type ${options.limits.perType}; one task type); the × is against the unlimited drain.`,
    `- **scale**: a backlog of ${options.smallBacklog.toLocaleString('en-US')} and of ${options.backlog.toLocaleString('en-US')} tasks queued first, each drained by one worker process until empty or for at most ${options.scaleTimeoutMs / 1000} s (no warm-up); for the large backlog the rate over its first ${options.smallBacklog.toLocaleString('en-US')} tasks is given too; RSS is the worker process's peak (ru_maxrss).`,
    "- **database work** (PostgreSQL and MySQL systems): around the drain workload's bulk enqueue and its drain, and around every other drain (the `work` field of its line), the WAL, commits and rows written, per task; see the notes under its table. These figures do not depend on the machine's speed, only on what is written: every change to the write path reports them beside the drain ratio.",
    '- Every workload starts on a fresh schema / key prefix / database, created for it and dropped after. Workers are separate OS processes, prepared before the clock starts and released together.',
    '',
    '## Settings per system',
    '',
    ...Object.entries(info.settings).flatMap(([system, settings]) => [
      `**${system}**`,
      '',
      ...Object.entries(settings).map(([key, value]) => `- ${key}: ${value}`),
      '',
    ]),
    '## Raw lines',
    '',
    '```',
    ...lines.map((line) => JSON.stringify(line)),
    '```',
    '',
  ].join('\n');
  writeFileSync(path, text);
}
