/** `tasklease workers`: the workers seen recently, with the types they run (what diagnose calls NO_WORKER). */
import { action, type CliCommand } from '../command.js';
import { duration } from '../parse.js';
import type { WorkerRecord } from '../../store/types.js';
import type { Column } from '../output.js';

export const WORKER_COLUMNS: readonly Column<WorkerRecord>[] = [
  { header: 'WORKER', value: (w) => w.workerId },
  { header: 'HOST', value: (w) => w.host },
  { header: 'PID', value: (w) => w.pid },
  { header: 'CONCURRENCY', value: (w) => w.concurrency },
  { header: 'TYPES', value: (w) => w.taskTypes.join(',') },
  { header: 'STARTED', value: (w) => w.startedAt },
  { header: 'LAST SEEN', value: (w) => w.lastSeenAt },
];

export const workersCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('workers')
      .description('list the workers seen recently (each refreshes its row at every heartbeat)')
      .option('--seen-within <duration>', 'count a worker as alive if seen this recently', duration, 60_000)
      .action(
        action(ctx, async (flags: { seenWithin: number }) => {
          const workers = await (await ctx.client()).workers({ seenWithinMs: flags.seenWithin });
          ctx.output.result({ workers }, () => ctx.output.table(workers, WORKER_COLUMNS, 'no worker seen recently'));
        }),
      );
  },
};
