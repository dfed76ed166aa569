/** `tasklease history [--type T] [--range 1h|24h|7d]`: the queue history (client.history), one row per minute or hour. */
import { InvalidArgumentError } from 'commander';
import { action, type CliCommand } from '../command.js';
import type { HistoryPoint } from '../../client/queue-history.js';
import type { Column } from '../output.js';

/** How far back, and the step (the dashboard's ranges). */
const RANGES: Record<string, { ms: number; step: 'minute' | 'hour' }> = {
  '1h': { ms: 3_600_000, step: 'minute' },
  '24h': { ms: 86_400_000, step: 'minute' },
  '7d': { ms: 7 * 86_400_000, step: 'hour' },
};

const ms = (value: number | null): string => (value === null ? '—' : `${Math.round(value)} ms`);

const COLUMNS: readonly Column<HistoryPoint>[] = [
  { header: 'AT', value: (p) => p.at.toISOString() },
  { header: 'SUBMITTED', value: (p) => p.submitted },
  { header: 'STARTED', value: (p) => p.started },
  { header: 'SUCCEEDED', value: (p) => p.succeeded },
  { header: 'FAILED', value: (p) => p.failed },
  { header: 'DEAD', value: (p) => p.deadLettered },
  { header: 'WAIT P50/P95', value: (p) => `${ms(p.waitP50Ms)} / ${ms(p.waitP95Ms)}` },
  { header: 'RUN P50/P95', value: (p) => `${ms(p.runP50Ms)} / ${ms(p.runP95Ms)}` },
];

function range(value: string): string {
  if (!(value in RANGES)) throw new InvalidArgumentError(`one of ${Object.keys(RANGES).join(', ')}`);
  return value;
}

export const historyCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('history')
      .description('queue history per minute (1h, 24h) or hour (7d): submitted, started, succeeded, failed, dead-lettered, wait and run quantiles')
      .option('--type <taskType>', 'one task type (default: all types summed)')
      .option('--range <range>', 'how far back: 1h, 24h or 7d', range, '1h')
      .option('--all', 'also the steps where nothing happened')
      .action(
        action(ctx, async (flags: { type?: string; range: string; all?: boolean }) => {
          const client = await ctx.client();
          const { ms: back, step } = RANGES[flags.range]!;
          const to = await client.store.now();
          const series = await client.history({ from: new Date(to.getTime() - back), to, step, ...(flags.type !== undefined ? { taskType: flags.type } : {}) });
          const shown = flags.all ? series.points : series.points.filter((p) => p.submitted + p.started + p.succeeded + p.failed + p.deadLettered > 0);
          ctx.output.result(series, () => ctx.output.table(shown, COLUMNS, 'no history in this range'));
        }),
      );
  },
};
