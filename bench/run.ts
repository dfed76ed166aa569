/**
 * `npm run bench`: measures tasklease (from the built dist/) and its peers on
 * the same machine, on the same workloads, in interleaved rounds (A B … then
 * … B A), and prints one JSON line per system, workload and round, then a
 * table of medians, each round's ratios and the targets (issue 25); writes
 * bench/RESULTS.md. See `npm run bench -- --help`.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeEnvironment, loadAverage } from './env.js';
import { dropWalInspect } from './pg-work.js';
import { roundsReport, summarize, table, targets, writeResults, type Line } from './report.js';
import { workLine, workRatios, workTable } from './report-work.js';
import { sumPerTask } from './db-work.js';
import { systems } from './systems/index.js';
import { ALL_WORKLOADS, type ResultLine, type SystemAdapter, type WorkloadName } from './types.js';
import { drain, enqueue, fill, latency, liveWorkers, percentiles, round, type BenchOptions, type DrainResult } from './workloads.js';

const HELP = `Usage: npm run bench -- [options]

  --quick              a check of the script in ~2 minutes on a quiet machine: 2 rounds, -n 5000,
                       2000 tasks under limits, 60 samples, backlogs 5k / 20k, 10 s scale limit
                       (any option below still applies)
  --systems a,b        systems to run (default: all): ${Object.keys(systems).join(', ')}
  --workloads a,b      workloads (default: all): ${ALL_WORKLOADS.join(', ')}
  --rounds R           interleaved rounds of enqueue, drain, latency and two-workers (default 3)
  -n N                 timed tasks per enqueue / drain / two-workers / limits run (default 20000)
  --warmup W           untimed tasks enqueued and drained first in each of those runs (default 2000)
  --concurrency C      handlers per worker process (default 10)
  --backlog B          large backlog of the scale workload (default 1000000)
  --small-backlog B    small backlog of the scale workload (default 10000)
  --samples S          pickup-latency samples over all rounds (default 300)
  --batch K            tasks per bulk-enqueue call (default 1000)
  --peer-scale         run the scale workload on the peers too (default: tasklease only)
  --drain-timeout S    stop a drain after S seconds (default 120)
  --scale-timeout S    stop a scale drain after S seconds (default 45)
  --latency-budget S   stop taking latency samples after S seconds, over all rounds (default 30)
  --latency-gap MS     pause a random 0..MS ms after a probe has started before the next
                       is enqueued, so it meets an idle worker (default 20; 0 = back to back)
  --out FILE           results file (default bench/RESULTS.md)
  --no-results         do not write the results file
`;

interface Plan {
  options: BenchOptions;
  names: string[];
  workloads: WorkloadName[];
  peerScale: boolean;
  out: string | null;
}

function parseOptions(): Plan {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean' },
      systems: { type: 'string' },
      workloads: { type: 'string' },
      rounds: { type: 'string' },
      n: { type: 'string', short: 'n' },
      warmup: { type: 'string' },
      concurrency: { type: 'string' },
      backlog: { type: 'string' },
      'small-backlog': { type: 'string' },
      samples: { type: 'string' },
      batch: { type: 'string' },
      'peer-scale': { type: 'boolean' },
      'drain-timeout': { type: 'string' },
      'scale-timeout': { type: 'string' },
      'latency-budget': { type: 'string' },
      'latency-gap': { type: 'string' },
      out: { type: 'string' },
      'no-results': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const integer = (name: string, raw: string | undefined, fallback: number, min = 1): number => {
    if (raw === undefined) return fallback;
    const value = Number(raw.replace(/_/g, ''));
    if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${raw}`);
    return value;
  };
  const known = Object.keys(systems);
  const names = values.systems
    ? values.systems
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : known;
  for (const name of names) if (!known.includes(name)) throw new Error(`--systems: unknown system ${name} (known: ${known.join(', ')})`);
  const workloads = (values.workloads ? values.workloads.split(',').map((s) => s.trim()) : [...ALL_WORKLOADS]) as WorkloadName[];
  for (const name of workloads) if (!ALL_WORKLOADS.includes(name)) throw new Error(`--workloads: unknown workload ${name}`);
  const options: BenchOptions = {
    quick,
    rounds: integer('rounds', values.rounds, quick ? 2 : 3),
    n: integer('n', values.n, quick ? 5000 : 20_000),
    // Binding limits drain slowly (MySQL: ~500/s on a loaded machine): the quick check takes fewer.
    limitsN: quick && values.n === undefined ? 2000 : integer('n', values.n, 20_000),
    warmupTasks: integer('warmup', values.warmup, quick ? 1000 : 2000, 0),
    concurrency: integer('concurrency', values.concurrency, 10),
    backlog: integer('backlog', values.backlog, quick ? 20_000 : 1_000_000),
    smallBacklog: integer('small-backlog', values['small-backlog'], quick ? 5000 : 10_000),
    samples: integer('samples', values.samples, quick ? 60 : 300),
    warmup: quick ? 5 : 20,
    batch: integer('batch', values.batch, 1000),
    drainTimeoutMs: integer('drain-timeout', values['drain-timeout'], quick ? 60 : 120) * 1000,
    scaleTimeoutMs: integer('scale-timeout', values['scale-timeout'], quick ? 10 : 45) * 1000,
    latencyBudgetMs: integer('latency-budget', values['latency-budget'], quick ? 10 : 30) * 1000,
    latencyGapMs: integer('latency-gap', values['latency-gap'], 20, 0),
    limits: { global: 20, perType: 5 },
  };
  const out = values['no-results'] ? null : (values.out ?? fileURLToPath(new URL('./RESULTS.md', import.meta.url)));
  return { options, names, workloads, peerScale: values['peer-scale'] ?? false, out };
}

const lines: Line[] = [];
function emit(line: Line): void {
  lines.push(line);
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function drainLine(system: string, workload: string, result: DrainResult, extra: Record<string, unknown>): ResultLine {
  return {
    system,
    workload,
    value: round(result.tasksPerSecond),
    unit: 'tasks/s',
    ...extra,
    processed: result.processed,
    seconds: round(result.seconds, 3),
    ...(result.cpuUsPerTask !== null ? { cpuUsPerTask: result.cpuUsPerTask } : {}),
    peakRssMB: result.peakRssMB,
    ...(result.perWorker.length > 1 ? { perWorker: result.perWorker } : {}),
    ...(result.firstRate !== null ? { firstRate: round(result.firstRate) } : {}),
    remaining: result.remaining,
    ...(result.partial ? { partial: true } : {}),
    ...(result.work ? { work: result.work } : {}),
  };
}

let current: SystemAdapter | null = null;

/** Runs one workload on a fresh queue and always tears it down. */
async function fresh(adapter: SystemAdapter, workload: string, body: () => Promise<void>): Promise<void> {
  try {
    await adapter.setup();
    await body();
  } catch (error) {
    emit({ system: adapter.name, workload, skipped: `failed: ${(error as Error).message.split('\n')[0]}` });
  } finally {
    for (const worker of liveWorkers) worker.kill();
    liveWorkers.clear();
    await adapter.teardown().catch((error: unknown) => console.error(`[bench] ${adapter.name} teardown: ${(error as Error).message}`));
  }
}

