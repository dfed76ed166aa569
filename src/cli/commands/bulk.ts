/**
 * `tasklease bulk <action> [filter flags]`: retry, cancel, pause, resume,
 * reschedule, replay or delete every task a filter matches (client/bulk.ts).
 * Without --yes it is a dry run: the count and a few of the tasks, nothing
 * changed. With --yes it starts the operation and runs it here, batch after
 * batch, with a progress bar; Ctrl-C hands it back after the current batch
 * (`bulk continue` or a server goes on with it), and so does a crash, once the
 * lease expires. --detach only starts it: a running server carries it out.
 * `bulk list|show|watch|stop|continue` follow and steer operations.
 */
import type { Command } from 'commander';
import { BULK_ACTION_NAMES, type BulkAction, type BulkOperation, type BulkRequest } from '../../client/bulk.js';
import { NotFoundError } from '../../core/errors.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { addFilterOptions, filterOf, type FilterFlags } from '../filter-flags.js';
import type { Column } from '../output.js';
import { duration, integer, isoTime } from '../parse.js';
import { startProgress } from '../progress.js';
import { TASK_COLUMNS } from '../render.js';

interface BulkFlags extends FilterFlags {
  yes?: boolean;
  detach?: boolean;
  batchSize: number;
  pause?: number;
  availableAt?: Date;
  delay?: number;
}

const OPERATION_COLUMNS: readonly Column<BulkOperation>[] = [
  { header: 'ID', value: (op) => op.id },
  { header: 'ACTION', value: (op) => op.action },
  { header: 'STATUS', value: (op) => op.status, colourByValue: true },
  { header: 'DONE', value: (op) => `${op.processed}/${op.matched}` },
  { header: 'CHANGED', value: (op) => op.changed },
  { header: 'BY', value: (op) => op.actor.name ?? op.actor.id },
  { header: 'STARTED', value: (op) => op.createdAt },
];

const PAST: Record<BulkAction, string> = {
  retry: 'retried',
  cancel: 'cancelled',
  pause: 'paused',
  resume: 'resumed',
  reschedule: 'rescheduled',
  replay: 'replayed',
  delete: 'deleted',
};

function summary(op: BulkOperation): string {
  const end = op.status === 'RUNNING' ? 'still running' : op.status.toLowerCase();
  return `bulk ${op.action} ${op.id}: ${end}; ${PAST[op.action]} ${op.changed} of ${op.processed} looked at (${op.matched} matched when it started)${
    op.error ? `; error: ${op.error}` : ''
  }`;
}

/** Runs (or resumes) an operation here with a progress bar; Ctrl-C hands it back after the current batch. */
async function runHere(ctx: CommandContext, id: string, matched: number): Promise<BulkOperation> {
  const client = await ctx.client();
  const stop = new AbortController();
  void ctx.io.waitForStopSignal().then(() => {
    ctx.output.note('stopping after the current batch; the operation is handed back (tasklease bulk continue, or a server, goes on with it)');
    stop.abort();
  });
  const progress = startProgress(ctx.io, {
    total: matched,
    format: 'bulk | {bar} | {value}/{total} | {changed} changed | {eta_formatted}',
    fields: { changed: 0 },
  });
  try {
    return await client.bulk.run(id, { signal: stop.signal, onProgress: (op) => progress.update(op.processed, { changed: op.changed }) });
  } finally {
    progress.stop();
  }
}

function notFound(id: string): never {
  throw new NotFoundError('bulk operation', id);
}

function finish(ctx: CommandContext, op: BulkOperation): void {
  if (op.status === 'FAILED') ctx.exitCode = ExitCode.FAILURE;
  ctx.output.result(op, () => summary(op));
}

