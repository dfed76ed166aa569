/**
 * run(argv, io): the whole command line as a function — tests call it
 * in-process; main.ts calls it with the real process. Resolves with the exit code.
 */
import { CommanderError } from 'commander';
import { CommandContext } from './context.js';
import { ExitCode, exitCodeOf } from './exit-codes.js';
import { processIo, type CliIo } from './io.js';
import { buildProgram } from './program.js';

export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const ctx = new CommandContext(io);
  try {
    await buildProgram(ctx).parseAsync([...argv], { from: 'user' });
    return ctx.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has printed its message (help, version, or a usage error).
      if (error.exitCode === 0) return ExitCode.OK;
      if (argv.includes('--json')) {
        const message = error.code === 'commander.help' ? 'a command is required (see tasklease --help)' : error.message.replace(/^error: /, '');
        io.stdout.write(`${JSON.stringify({ error: { code: 'USAGE', message } }, null, 2)}\n`);
      }
      return ExitCode.USAGE;
    }
    ctx.reportError(error, argv.includes('--json'));
    return exitCodeOf(error);
  } finally {
    await ctx.close().catch((error: unknown) => ctx.reportError(error, false));
  }
}
