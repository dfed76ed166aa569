/**
 * The shape of one command module (src/cli/commands/<name>.ts): it adds itself
 * to the program. commands/index.ts lists them; adding a command is one file
 * and one line there.
 */
import type { Command } from 'commander';
import type { CommandContext } from './context.js';

export interface CliCommand {
  register(program: Command, ctx: CommandContext): void;
}

/**
 * Wraps an action so the context knows the command's global flags (--json,
 * --database-url…) before the action runs. Commander passes
 * (...arguments, options, command).
 */
export function action<Args extends unknown[]>(ctx: CommandContext, run: (...args: Args) => Promise<void> | void) {
  return async (...args: unknown[]): Promise<void> => {
    ctx.begin(args[args.length - 1] as Command);
    await run(...(args as Args));
  };
}
