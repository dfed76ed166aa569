/**
 * `tasklease cancel <id...>`: ends waiting tasks at once and asks the workers
 * of running ones to stop. Exit 3 if any id was not found, 1 if any other
 * could not be cancelled (already finished).
 */
import { action, type CliCommand } from '../command.js';
import { ExitCode } from '../exit-codes.js';

export const cancelCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('cancel')
      .description('cancel tasks (waiting ones at once; running ones are asked to stop)')
      .argument('<ids...>', 'task ids (at most 1000)')
      .action(
        action(ctx, async (ids: string[]) => {
          const client = await ctx.client();
          if (ids.length === 1) {
            const outcome = await client.requestCancellation(ids[0]!);
            ctx.output.result({ id: ids[0], outcome }, () =>
              outcome === 'CANCELLED' ? `task ${ids[0]} cancelled` : `task ${ids[0]} is running: its worker was asked to stop (CANCEL_REQUESTED)`,
            );
            return;
          }
          const result = await client.cancelMany(ids);
          if (result.notCancelled.length > 0) {
            ctx.exitCode = result.notCancelled.some((r) => r.reason === 'NOT_FOUND') ? ExitCode.NOT_FOUND : ExitCode.FAILURE;
          }
          ctx.output.result(result, () =>
            [
              `cancelled: ${result.cancelled}, asked to stop: ${result.cancelRequested}, not cancelled: ${result.notCancelled.length}`,
              ...result.notCancelled.map((r) => `  ${r.id}: ${r.reason === 'NOT_FOUND' ? 'not found' : `already ${r.reason}`}`),
            ].join('\n'),
          );
        }),
      );
  },
};
