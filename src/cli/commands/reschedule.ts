/** `tasklease reschedule <id> --at ISO | --in 10m`: move a waiting task's start time. */
import { action, type CliCommand } from '../command.js';
import { UsageError } from '../exit-codes.js';
import { duration, isoTime } from '../parse.js';

export const rescheduleCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('reschedule')
      .description('move the start time of a QUEUED, RETRY_WAIT or PAUSED task (a paused one stays paused)')
      .argument('<id>', 'task id')
      .option('--at <time>', 'start no earlier than this ISO 8601 time', isoTime)
      .option('--in <duration>', 'start no earlier than this long from now (database clock): 90s, 10m, 2h', duration)
      .action(
        action(ctx, async (id: string, flags: { at?: Date; in?: number }) => {
          if ((flags.at === undefined) === (flags.in === undefined)) throw new UsageError('reschedule needs exactly one of --at or --in', 'at');
          const client = await ctx.client();
          await client.reschedule(id, flags.at ? { availableAt: flags.at } : { delayMs: flags.in! });
          const task = await client.get(id);
          ctx.output.result(
            { id, status: task?.status ?? null, availableAt: task?.availableAt ?? null },
            () => `task ${id} rescheduled: available at ${task?.availableAt.toISOString()} (${task?.status})`,
          );
        }),
      );
  },
};
