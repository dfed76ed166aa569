/**
 * What every command shares: the resolved configuration, the output, and the
 * store and client, opened on first use (a command that needs no database
 * opens none, and only the driver of the URL's dialect is loaded).
 */
import { MiddlewareStack, type Middleware } from '../client/middleware.js';
import { parseKeys, payloadEncryption, PayloadKeyError } from '../client/encryption.js';
import type { Task } from '../core/task.js';
import type { Command } from 'commander';
import { createClient, type TaskLeaseClient } from '../client/client.js';
import type { AnyTaskDefinition } from '../core/definition.js';
import { userInfo } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { openStore } from '../store/open.js';
import type { Store } from '../store/types.js';
import { resolveConfig, type CliConfig, type ConfigOverrides } from './config.js';
import { describeError, type ExitCode } from './exit-codes.js';
import type { CliIo } from './io.js';
import { Output } from './output.js';

/** Options every command accepts (declared on the program). */
export interface GlobalOptions {
  databaseUrl?: string;
  schema?: string;
  poolSize?: number;
  pooler?: string;
  config?: string;
  json?: boolean;
}

export class CommandContext {
  /** What run() returns when the action ends without throwing; a command lowers it to report partial failures. */
  exitCode: ExitCode = 0;
  private globals: GlobalOptions = {};
  private store: Store | null = null;
  private resolved: CliConfig | null = null;
  private printer: Output | null = null;

  constructor(readonly io: CliIo) {}

  /** Called with the command about to run: its global flags are known from here on. */
  begin(command: Command): void {
    this.globals = command.optsWithGlobals<GlobalOptions>();
    this.printer = new Output(this.io, { json: this.globals.json === true });
  }

  get output(): Output {
    this.printer ??= new Output(this.io, { json: this.globals.json === true });
    return this.printer;
  }

  /** The configuration, with a command's own flags (e.g. `worker.concurrency`) over everything else. */
  config(commandFlags: ConfigOverrides = {}): CliConfig {
    if (this.resolved && Object.keys(commandFlags).length === 0) return this.resolved;
    const { databaseUrl, schema, poolSize, pooler } = this.globals;
    this.resolved = resolveConfig({
      flags: { databaseUrl, schema, poolSize, pooler, ...commandFlags },
      env: this.io.env,
      cwd: this.io.cwd,
      configPath: this.globals.config,
    });
    return this.resolved;
  }

  async openStore(): Promise<Store> {
    if (this.store) return this.store;
    const config = this.config();
    this.store = await openStore(relativeTo(this.io.cwd, config.databaseUrl), {
      ...(config.schema ? { schema: config.schema } : {}),
      ...(config.poolSize ? { poolSize: config.poolSize } : {}),
      ...(config.pooler ? { pooler: config.pooler } : {}),
    });
    return this.store;
  }

  /** A client over the store; `tasks` are the definitions a submit checks payloads against, `middleware` the task modules'. */
  async client(tasks: readonly AnyTaskDefinition[] = [], middleware: readonly Middleware[] = []): Promise<TaskLeaseClient> {
    const { worker, bulkLeaseMs } = this.config();
    return createClient({
      store: await this.openStore(),
      tasks,
      middleware,
      actor: cliActor(this.io.env),
      ...(bulkLeaseMs ? { bulkLeaseMs } : {}),
      ...(worker.globalConcurrency ? { globalConcurrency: worker.globalConcurrency } : {}),
      ...(worker.typeConcurrency ? { typeConcurrency: worker.typeConcurrency } : {}),
    });
  }

  /**
   * The task as this viewer may read it: its encrypted payload and result opened with the keys of
   * TASKLEASE_PAYLOAD_KEYS (config payloadKeys); without them, or when they do not open it, as stored (render.ts
   * shows it as "encrypted").
   */
  reveal(task: Task): Task {
    const keys = this.config().payloadKeys;
    if (!keys) return task;
    this.opener ??= new MiddlewareStack([payloadEncryption({ keys: parseKeys(keys), types: [] })]);
    try {
      return this.opener.reveal(task);
    } catch (error) {
      if (error instanceof PayloadKeyError) return task;
      throw error;
    }
  }

  private opener: MiddlewareStack | null = null;

  /** `error CODE: message` on stderr; under --json also `{ "error": … }` on stdout for scripts. */
  reportError(error: unknown, json = this.globals.json === true): void {
    const described = describeError(error);
    this.io.stderr.write(`${this.output.paint('error', 'red')} ${described.code}: ${described.message}\n`);
    if (json) this.io.stdout.write(`${JSON.stringify({ error: described }, null, 2)}\n`);
  }

  async close(): Promise<void> {
    const store = this.store;
    this.store = null;
    await store?.close();
  }
}

/** Who the CLI's operator actions are recorded as in a task's history: the OS user running it. */
export function cliActor(env: Readonly<Record<string, string | undefined>>): string {
  let user: string | undefined;
  try {
    user = userInfo().username;
  } catch {
    user = env.USER ?? env.USERNAME; // no passwd entry (a container's arbitrary uid)
  }
  return `cli:${user || 'unknown'}`.slice(0, 255);
}

/** A relative SQLite path is relative to the CLI's working directory (io.cwd: the process's, or a test's). */
export function relativeTo(cwd: string, url: string): string {
  const match = /^(sqlite|file):(?!\/\/)(?!:memory:)([^?]*)(.*)$/i.exec(url);
  if (!match || isAbsolute(match[2]!)) return url;
  return `${match[1]}:${resolve(cwd, match[2]!)}${match[3]}`;
}