/** Pickup samples per system, pooled over the rounds (ms). */
const pickups = new Map<string, number[]>();

/** One round of the interleaved workloads (enqueue + drain, latency, two workers) on one system. */
async function runRound(adapter: SystemAdapter, plan: Plan, index: number): Promise<void> {
  const { options, workloads } = plan;
  const name = adapter.name;
  const want = (workload: WorkloadName): boolean => workloads.includes(workload);
  const tag = { round: index + 1 };
  const warmup = options.warmupTasks;
  if (want('enqueue') || want('drain')) {
    await fresh(adapter, 'drain', async () => {
      // The first tasks warm the producer up (untimed); the drain then counts from after them.
      const filled = await fill(adapter, { warmup, count: options.n, batch: options.batch });
      if (want('enqueue'))
        emit({
          system: name,
          workload: 'enqueue',
          ...tag,
          value: round(filled.tasksPerSecond),
          unit: 'tasks/s',
          n: options.n,
          batch: options.batch,
          producerCpuUsPerTask: filled.cpuUsPerTask,
          ...(filled.work ? { work: filled.work } : {}),
        });
      if (!want('drain')) return;
      const result = await drain(adapter, options, { count: options.n + warmup, warmup, processes: 1, limits: null, timeoutMs: options.drainTimeoutMs });
      emit(drainLine(name, 'drain', result, { ...tag, n: options.n, warmup, concurrency: options.concurrency }));
      // The database's work over each task's life: its submit (enqueue phase) and its claim and finish (drain phase).
      if (filled.work && result.work) emit(workLine(name, index + 1, filled.work, result.work, sumPerTask(filled.work, result.work)));
    });
  }
  if (want('latency')) {
    await fresh(adapter, 'latency', async () => {
      const result = await latency(adapter, {
        ...options,
        samples: Math.ceil(options.samples / options.rounds),
        latencyBudgetMs: options.latencyBudgetMs / options.rounds,
      });
      const { p50, p95, p99, samples, partial } = result;
      pickups.set(name, [...(pickups.get(name) ?? []), ...result.values]);
      emit({ system: name, workload: 'latency', ...tag, value: p50, unit: 'ms', p50, p95, p99, samples, ...(partial ? { partial } : {}) });
    });
  }
  if (want('two-workers')) {
    await fresh(adapter, 'two-workers', async () => {
      await adapter.enqueueBulk(options.n + warmup, options.batch);
      const result = await drain(adapter, options, { count: options.n + warmup, warmup, processes: 2, limits: null, timeoutMs: options.drainTimeoutMs });
      emit(drainLine(name, 'two-workers', result, { ...tag, n: options.n, warmup, concurrency: options.concurrency, processes: 2 }));
    });
  }
}

