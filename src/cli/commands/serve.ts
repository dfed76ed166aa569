/**
 * `tasklease serve [modules…]`: the HTTP server (API, probes, metrics, docs)
 * over the configured store, with a worker for the task types the modules
 * define unless --no-worker or TASKLEASE_WORKER_ENABLED=false (the seed's
 * worker.enabled switch: serve-only nodes and worker-only nodes).
 * `tasklease start` is the same after `migrate`, and can print a fresh admin
 * token: the product on one machine in one command.
 * Stops gracefully on SIGINT / SIGTERM (drain requests, stop the worker).
 */
import type { Command } from 'commander';
import { InvalidOptionsError, PortInUseError } from '../../core/errors.js';
import { reportStop } from '../../server/stop-report.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { HEALTH_DETAILS, type HealthDetails } from '../../server/options.js';
import { integer, nonEmpty, oneOf } from '../parse.js';
import { loadWorkerModules } from '../task-modules.js';

interface ServeFlags {
  host: string;
  port: number;
  worker: boolean;
  publicMetrics?: boolean;
  publicDocs?: boolean;
  trustProxy?: boolean;
  healthDetails: HealthDetails;
  printAdminToken?: boolean;
}

function serveCommand(name: 'serve' | 'start', description: string): CliCommand {
  return {
    register(program, ctx) {
      const command: Command = program
        .command(name)
        .description(description)
        .argument('[modules...]', 'task modules whose definitions the server checks submits against and its worker runs')
        .option('--host <host>', 'address to listen on (env TASKLEASE_HOST)', nonEmpty, ctx.io.env.TASKLEASE_HOST ?? '127.0.0.1')
        .option('--port <port>', 'port (env TASKLEASE_PORT; 0 picks a free one)', integer(0, 65_535), Number(ctx.io.env.TASKLEASE_PORT ?? 8080))
        .option('--no-worker', 'serve only; workers run elsewhere (env TASKLEASE_WORKER_ENABLED=false)')
        .option('--public-metrics', 'serve /metrics and /actuator/prometheus without a token')
        .option('--public-docs', 'serve /docs and /openapi.json without a token')
        .option(
          '--trust-proxy',
          'behind a reverse proxy or load balancer: take the client address and scheme from X-Forwarded-* (env TASKLEASE_TRUST_PROXY=true)',
        )
        .option(
          '--health-details <when>',
          `what the health probes show beyond their status: ${HEALTH_DETAILS.join(', ')} (to operator and admin credentials) (env TASKLEASE_HEALTH_DETAILS)`,
          oneOf(HEALTH_DETAILS),
          ctx.io.env.TASKLEASE_HEALTH_DETAILS ?? 'when-authorized',
        );
      if (name === 'start') command.option('--print-admin-token', 'create an admin token valid 7 days and print it (shown once)');
      command.action(action(ctx, (modules: string[], flags: ServeFlags) => serve(ctx, name, modules, flags)));
    },
  };
}

async function serve(ctx: CommandContext, name: 'serve' | 'start', modules: string[], flags: ServeFlags): Promise<void> {
  const enabled = ctx.io.env.TASKLEASE_WORKER_ENABLED;
  if (enabled !== undefined && enabled !== 'true' && enabled !== 'false') {
    throw new InvalidOptionsError('tasklease', 'TASKLEASE_WORKER_ENABLED', `must be true or false, got ${JSON.stringify(enabled)}`);
  }
  const runWorker = flags.worker && enabled !== 'false' && modules.length > 0;
  const trustProxy = flags.trustProxy === true || envSwitch(ctx, 'TASKLEASE_TRUST_PROXY');
  if (!HEALTH_DETAILS.includes(flags.healthDetails)) {
    throw new InvalidOptionsError(
      'tasklease',
      'TASKLEASE_HEALTH_DETAILS',
      `must be one of ${HEALTH_DETAILS.join(', ')}, got ${JSON.stringify(flags.healthDetails)}`,
    );
  }
  const { tasks, schedules, middleware } = await loadWorkerModules(modules, ctx.io.cwd);
  const store = await ctx.openStore();
  const { startServer } = await import('../../server/index.js');
  const server = await startServer({
    store,
    tasks,
    middleware,
    migrate: name === 'start',
    host: flags.host,
    port: flags.port,
    worker: runWorker ? { ...ctx.config().worker, schedules } : false,
    publicMetrics: flags.publicMetrics === true,
    publicDocs: flags.publicDocs === true,
    trustProxy,
    healthDetails: flags.healthDetails,
    logger: { level: ctx.config().logLevel },
  }).catch((error: unknown) => {
    if (!(error instanceof PortInUseError)) throw error;
    throw new PortInUseError(error.host, error.port, `start on another port: --port <port> or TASKLEASE_PORT=<port>`, { cause: error });
  });
  const stopped = reportStop(server.worker, (line) => void ctx.io.stderr.write(`${line}\n`));
  const token = flags.printAdminToken
    ? (await server.client.tokens.create({ name: `tasklease start ${new Date().toISOString()}`, role: 'admin', expiresInMs: 7 * 86_400_000 })).token
    : null;
  ctx.output.result({ url: server.url, docs: `${server.url}/docs`, worker: runWorker, ...(token ? { adminToken: token } : {}) }, () =>
    [
      `tasklease ${name === 'start' ? 'started' : 'serving'} at ${server.url} (docs: ${server.url}/docs)` +
        (runWorker ? ` with a worker for ${server.worker!.taskTypes.join(', ')}` : ', no worker'),
      ...(token ? [`admin token (shown once, valid 7 days): ${token}`] : []),
    ].join('\n'),
  );
  await ctx.io.waitForStopSignal();
  await server.close();
  stopped();
}

/** A true/false environment switch; unset is false. */
function envSwitch(ctx: CommandContext, name: string): boolean {
  const value = ctx.io.env[name];
  if (value !== undefined && value !== 'true' && value !== 'false')
    throw new InvalidOptionsError('tasklease', name, `must be true or false, got ${JSON.stringify(value)}`);
  return value === 'true';
}

export const serveCommands: CliCommand = {
  register(program, ctx) {
    serveCommand('start', 'migrate, then serve the HTTP API with a worker for the given task modules').register(program, ctx);
    serveCommand('serve', 'serve the HTTP API (and a worker for the given task modules)').register(program, ctx);
  },
};
