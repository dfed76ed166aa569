/**
 * `npm run bench`: measures tasklease and its peers on the same machine, on
 * the same workloads, and prints one JSON line per system and workload, then
 * a table; writes bench/RESULTS.md. See `npm run bench -- --help`.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeEnvironment, loadAverage } from './env.js';
import { table, targets, writeResults, type Line } from './report.js';
import { systems } from './systems/index.js';
import { ALL_WORKLOADS, type ResultLine, type SystemAdapter, type WorkloadName } from './types.js';
import { drain, enqueue, latency, liveWorkers, round, type BenchOptions, type DrainResult } from './workloads.js';

const HELP = `Usage: npm run bench -- [options]

  --systems a,b        systems to run (default: all): ${Object.keys(systems).join(', ')}
  --workloads a,b      workloads (default: all): ${ALL_WORKLOADS.join(', ')}
  -n N                 tasks per enqueue / drain / two-workers / limits run (default 20000)
  --concurrency C      handlers per worker process (default 10)
  --backlog B          large backlog of the scale workload (default 1000000)
  --small-backlog B    small backlog of the scale workload (default 10000)
  --samples S          pickup-latency samples (default 300)
  --batch K            tasks per bulk-enqueue call (default 1000)
  --peer-scale         run the scale workload on the peers too (default: tasklease only)
  --drain-timeout S    stop a drain after S seconds (default 120)
  --scale-timeout S    stop a scale drain after S seconds (default 90)
  --latency-budget S   stop taking latency samples after S seconds (default 30)
  --latency-gap MS     pause a random 0..MS ms after a probe has started before the next
                       is enqueued, so it meets an idle worker (default 20; 0 = back to back)
  --out FILE           results file (default bench/RESULTS.md)
  --no-results         do not write the results file
`;

function parseOptions(): { options: BenchOptions; names: string[]; workloads: WorkloadName[]; peerScale: boolean; out: string | null } {
  const { values } = parseArgs({
    options: {
      systems: { type: 'string' },
      workloads: { type: 'string' },
      n: { type: 'string', short: 'n' },
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
    n: integer('n', values.n, 20_000),
    concurrency: integer('concurrency', values.concurrency, 10),
    backlog: integer('backlog', values.backlog, 1_000_000),
    smallBacklog: integer('small-backlog', values['small-backlog'], 10_000),
    samples: integer('samples', values.samples, 300),
    warmup: 10,
    batch: integer('batch', values.batch, 1000),
    drainTimeoutMs: integer('drain-timeout', values['drain-timeout'], 120) * 1000,
    scaleTimeoutMs: integer('scale-timeout', values['scale-timeout'], 90) * 1000,
    latencyBudgetMs: integer('latency-budget', values['latency-budget'], 30) * 1000,
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
    peakRssMB: result.peakRssMB,
    ...(result.perWorker.length > 1 ? { perWorker: result.perWorker } : {}),
    ...(result.firstRate !== null ? { firstRate: round(result.firstRate) } : {}),
    remaining: result.remaining,
    ...(result.partial ? { partial: true } : {}),
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

async function runSystem(adapter: SystemAdapter, options: BenchOptions, workloads: WorkloadName[], peerScale: boolean): Promise<void> {
  const name = adapter.name;
  const want = (workload: WorkloadName): boolean => workloads.includes(workload);
  let oneWorker: number | undefined;
  if (want('enqueue') || want('drain')) {
    await fresh(adapter, 'drain', async () => {
      const filled = await enqueue(adapter, options.n, options.batch);
      if (want('enqueue'))
        emit({ system: name, workload: 'enqueue', value: round(filled.tasksPerSecond), unit: 'tasks/s', n: options.n, batch: options.batch });
      if (!want('drain')) return;
      const result = await drain(adapter, options, { count: options.n, processes: 1, limits: null, timeoutMs: options.drainTimeoutMs });
      oneWorker = result.tasksPerSecond;
      emit(drainLine(name, 'drain', result, { n: options.n, concurrency: options.concurrency }));
    });
  }
  if (want('latency')) {
    await fresh(adapter, 'latency', async () => {
      const result = await latency(adapter, options);
      const { p50, p95, p99, mean, max, samples, partial } = result;
      emit({ system: name, workload: 'latency', value: p50, unit: 'ms', p50, p95, p99, mean, max, samples, ...(partial ? { partial } : {}) });
    });
  }
  if (want('two-workers')) {
    await fresh(adapter, 'two-workers', async () => {
      await adapter.enqueueBulk(options.n, options.batch);
      const result = await drain(adapter, options, { count: options.n, processes: 2, limits: null, timeoutMs: options.drainTimeoutMs });
      const vsOne = oneWorker ? round(result.tasksPerSecond / oneWorker, 2) : undefined;
      emit(drainLine(name, 'two-workers', result, { n: options.n, concurrency: options.concurrency, processes: 2, vsOne }));
    });
  }
  if (want('limits') && adapter.supportsLimits) {
    await fresh(adapter, 'limits', async () => {
      await adapter.enqueueBulk(options.n, options.batch);
      const result = await drain(adapter, options, { count: options.n, processes: 1, limits: options.limits, timeoutMs: options.drainTimeoutMs });
      const vsUnlimited = oneWorker ? round(result.tasksPerSecond / oneWorker, 2) : undefined;
      emit(drainLine(name, 'limits', result, { n: options.n, concurrency: options.concurrency, limits: options.limits, vsUnlimited }));
    });
  }
  if (want('scale') && (adapter.kind === 'tasklease' || peerScale)) {
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

async function main(): Promise<void> {
  const started = performance.now();
  const loadAtStart = loadAverage();
  const { options, names, workloads, peerScale, out } = parseOptions();
  process.on('SIGINT', () => {
    for (const worker of liveWorkers) worker.kill();
    const adapter = current;
    void (adapter ? adapter.teardown() : Promise.resolve()).finally(() => process.exit(130));
  });
  const settings: Record<string, Record<string, string>> = {};
  const packages = ['tsx', 'pg'];
  for (const name of names) {
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
    current = adapter;
    settings[name] = adapter.settings({ concurrency: options.concurrency });
    packages.push(...adapter.packages());
    process.stderr.write(`[bench] ${name}…\n`);
    await runSystem(adapter, options, workloads, peerScale);
    current = null;
  }
  process.stdout.write(`\n${table(lines, options)}\n`);
  const goals = targets(lines, options);
  if (goals.length > 0) process.stdout.write(`\n${goals.join('\n')}\n`);
  if (out) {
    const environment = await describeEnvironment(packages, loadAtStart);
    const command = ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
    writeResults(out, lines, { command, options, environment, settings, elapsedSeconds: (performance.now() - started) / 1000 });
    process.stderr.write(`[bench] wrote ${out}\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  for (const worker of liveWorkers) worker.kill();
  process.exit(1);
});
