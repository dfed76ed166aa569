/**
 * `tasklease cleanup --retention-days N --batch-size N`: deletes terminal
 * tasks finished before the retention, in batches (safe while workers run),
 * showing progress; dead letters of deleted tasks are archived, not lost.
 */
import type { CleanupResult } from '../../client/cleanup.js';
import { action, type CliCommand } from '../command.js';
import { integer, positiveNumber } from '../parse.js';
import { startProgress } from '../progress.js';

export const cleanupCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('cleanup')
      .description('delete finished tasks older than the retention, with their attempts and failures, in batches')
      .requiredOption('--retention-days <n>', 'keep tasks finished within this many days (at least 1)', positiveNumber(100_000))
      .option('--batch-size <n>', 'rows per transaction, 1–10000', integer(1, 10_000), 500)
      .option('--max-batches <n>', 'stop after this many batches (a bounded run)', integer(1, 1_000_000_000))
      .action(
        action(ctx, async (flags: { retentionDays: number; batchSize: number; maxBatches?: number }) => {
          const client = await ctx.client();
          const started = Date.now();
          // The number of rows to delete is unknown up front: the bar shows a running count, not a percentage.
          const progress = startProgress(ctx.io, {
            total: 0,
            format: 'cleanup | {value} tasks deleted | {batches} batches | {duration_formatted}',
            fields: { batches: 0 },
          });
          let batches = 0;
          let total: CleanupResult;
          try {
            total = await client.cleanup({
              retentionDays: flags.retentionDays,
              batchSize: flags.batchSize,
              ...(flags.maxBatches ? { maxBatches: flags.maxBatches } : {}),
              onBatch: (sofar) => progress.update(sofar.tasks, { batches: ++batches }),
            });
          } finally {
            progress.stop();
          }
          const elapsedMs = Date.now() - started;
          ctx.output.result(
            { ...total, batches, elapsedMs },
            () =>
              `deleted ${total.tasks} tasks (${total.attempts} attempts, ${total.failures} failures; ${total.deadLettersArchived} dead letters archived)${
                total.tasksMoved === undefined
                  ? ''
                  : `, moved ${total.tasksMoved} to the history, dropped ${total.historyPartitionsDropped ?? 0} history partitions`
              }${
                total.historyHoursRolledUp || total.historyHourRowsRemoved
                  ? `; queue history: ${total.historyHoursRolledUp ?? 0} hours of minutes rolled up, ${total.historyHourRowsRemoved ?? 0} old hour rows removed`
                  : ''
              } in ${batches} batches, ${(elapsedMs / 1000).toFixed(2)} s`,
          );
        }),
      );
  },
};
