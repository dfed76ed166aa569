/** `tasklease list`: newest first, filtered, one page at a time (the cursor of the next page is printed). */
import { action, type CliCommand } from '../command.js';
import { integer, nonEmpty } from '../parse.js';
import { TASK_COLUMNS } from '../render.js';
import type { TaskStatus } from '../../core/status.js';

interface ListFlags {
  type?: string;
  status?: string[];
  owner?: string;
  idempotencyKey?: string;
  limit: number;
  cursor?: string;
}

export const listCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('list')
      .description('list tasks, newest first')
      .option('-t, --type <type>', 'only this task type', nonEmpty)
      .option('-s, --status <status...>', 'only these statuses (QUEUED RUNNING RETRY_WAIT PAUSED CANCEL_REQUESTED CANCELLED SUCCESS PARTIAL_SUCCESS FAILED)')
      .option('--owner <owner>', 'only tasks of this owner', nonEmpty)
      .option('--idempotency-key <key>', 'only tasks with exactly this idempotency key', nonEmpty)
      .option('-n, --limit <n>', 'page size, 1–1000', integer(1, 1000), 50)
      .option('--cursor <cursor>', 'the next-page cursor a previous list printed', nonEmpty)
      .action(
        action(ctx, async (flags: ListFlags) => {
          const client = await ctx.client();
          const statuses = flags.status?.flatMap((s) => s.split(',')).map((s) => s.trim().toUpperCase()) as TaskStatus[] | undefined;
          const page = await client.list({
            limit: flags.limit,
            ...(flags.type ? { taskType: flags.type } : {}),
            ...(statuses ? { status: statuses } : {}),
            ...(flags.owner ? { owner: flags.owner } : {}),
            ...(flags.idempotencyKey ? { idempotencyKey: flags.idempotencyKey } : {}),
            ...(flags.cursor ? { cursor: flags.cursor } : {}),
          });
          ctx.output.result(page, () => {
            const table = ctx.output.table(page.tasks, TASK_COLUMNS, 'no tasks match');
            return page.nextCursor ? `${table}\n\nmore: tasklease list --cursor ${page.nextCursor}` : table;
          });
        }),
      );
  },
};
