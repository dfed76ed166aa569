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
          const found = await (await ctx.client()).get(id);
          if (!found) throw new NotFoundError('task', id);
          const task = ctx.reveal(found);
          ctx.output.result(task, () => taskBlock(ctx.output, task));
        }),
      );
  },
};
