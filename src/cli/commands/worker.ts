/**
 * `tasklease worker ./tasks.js [more.js…] --concurrency 8`: runs a worker for
 * the task types the modules define, logging one JSON line per event, until
 * SIGINT or SIGTERM; then it stops claiming, lets running handlers finish
 * (up to the shutdown grace), hands back prefetched tasks and exits 0.
 * A second signal exits at once (leases expire and other workers take over).
 */
import { Option } from 'commander';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { duration, integer, nonEmpty } from '../parse.js';
import { loadWorkerModules } from '../task-modules.js';

interface WorkerFlags {
  concurrency?: number;
  prefetch?: number;
  lease?: number;
  heartbeat?: number;
  poll?: number;
  shutdownGrace?: number;
  globalConcurrency?: number;
  typeConcurrency?: number;
  ownerConcurrency?: number;
  fairOwners?: boolean;
  scheduleRefresh?: number;
  adaptiveInterval?: number;
  workerId?: string;
  logLevel?: string;
}

export const workerCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('worker')
      .description('run a worker for the task definitions exported by the given modules')
      .argument('<modules...>', 'task modules (.js, or .ts when run through tsx): defineTask() results as named exports or a default array')
      .option('--concurrency <n>', 'handlers running at once in this process (default 4)', integer(1, 10_000))
      .option('--prefetch <n>', 'tasks leased ahead of free slots (default 0)', integer(0, 10_000))
      .option('--lease <duration>', 'lease length without renewal (default 60s)', duration)
      .option('--heartbeat <duration>', 'lease renewal period, well under the lease (default 10s)', duration)
      .option('--poll <duration>', 'longest fallback poll when no wake-up arrives (default 1s)', duration)
      .option('--shutdown-grace <duration>', 'how long a stop waits for running handlers before aborting them (default 30s)', duration)
      .option('--global-concurrency <n>', 'cluster-wide running cap unless a GLOBAL policy says otherwise (default 20)', integer(1, 100_000))
      .option('--type-concurrency <n>', 'per-type running cap unless a TYPE policy says otherwise (default 5)', integer(1, 100_000))
      .option(
        '--owner-concurrency <n>',
        'per-owner (tenant) running cap unless an OWNER policy says otherwise; claims take turns across owners (default none)',
        integer(1, 100_000),
      )
      .option('--fair-owners', 'claims take turns across owners even without an owner limit (default off)')
      .option(
        '--schedule-refresh <duration>',
        'the scheduler of periodic tasks reads the schedules at least this often; 0s: no scheduler in this worker (default 30s)',
        duration,
      )
      .option('--adaptive-interval <duration>', 'how often this worker evaluates the adaptive types it serves; 0s: never (default 1s)', duration)
      .option('--worker-id <id>', 'unique per process; the lease owner (default host-pid-random)', nonEmpty)
      .addOption(new Option('--log-level <level>', 'log level (default info)').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']))
      .action(action(ctx, (modules: string[], flags: WorkerFlags) => runWorker(ctx, modules, flags)));
  },
};

async function runWorker(ctx: CommandContext, modules: string[], flags: WorkerFlags): Promise<void> {
  const config = ctx.config({
    'worker.concurrency': flags.concurrency,
    'worker.prefetch': flags.prefetch,
    'worker.leaseMs': flags.lease,
    'worker.heartbeatIntervalMs': flags.heartbeat,
    'worker.pollIntervalMs': flags.poll,
    'worker.shutdownGraceMs': flags.shutdownGrace,
    'worker.globalConcurrency': flags.globalConcurrency,
    'worker.typeConcurrency': flags.typeConcurrency,
    'worker.ownerConcurrency': flags.ownerConcurrency,
    'worker.fairOwners': flags.fairOwners,
    'worker.scheduleRefreshMs': flags.scheduleRefresh,
    'worker.adaptiveIntervalMs': flags.adaptiveInterval,
    logLevel: flags.logLevel,
  });
  const { tasks, schedules, middleware } = await loadWorkerModules(modules, ctx.io.cwd);
  // Loaded here, not at start-up: the other commands never need the worker or the logger.
  const [{ createWorker }, { attachLogger }, { recordQueueHistory }, { default: pino }] = await Promise.all([
    import('../../worker/worker.js'),
    import('../../observe/logging.js'),
    import('../../observe/queue-history.js'),
    import('pino'),
  ]);
  const store = await ctx.openStore();
  const worker = createWorker({ store, tasks, schedules, middleware, ...config.worker, ...(flags.workerId ? { workerId: flags.workerId } : {}) });
  const logger = pino({ level: config.logLevel }, { write: (line: string) => ctx.io.stdout.write(line) });
  // attachLogger adds the workerId to its lines; the command's own lines get it from this child, once.
  const detach = attachLogger(worker, logger);
  // Queue history (the dashboard's History chart): one row per type per minute of this process.
  const history = recordQueueHistory({ store, worker, processId: worker.workerId });
  const log = logger.child({ workerId: worker.workerId });
  worker.start();
  const { concurrency, fairOwners, scheduleRefreshMs } = worker.options;
  const scheduleKeys = worker.options.schedules.map((schedule) => schedule.key);
  log.info({ taskTypes: worker.taskTypes, concurrency, fairOwners, schedules: scheduleKeys, scheduleRefreshMs, dialect: store.dialect }, 'worker started');
  const signal = await ctx.io.waitForStopSignal();
  log.info({ signal }, 'stop signal received');
  await worker.stop(); // the logger writes 'worker stopping' (active, buffered) and 'worker stopped'
  // Its last minute; a schema without the history table (not migrated yet) loses it, the stop goes on.
  await history.stop().catch(() => undefined);
  detach();
}
