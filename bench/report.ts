/** The readable table and bench/RESULTS.md. */
import { writeFileSync } from 'node:fs';
import type { Environment } from './env.js';
import type { BenchOptions } from './workloads.js';
import type { ResultLine } from './types.js';

export interface SkipLine {
  system: string;
  workload: string;
  skipped: string;
}

export type Line = ResultLine | SkipLine;

const isResult = (line: Line): line is ResultLine => 'value' in line;

function find(lines: Line[], system: string, workload: string, backlog?: number): ResultLine | undefined {
  return lines.filter(isResult).find((l) => l.system === system && l.workload === workload && (backlog === undefined || l.backlog === backlog));
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
    'drain/s',
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
      drain ? `${number(drain.value)}${mark(drain)}` : '—',
      latency ? `${ms(latency.p50)} / ${ms(latency.p95)} / ${ms(latency.p99)}${latency.partial ? ` (n=${String(latency.samples)})` : ''}` : '—',
      two ? `${number(two.value)}${mark(two)}${ratio(two.vsOne)}` : '—',
      limits ? `${number(limits.value)}${mark(limits)}${ratio(limits.vsUnlimited)}` : '—',
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

function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** The issue's targets, as ratios within this run, where both sides were measured. */
export function targets(lines: Line[], options: BenchOptions): string[] {
  const out: string[] = [];
  const check = (label: string, value: number | undefined, goal: number, higherIsBetter: boolean, unit = '×'): void => {
    if (value === undefined || Number.isNaN(value)) return;
    const met = higherIsBetter ? value >= goal : value <= goal;
    out.push(
      `- ${met ? 'met' : 'NOT met'}: ${label} = ${unit === '×' || unit === ' ms' ? value.toFixed(2) : Math.round(value)}${unit} (target ${higherIsBetter ? '≥' : '≤'} ${goal}${unit})`,
    );
  };
  const value = (system: string, workload: string, backlog?: number): number | undefined => find(lines, system, workload, backlog)?.value;
  const over = (a: number | undefined, b: number | undefined): number | undefined => (a !== undefined && b ? a / b : undefined);
  const pg = 'tasklease-postgres';
  check('PostgreSQL drain / graphile-worker drain', over(value(pg, 'drain'), value('graphile-worker', 'drain')), 1.25, true);
  check('PostgreSQL pickup p50', find(lines, pg, 'latency')?.p50, 2, false, ' ms');
  check('PostgreSQL pickup p99', find(lines, pg, 'latency')?.p99, 5, false, ' ms');
  check('PostgreSQL bulk enqueue / graphile-worker addJobs', over(value(pg, 'enqueue'), value('graphile-worker', 'enqueue')), 1.5, true);
  check(
    `PostgreSQL drain with ${short(options.backlog)} backlog / with ${short(options.smallBacklog)}`,
    over(value(pg, 'scale', options.backlog), value(pg, 'scale', options.smallBacklog)),
    0.8,
    true,
  );
  const firstOfLarge = find(lines, pg, 'scale', options.backlog)?.firstRate;
  check(
    `PostgreSQL drain of the first ${short(options.smallBacklog)} of a ${short(options.backlog)} backlog / with ${short(options.smallBacklog)}`,
    over(typeof firstOfLarge === 'number' ? firstOfLarge : undefined, value(pg, 'scale', options.smallBacklog)),
    0.8,
    true,
  );
  check('SQLite drain', value('tasklease-sqlite', 'drain'), 15000, true, ' tasks/s');
  check('MySQL drain / PostgreSQL drain', over(value('tasklease-mysql', 'drain'), value(pg, 'drain')), 0.33, true);
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
    ...(goals.length > 0 ? ['## Targets (issue 4)', '', ...goals, ''] : []),
    '## Workloads and method',
    '',
    `- **enqueue**: ${options.n.toLocaleString('en-US')} empty tasks by the orchestrator process, in calls of ${options.batch} (each system's bulk API), one call after another.`,
    `- **drain**: those ${options.n.toLocaleString('en-US')} tasks, queued first, drained by one worker process at concurrency ${options.concurrency}; tasks/s between the first and the last handler start, both taken in the worker process.`,
    `- **pickup latency**: one idle worker process; one task at a time, the next enqueued once the last has started; handler start (worker's wall clock) − the producer's wall clock just before the enqueue call (performance.timeOrigin + performance.now()). ${options.warmup} warm-up probes discarded, then up to ${options.samples} samples within ${options.latencyBudgetMs / 1000} s; after each probe starts, a random pause of 0–${options.latencyGapMs} ms (0–poll period for a worker that can only poll, so that probes meet the poll at a random phase) before the next is enqueued.`,
    `- **two workers**: as drain, with two worker processes (each at concurrency ${options.concurrency}) started together; the × is against the one-process drain.`,
    `- **limits**: as drain, under binding limits (global ${options.limits.global}, per type ${options.limits.perType}; one task type); the × is against the unlimited drain.`,
    `- **scale**: a backlog of ${options.smallBacklog.toLocaleString('en-US')} and of ${options.backlog.toLocaleString('en-US')} tasks queued first, each drained by one worker process until empty or for at most ${options.scaleTimeoutMs / 1000} s; for the large backlog the rate over its first ${options.smallBacklog.toLocaleString('en-US')} tasks is given too; RSS is the worker process's peak (ru_maxrss).`,
    '- Every workload starts on a fresh schema / key prefix / database, created for it and dropped after. Workers are separate OS processes (`node --import tsx`), prepared before the clock starts and released together.',
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
