/** `tasklease estimate <id>`: when a task will start — its position under each limit that binds it, and the estimate's reason. */
import type { LimitBind } from '../../client/estimate.js';
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import { duration } from '../parse.js';

const BIND_COLUMNS: readonly Column<LimitBind>[] = [
  { header: 'LIMIT', value: (b) => b.kind },
  { header: 'POSITION', value: (b) => `${b.aheadAtLeast ? '≥' : ''}${b.position}` },
  { header: 'OF LIMIT', value: (b) => (b.limit === null ? 'none' : `${b.running}/${b.limit} running`) },
  { header: 'PACE', value: (b) => (b.throughputPerSecond === null ? '-' : `${b.throughputPerSecond.toFixed(2)}/s`) },
  { header: 'WAIT', value: (b) => (b.waitMs === null ? 'unknown' : `${(b.waitMs / 1000).toFixed(1)} s`) },
  { header: 'REASON', value: (b) => b.reason },
];

export const estimateCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('estimate')
      .description('when a task will start: its position under every limit that binds it and an estimate from the recent pace, with the reason')
      .argument('<id>', 'task id')
      .option('--window <duration>', 'the pace is measured over this much recent time (default 1m)', duration)
      .action(
        action(ctx, async (id: string, flags: { window?: number }) => {
          const estimate = await (await ctx.client()).estimate(id, flags.window === undefined ? {} : { windowMs: flags.window });
          ctx.output.result({ estimate }, () =>
            [
              ctx.output.fields([
                ['task', estimate.taskId],
                ['status', estimate.status],
                ['state', estimate.state],
                ['starts at', estimate.startsAt ?? (estimate.state === 'STARTED' ? estimate.startedAt : 'unknown')],
                ['reason', estimate.reason],
              ]),
              ...(estimate.binds.length > 0 ? ['', ctx.output.table(estimate.binds, BIND_COLUMNS)] : []),
            ].join('\n'),
          );
        }),
      );
  },
};
