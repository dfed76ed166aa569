/** `tasklease wait <id> [--timeout 10m]`: blocks until the task has finished, then shows it. */
import { action, type CliCommand } from '../command.js';
import { duration } from '../parse.js';
import { taskBlock } from '../render.js';

export const waitCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('wait')
      .description('wait until a task has finished (any process may run it), then show it')
      .argument('<id>', 'task id')
      .option('--timeout <duration>', 'give up after this long (exit 1, error WAIT_TIMEOUT): 30s, 10m', duration)
      .action(
        action(ctx, async (id: string, flags: { timeout?: number }) => {
          const task = ctx.reveal(await (await ctx.client()).waitFor(id, flags.timeout === undefined ? {} : { timeoutMs: flags.timeout }));
          ctx.output.result(task, () => taskBlock(ctx.output, task));
        }),
      );
  },
};
