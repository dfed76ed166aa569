/** `tasklease list`: newest first, filtered, one page at a time (the cursor of the next page is printed). */
import { action, type CliCommand } from '../command.js';
import { addFilterOptions, filterOf, type FilterFlags } from '../filter-flags.js';
import { integer, nonEmpty } from '../parse.js';
import { TASK_COLUMNS } from '../render.js';

interface ListFlags extends FilterFlags {
  limit: number;
  cursor?: string;
}

export const listCommand: CliCommand = {
  register(program, ctx) {
    addFilterOptions(program.command('list').description('list tasks, newest first'))
      .option('-n, --limit <n>', 'page size, 1–1000', integer(1, 1000), 50)
      .option('--cursor <cursor>', 'the next-page cursor a previous list printed', nonEmpty)
      .action(
        action(ctx, async (flags: ListFlags) => {
          const client = await ctx.client();
          const page = await client.list({ ...filterOf(flags), limit: flags.limit, ...(flags.cursor ? { cursor: flags.cursor } : {}) });
          ctx.output.result(page, () => {
            const table = ctx.output.table(page.tasks, TASK_COLUMNS, 'no tasks match');
            return page.nextCursor ? `${table}\n\nmore: tasklease list --cursor ${page.nextCursor}` : table;
          });
        }),
      );
  },
};
