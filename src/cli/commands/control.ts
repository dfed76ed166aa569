/** `tasklease pause|resume|retry <id>`: one status change each, as the client defines it. */
import type { TaskLeaseClient } from '../../client/client.js';
import { action, type CliCommand } from '../command.js';

const ACTIONS: readonly { name: 'pause' | 'resume' | 'retry'; description: string; done: string }[] = [
  { name: 'pause', description: 'hold a waiting task (QUEUED or RETRY_WAIT) until resume', done: 'paused' },
  { name: 'resume', description: 'queue a PAUSED task again', done: 'resumed' },
  { name: 'retry', description: 'run a FAILED task again now, with a fresh attempt cycle', done: 'queued for a new attempt cycle' },
];

export const controlCommands: CliCommand = {
  register(program, ctx) {
    for (const { name, description, done } of ACTIONS) {
      program
        .command(name)
        .description(description)
        .argument('<id>', 'task id')
        .action(
          action(ctx, async (id: string) => {
            const client: TaskLeaseClient = await ctx.client();
            await client[name](id);
            const task = await client.get(id);
            ctx.output.result({ id, status: task?.status ?? null }, () => `task ${id} ${done} (now ${task ? ctx.output.status(task.status) : 'gone'})`);
          }),
        );
    }
  },
};
