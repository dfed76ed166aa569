/** `tasklease logs <id>`: the lines a task's handler logged (ctx.log), oldest first, with their attempt, level and fields. */
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import { integer } from '../parse.js';
import { DEFAULT_LOG_READ_LIMIT, MAX_LOG_READ_LIMIT, type TaskLogEntry } from '../../client/logs.js';

/** Fields are shown as JSON, cut to keep the table one line per log line. */
const FIELDS_WIDTH = 80;

const LOG_COLUMNS: readonly Column<TaskLogEntry>[] = [
  { header: 'TIME', value: (l) => l.loggedAt },
  { header: 'ATTEMPT', value: (l) => l.attempt },
  { header: 'LEVEL', value: (l) => l.level.toUpperCase() },
  { header: 'MESSAGE', value: (l) => l.message.replace(/\s+/g, ' ') },
  {
    header: 'FIELDS',
    value: (l) => {
      const json = l.fields === undefined ? '' : JSON.stringify(l.fields);
      return json.length > FIELDS_WIDTH ? `${json.slice(0, FIELDS_WIDTH - 1)}…` : json;
    },
  },
];

export const logsCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('logs')
      .description("print the lines a task's handler logged (ctx.log), oldest first: every attempt's, or one attempt's")
      .argument('<id>', 'task id')
      .option('--attempt <n>', "only this attempt's lines", integer(1, 1_000_000_000))
      .option('--after-seq <seq>', 'only lines after this seq (paging: the last seq printed by --json)', integer(0, 2_000_000_000))
      .option('--limit <n>', `most lines (default ${DEFAULT_LOG_READ_LIMIT})`, integer(1, MAX_LOG_READ_LIMIT))
      .action(
        action(ctx, async (id: string, flags: { attempt?: number; afterSeq?: number; limit?: number }) => {
          const logs = await (
            await ctx.client()
          ).logs(id, {
            ...(flags.attempt !== undefined ? { attempt: flags.attempt } : {}),
            ...(flags.afterSeq !== undefined ? { afterSeq: flags.afterSeq } : {}),
            ...(flags.limit !== undefined ? { limit: flags.limit } : {}),
          });
          ctx.output.result({ logs }, () => ctx.output.table(logs, LOG_COLUMNS, 'no log line'));
        }),
      );
  },
};
