/** `tasklease list`: newest first, filtered, one page at a time (the cursor of the next page is printed). */
import { action, type CliCommand } from '../command.js';
import { integer, nonEmpty } from '../parse.js';
import { TASK_COLUMNS } from '../render.js';
import { parseFilterText } from '../../core/search.js';
import type { TaskStatus } from '../../core/status.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

interface ListFlags {
  type?: string;
  status?: string[];
  owner?: string;
  idempotencyKey?: string;
  keyPrefix?: string;
  payload: string[];
  payloadPrefix: string[];
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
      .option('--key-prefix <prefix>', 'only tasks whose idempotency key starts with this text (case-sensitive)', nonEmpty)
      .option(
        '--payload <path=value>',
        'only tasks whose payload field equals the value, e.g. order.id=42 (repeatable; "42" quoted is the string)',
        collect,
        [],
      )
      .option('--payload-prefix <path=prefix>', 'only tasks whose string payload field starts with the text, e.g. customer.name=Ada (repeatable)', collect, [])
      .option('-n, --limit <n>', 'page size, 1–1000', integer(1, 1000), 50)
      .option('--cursor <cursor>', 'the next-page cursor a previous list printed', nonEmpty)
      .action(
        action(ctx, async (flags: ListFlags) => {
          const client = await ctx.client();
          const statuses = flags.status?.flatMap((s) => s.split(',')).map((s) => s.trim().toUpperCase()) as TaskStatus[] | undefined;
          const payload = [
            ...flags.payload.map((text) => parseFilterText(text, 'equals')),
            ...flags.payloadPrefix.map((text) => parseFilterText(text, 'prefix')),
          ];
          const page = await client.list({
            limit: flags.limit,
            ...(flags.type ? { taskType: flags.type } : {}),
            ...(statuses ? { status: statuses } : {}),
            ...(flags.owner ? { owner: flags.owner } : {}),
            ...(flags.idempotencyKey ? { idempotencyKey: flags.idempotencyKey } : {}),
            ...(flags.keyPrefix ? { idempotencyKeyPrefix: flags.keyPrefix } : {}),
            ...(payload.length > 0 ? { payload } : {}),
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
