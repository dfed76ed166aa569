/**
 * The commander program: global flags, help text, and every command from
 * commands/index.ts. Errors are thrown (exitOverride), never process.exit, so
 * run() decides the exit code and closes the store.
 */
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { COMMANDS } from './commands/index.js';
import { configFields, DEFAULT_DATABASE_URL } from './config.js';
import type { CommandContext } from './context.js';
import { integer, nonEmpty } from './parse.js';

export function buildProgram(ctx: CommandContext): Command {
  const program = new Command('tasklease')
    .description('Durable asynchronous tasks on the database you already run: operate them from a shell.')
    .version(packageVersion(), '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => ctx.io.stdout.write(text),
      writeErr: (text) => ctx.io.stderr.write(text),
      // Commander's "error: …" becomes "error USAGE: …", the form every other error takes.
      outputError: (text, write) => write(text.replace(/^error: /, 'error USAGE: ')),
    })
    .showSuggestionAfterError()
    .addOption(
      new Option('-d, --database-url <url>', `store URL: sqlite:path.db, postgres://…, mysql://… (default ${DEFAULT_DATABASE_URL})`).argParser(nonEmpty),
    )
    .addOption(new Option('--schema <name>', 'PostgreSQL schema (default tasklease)').argParser(nonEmpty))
    .addOption(new Option('--pool-size <n>', 'connections in the pool (PostgreSQL, MySQL)').argParser(integer(1, 1000)))
    .addOption(
      new Option('--pooler <mode>', 'PostgreSQL behind PgBouncer in transaction mode: transaction (see docs/production.md)').choices([
        'session',
        'transaction',
      ]),
    )
    .addOption(new Option('-c, --config <path>', 'JSON config file (default ./tasklease.config.json when present)'))
    .addOption(new Option('--json', 'print one JSON document on stdout (for scripts)'))
    .addHelpText('after', helpFooter());
  for (const command of COMMANDS) command.register(program, ctx);
  return program;
}

function helpFooter(): string {
  const env = configFields()
    .map(({ key, env }) => `  ${env.padEnd(32)} ${key}`)
    .join('\n');
  return `
Configuration: flags > environment > config file > defaults.
${env}
  TASKLEASE_CONFIG                 config file path

Exit codes: 0 ok, 1 operational failure, 2 usage or bad input, 3 not found.
Errors print as "error CODE: message" on stderr.`;
}

/** The package's version, from the package.json above this file (src/cli in development, dist/src/cli when built). */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++, dir = dirname(dir)) {
    const path = join(dir, 'package.json');
    if (!existsSync(path)) continue;
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'tasklease') return pkg.version ?? '0.0.0';
  }
  return '0.0.0';
}
