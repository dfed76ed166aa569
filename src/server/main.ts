/**
 * Running the server as a program: configuration from flags, then the
 * environment, then defaults; SIGINT/SIGTERM close it gracefully.
 *
 *   --database-url / TASKLEASE_DATABASE_URL   default sqlite:./tasklease.db
 *   --host / TASKLEASE_HOST                   default 127.0.0.1
 *   --port / TASKLEASE_PORT                   default 8080
 *   --no-worker                               serve only (workers run elsewhere)
 *   --public-docs / --public-metrics          open /docs and /metrics without a token
 */
import { parseArgs } from 'node:util';
import { InvalidOptionsError, PortInUseError } from '../core/errors.js';
import { redactUrl } from '../store/open.js';
import { startServer, type ServerOptions, type TaskleaseServer } from './index.js';
import { reportStop } from './stop-report.js';

export interface CommandLineConfig {
  databaseUrl: string;
  host: string;
  port: number;
  worker: boolean;
  publicDocs: boolean;
  publicMetrics: boolean;
}

export function configFrom(argv: readonly string[], env: NodeJS.ProcessEnv): CommandLineConfig {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      'database-url': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'no-worker': { type: 'boolean' },
      'public-docs': { type: 'boolean' },
      'public-metrics': { type: 'boolean' },
    },
  });
  const portText = values.port ?? env.TASKLEASE_PORT ?? '8080';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidOptionsError('tasklease start', '--port / TASKLEASE_PORT', `must be a port number, got ${JSON.stringify(portText)}`);
  return {
    databaseUrl: values['database-url'] ?? env.TASKLEASE_DATABASE_URL ?? 'sqlite:./tasklease.db',
    host: values.host ?? env.TASKLEASE_HOST ?? '127.0.0.1',
    port,
    worker: !values['no-worker'],
    publicDocs: values['public-docs'] ?? false,
    publicMetrics: values['public-metrics'] ?? false,
  };
}

/** The one line `npm start` prints when its port is taken (and how to pick another). */
export function portInUseLine(error: PortInUseError): string {
  const other = error.port === 65535 ? 8081 : error.port + 1;
  return `tasklease: ${error.message.replace(/;.*$/, '')}; start on another port: npm start -- --port ${other} (or TASKLEASE_PORT=${other})`;
}

/**
 * Starts from the command line; resolves once serving. The process ends on
 * SIGINT/SIGTERM after a graceful close, saying what the stop did; a port in
 * use ends it at once with one line saying how to pick another.
 */
export async function runFromCommandLine(
  extra: Omit<ServerOptions, 'databaseUrl' | 'host' | 'port'> = {},
  argv = process.argv.slice(2),
): Promise<TaskleaseServer & { url: string; database: string }> {
  const config = configFrom(argv, process.env);
  const server = await startServer({
    migrate: true,
    publicDocs: config.publicDocs,
    publicMetrics: config.publicMetrics,
    ...extra,
    databaseUrl: config.databaseUrl,
    host: config.host,
    port: config.port,
    worker: config.worker ? (extra.worker ?? true) : false,
  }).catch((error: unknown) => {
    if (!(error instanceof PortInUseError)) throw error;
    process.stderr.write(`${portInUseLine(error)}\n`);
    process.exit(1);
  });
  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  const stopped = reportStop(server.worker, say);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) process.exit(130);
    stopping = true;
    server.app.log.info({ signal }, 'stopping: draining requests, then the worker (again to force)');
    if (!server.worker) say('stopping: draining requests (Ctrl-C again to force)');
    void server.close().then(
      () => (stopped(), process.exit(0)),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  const database = redactUrl(config.databaseUrl);
  server.app.log.info({ database, url: server.url }, 'tasklease server started');
  return Object.assign(server, { database });
}