/** The once-only workloads of a tasklease system: binding limits, and the backlogs of the scale workload. */
async function runOnce(adapter: SystemAdapter, plan: Plan): Promise<void> {
  const { options, workloads } = plan;
  const name = adapter.name;
  const warmup = options.warmupTasks;
  if (workloads.includes('limits') && adapter.supportsLimits) {
    await fresh(adapter, 'limits', async () => {
      await adapter.enqueueBulk(options.limitsN + warmup, options.batch);
      const result = await drain(adapter, options, {
        count: options.limitsN + warmup,
        warmup,
        processes: 1,
        limits: options.limits,
        timeoutMs: options.drainTimeoutMs,
      });
      emit(drainLine(name, 'limits', result, { n: options.limitsN, warmup, concurrency: options.concurrency, limits: options.limits }));
    });
  }
  if (workloads.includes('scale') && (adapter.kind === 'tasklease' || plan.peerScale)) {
    for (const backlog of [options.smallBacklog, options.backlog]) {
      await fresh(adapter, 'scale', async () => {
        const filled = await enqueue(adapter, backlog, Math.max(options.batch, 5000));
        const checkpoint = backlog > options.smallBacklog ? options.smallBacklog : undefined;
        const result = await drain(adapter, options, { count: backlog, processes: 1, limits: null, timeoutMs: options.scaleTimeoutMs, checkpoint });
        emit(drainLine(name, 'scale', result, { backlog, concurrency: options.concurrency, enqueueSeconds: round(filled.seconds, 1) }));
      });
    }
  }
}

/** Loads and probes each system; the unreachable ones are reported and left out. */
async function adapters(plan: Plan, settings: Record<string, Record<string, string>>, packages: string[]): Promise<SystemAdapter[]> {
  const ready: SystemAdapter[] = [];
  for (const name of plan.names) {
    let adapter: SystemAdapter;
    try {
      adapter = await systems[name]!();
    } catch (error) {
      emit({ system: name, workload: 'all', skipped: `failed to load: ${(error as Error).message.split('\n')[0]}` });
      continue;
    }
    const reason = await adapter.probe().catch((error: unknown) => `probe failed: ${(error as Error).message}`);
    if (reason) {
      emit({ system: name, workload: 'all', skipped: reason });
      continue;
    }
    settings[name] = adapter.settings({ concurrency: plan.options.concurrency });
    packages.push(...adapter.packages());
    ready.push(adapter);
  }
  return ready;
}

const elapsed = (since: number): string => `${Math.round((performance.now() - since) / 1000)} s`;

async function main(): Promise<void> {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const plan = parseOptions();
  const { options, out } = plan;
  process.on('SIGINT', () => {
    for (const worker of liveWorkers) worker.kill();
    const adapter = current;
    void (adapter ? adapter.teardown() : Promise.resolve()).then(() => dropWalInspect()).finally(() => process.exit(130));
  });
  const settings: Record<string, Record<string, string>> = {};
  const packages = ['tsx', 'pg'];
  const ready = await adapters(plan, settings, packages);
  // One untimed bulk enqueue per system first: the orchestrator's code paths and drivers are warm from
  // round 1 on (otherwise the first system of the first round pays for the JIT).
  for (const adapter of ready) {
    current = adapter;
    if (options.warmupTasks > 0) await fresh(adapter, 'warm-up', () => adapter.enqueueBulk(Math.max(options.warmupTasks, 5 * options.batch), options.batch));
  }
  for (let index = 0; index < options.rounds; index += 1) {
    // Alternate the order (A B … then … B A) so that no system always runs right after another.
    for (const adapter of index % 2 === 0 ? ready : [...ready].reverse()) {
      current = adapter;
      process.stderr.write(`[bench] ${elapsed(started)}: round ${index + 1}/${options.rounds}: ${adapter.name}…\n`);
      await runRound(adapter, plan, index);
    }
    for (const line of workRatios(lines, index + 1)) emit(line);
  }
  const once = plan.workloads.some((w) => w === 'limits' || w === 'scale');
  for (const adapter of once ? ready : []) {
    current = adapter;
    process.stderr.write(`[bench] ${elapsed(started)}: ${adapter.name}: limits, scale…\n`);
    await runOnce(adapter, plan);
  }
  current = null;
  await dropWalInspect().catch((error: unknown) => console.error(`[bench] pg_walinspect: ${(error as Error).message}`));
  for (const line of summarize(lines, pickups, percentiles)) emit(line);
  const work = workTable(lines);
  process.stdout.write(`\n${table(lines, options)}\n\n${work.length > 0 ? `${work.join('\n')}\n\n` : ''}${roundsReport(lines, options).join('\n')}\n`);
  const goals = targets(lines, options);
  if (goals.length > 0) process.stdout.write(`\nTargets (issue 25):\n${goals.join('\n')}\n`);
  if (out) {
    const environment = await describeEnvironment(packages, loadAtStart);
    const command = ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
    writeResults(out, lines, { command, options, environment, settings, elapsedSeconds: (performance.now() - started) / 1000 });
    process.stderr.write(`[bench] ${elapsed(started)}: wrote ${out}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  for (const worker of liveWorkers) worker.kill();
  void dropWalInspect()
    .catch(() => undefined)
    .finally(() => process.exit(1));
});