function registerAction(bulk: Command, ctx: CommandContext, name: BulkAction): void {
  const command = addFilterOptions(bulk.command(name).description(`${name} every task the filter matches (a dry run unless --yes)`))
    .option('-y, --yes', 'start it (without: count what it would touch and show a few, change nothing)')
    .option('--detach', 'only start it: a running server (or `tasklease bulk continue`) carries it out')
    .option('--batch-size <n>', 'tasks per batch, 1–1000', integer(1, 1000), 500)
    .option('--pause <duration>', 'wait this long between batches, to spare a busy database (at most 60s)', duration);
  if (name === 'reschedule') {
    command
      .option('--available-at <time>', 'the new start time (ISO 8601)', isoTime)
      .option('--delay <duration>', 'or this long from each batch, e.g. 10m', duration);
  }
  command.action(
    action(ctx, async (flags: BulkFlags) => {
      const client = await ctx.client();
      const request: BulkRequest = {
        action: name,
        filter: filterOf(flags),
        ...(flags.availableAt ? { availableAt: flags.availableAt } : {}),
        ...(flags.delay !== undefined ? { delayMs: flags.delay } : {}),
      };
      if (!flags.yes) {
        const dry = await client.bulk.dryRun(request);
        ctx.output.result(
          dry,
          () =>
            `${dry.matched} task(s) in ${dry.statuses.join(', ')} would be ${PAST[name]}${dry.sample.length > 0 ? `; the newest:\n${ctx.output.table(dry.sample, TASK_COLUMNS)}` : ''}\n\nnothing changed: run again with --yes to start it`,
        );
        return;
      }
      const started = await client.bulk.start(request, {
        batchSize: flags.batchSize,
        ...(flags.pause !== undefined ? { pauseMs: flags.pause } : {}),
        run: false,
      });
      ctx.output.note(`bulk ${name} ${started.id}: ${started.matched} task(s) matched`);
      if (flags.detach) {
        ctx.output.result(started, () => `started ${started.id}; follow it: tasklease bulk watch ${started.id}`);
        return;
      }
      finish(ctx, await runHere(ctx, started.id, started.matched));
    }),
  );
}

export const bulkCommand: CliCommand = {
  register(program, ctx) {
    const bulk = program.command('bulk').description('act on every task a filter matches: a dry run first, then batches with progress, resumable');
    for (const name of BULK_ACTION_NAMES) registerAction(bulk, ctx, name);
    bulk
      .command('list')
      .description('bulk operations, newest first: who started each, when, what it did')
      .option('-n, --limit <n>', '1–1000', integer(1, 1000), 50)
      .action(
        action(ctx, async (flags: { limit: number }) => {
          const operations = await (await ctx.client()).bulk.list({ limit: flags.limit });
          ctx.output.result(operations, () => ctx.output.table(operations, OPERATION_COLUMNS, 'no bulk operations'));
        }),
      );
    bulk
      .command('show')
      .description('one bulk operation: its filter, counts and state')
      .argument('<id>')
      .action(
        action(ctx, async (id: string) => {
          const op = await (await ctx.client()).bulk.get(id);
          if (!op) {
            ctx.exitCode = ExitCode.NOT_FOUND;
            ctx.output.result(null, () => `no bulk operation ${id}`);
            return;
          }
          ctx.output.result(
            op,
            () =>
              `${summary(op)}\nfilter: ${JSON.stringify(op.filter)} (statuses ${op.statuses.join(', ')})\nby ${op.actor.name ?? op.actor.id} at ${op.createdAt.toISOString()}`,
          );
        }),
      );
    bulk
      .command('watch')
      .description('follow a bulk operation (run elsewhere) with a progress bar until it ends')
      .argument('<id>')
      .action(
        action(ctx, async (id: string) => {
          const client = await ctx.client();
          let op = (await client.bulk.get(id)) ?? notFound(id);
          const progress = startProgress(ctx.io, { total: op.matched, format: 'bulk | {bar} | {value}/{total} | {changed} changed', fields: { changed: 0 } });
          try {
            while (op.status === 'RUNNING') {
              progress.update(op.processed, { changed: op.changed });
              await new Promise((resolve) => setTimeout(resolve, 500));
              op = (await client.bulk.get(id))!;
            }
            progress.update(op.processed, { changed: op.changed });
          } finally {
            progress.stop();
          }
          finish(ctx, op);
        }),
      );
    bulk
      .command('stop')
      .description('cancel a running bulk operation after its current batch (what it changed stays changed)')
      .argument('<id>')
      .action(action(ctx, async (id: string) => finish(ctx, await (await ctx.client()).bulk.cancel(id))));
    bulk
      .command('continue')
      .description('go on with an operation no live process holds (its process crashed or stopped), here; without an id: every such one')
      .argument('[id]')
      .action(
        action(ctx, async (id?: string) => {
          const client = await ctx.client();
          if (id) {
            const op = (await client.bulk.get(id)) ?? notFound(id);
            finish(ctx, await runHere(ctx, id, op.matched));
            return;
          }
          const resumed = await client.bulk.resumeAbandoned();
          ctx.output.result({ resumed }, () => (resumed.length === 0 ? 'no abandoned bulk operation' : `resumed and ran ${resumed.join(', ')}`));
        }),
      );
  },
};
