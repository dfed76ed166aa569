/**
 * `tasklease dlq list|replay|replay-batch|archive|clean`: the dead-letter queue.
 * Replays answer per id; exit 3 if any id was not found, 1 if any other
 * could not be replayed (already replayed, archived, task no longer FAILED).
 * `clean` deletes archived dead letters older than the retention, in batches.
 */
import type { Command } from 'commander';
import type { ReplayResult } from '../../store/types.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { integer, isoTime, nonEmpty, nonNegativeNumber } from '../parse.js';
import { startProgress } from '../progress.js';

interface ListFlags {
  type?: string;
  from?: Date;
  to?: Date;
  limit: number;
  cursor?: string;
}

export const dlqCommand: CliCommand = {
  register(program, ctx) {
    const dlq = program.command('dlq').description('the dead-letter queue: tasks that failed for good');
    dlq
      .command('list')
      .description('list dead letters, newest first')
      .option('-t, --type <type>', 'only this task type', nonEmpty)
      .option('--from <time>', 'moved at or after this ISO 8601 time', isoTime)
      .option('--to <time>', 'moved before this ISO 8601 time', isoTime)
      .option('-n, --limit <n>', 'page size, 1–1000', integer(1, 1000), 50)
      .option('--cursor <cursor>', 'the next-page cursor a previous list printed', nonEmpty)
      .action(action(ctx, (flags: ListFlags) => list(ctx, flags)));
    registerReplay(dlq, ctx);
    dlq
      .command('archive')
      .description('take dead letters that cannot be fixed out of the queue (kept on record)')
      .argument('<ids...>', 'dead-letter ids (at most 1000)')
      .action(
        action(ctx, async (ids: string[]) => {
          const archived = await (await ctx.client()).deadLetters.archive(ids);
          if (archived < ids.length) ctx.exitCode = ExitCode.NOT_FOUND;
          ctx.output.result(
            { archived, requested: ids.length },
            () => `archived ${archived} of ${ids.length}${archived < ids.length ? ' (the rest were not found or already archived)' : ''}`,
          );
        }),
      );
    registerClean(dlq, ctx);
  },
};

interface CleanFlags {
  retentionDays: number;
  batchSize: number;
  maxBatches?: number;
}

function registerClean(dlq: Command, ctx: CommandContext): void {
  dlq
    .command('clean')
    .description('delete archived dead letters archived longer ago than the retention, in batches (waiting ones are never deleted)')
    .requiredOption('--retention-days <n>', 'keep dead letters archived within this many days (0: delete every archived one)', nonNegativeNumber(100_000))
    .option('--batch-size <n>', 'rows per transaction, 1–10000', integer(1, 10_000), 500)
    .option('--max-batches <n>', 'stop after this many batches (a bounded run)', integer(1, 1_000_000_000))
    .action(
      action(ctx, async (flags: CleanFlags) => {
        const client = await ctx.client();
        const started = Date.now();
        const progress = startProgress(ctx.io, { total: 0, format: 'dlq clean | {value} dead letters deleted | {duration_formatted}' });
        let result;
        try {
          result = await client.deadLetters.clean({
            retentionDays: flags.retentionDays,
            batchSize: flags.batchSize,
            ...(flags.maxBatches ? { maxBatches: flags.maxBatches } : {}),
            onBatch: (deleted) => progress.update(deleted),
          });
        } finally {
          progress.stop();
        }
        const elapsedMs = Date.now() - started;
        const { deleted, batches } = result;
        ctx.output.result(
          { deleted, batches, elapsedMs },
          () => `deleted ${deleted} archived dead letters in ${batches} batches, ${(elapsedMs / 1000).toFixed(2)} s`,
        );
      }),
    );
}

async function list(ctx: CommandContext, flags: ListFlags): Promise<void> {
  const client = await ctx.client();
  const [deadLetters, waiting] = await Promise.all([
    client.deadLetters.list({
      limit: flags.limit,
      ...(flags.type ? { taskType: flags.type } : {}),
      ...(flags.from ? { from: flags.from } : {}),
      ...(flags.to ? { to: flags.to } : {}),
      ...(flags.cursor ? { cursor: flags.cursor } : {}),
    }),
    client.deadLetters.size(flags.type ? { taskType: flags.type } : {}),
  ]);
  const nextCursor = deadLetters.length === flags.limit ? deadLetters[deadLetters.length - 1]!.id : null;
  ctx.output.result({ deadLetters, nextCursor, waiting }, () =>
    [
      `${waiting} dead letters waiting (neither replayed nor archived)`,
      ctx.output.table(
        deadLetters,
        [
          { header: 'ID', value: (d) => d.id },
          { header: 'TASK', value: (d) => d.originalTaskId },
          { header: 'TYPE', value: (d) => d.taskType },
          { header: 'ERROR', value: (d) => d.errorCode },
          { header: 'ATTEMPTS', value: (d) => d.attemptCount },
          { header: 'MOVED', value: (d) => d.movedAt },
          { header: 'STATE', value: (d) => (d.replayedAt ? 'REPLAYED' : d.archivedAt ? 'ARCHIVED' : 'WAITING') },
        ],
        'no dead letters match',
      ),
      ...(nextCursor ? ['', `more: tasklease dlq list --cursor ${nextCursor}`] : []),
    ].join('\n'),
  );
}

function registerReplay(dlq: Command, ctx: CommandContext): void {
  const replay = async (ids: string[]): Promise<void> => {
    const { replayed, results } = await (await ctx.client()).deadLetters.replayBatch(ids);
    ctx.exitCode = exitCodeOfReplays(results);
    ctx.output.result({ replayed, results }, () =>
      [`replayed ${replayed} of ${ids.length}`, ...results.map((r) => `  ${r.id}: ${r.outcome}${r.taskId ? ` (task ${r.taskId})` : ''}`)].join('\n'),
    );
  };
  dlq
    .command('replay')
    .description('queue the original task of a dead letter again, with a fresh attempt cycle')
    .argument('<id>', 'dead-letter id')
    .action(action(ctx, (id: string) => replay([id])));
  dlq
    .command('replay-batch')
    .description('replay many dead letters in one transaction')
    .argument('<ids...>', 'dead-letter ids (at most 1000)')
    .action(action(ctx, (ids: string[]) => replay(ids)));
}

function exitCodeOfReplays(results: readonly ReplayResult[]): ExitCode {
  if (results.some((r) => r.outcome === 'NOT_FOUND')) return ExitCode.NOT_FOUND;
  return results.every((r) => r.outcome === 'REPLAYED') ? ExitCode.OK : ExitCode.FAILURE;
}
