/** `tasklease actions <id>`: what operators did to a task (pause, resume, cancel, retry, reschedule, replay, archive), by whom. */
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import { integer } from '../parse.js';
import type { TaskActionRecord } from '../../store/types.js';

const ACTION_COLUMNS: readonly Column<TaskActionRecord>[] = [
  { header: 'AT', value: (a) => a.at },
  { header: 'ACTION', value: (a) => a.action },
  { header: 'FROM', value: (a) => a.fromStatus ?? '' },
  { header: 'TO', value: (a) => a.toStatus ?? '' },
  { header: 'BY', value: (a) => (a.actorName && a.actorName !== a.actor ? `${a.actorName} (${a.actor})` : a.actor) },
  { header: 'DETAIL', value: (a) => a.detail ?? '' },
];

export const actionsCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('actions')
      .description("list what operators did to a task and who did it, oldest first (the workers' part is in diagnose's attempts)")
      .argument('<id>', 'task id')
      .option('-n, --limit <n>', 'the newest n actions, 1–1000', integer(1, 1000), 100)
      .action(
        action(ctx, async (id: string, flags: { limit: number }) => {
          const actions = (await (await ctx.client()).actions(id, { limit: flags.limit })).reverse();
          ctx.output.result({ actions }, () => ctx.output.table(actions, ACTION_COLUMNS, 'no operator action on this task'));
        }),
      );
  },
};
