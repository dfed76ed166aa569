/** `tasklease get <id>`: one task, every column. */
import { NotFoundError } from '../../core/errors.js';
import { action, type CliCommand } from '../command.js';
import { taskBlock } from '../render.js';

export const getCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('get')
      .description('show one task')
      .argument('<id>', 'task id')
      .action(
        action(ctx, async (id: string) => {
          const task = await (await ctx.client()).get(id);
          if (!task) throw new NotFoundError('task', id);
          ctx.output.result(task, () => taskBlock(ctx.output, task));
        }),
      );
  },
};
