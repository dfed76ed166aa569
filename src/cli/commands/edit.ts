/**
 * `tasklease edit <id> [--payload JSON] [--priority N] [--at ISO] [--deadline ISO|none] [--max-attempts N]`:
 * change a waiting task (client.edit). With --tasks the payload is checked against the type's schema and
 * stored through the modules' middleware (an encrypted type stays encrypted; without it, such a payload
 * is refused, not written in clear).
 */
import { InvalidArgumentError } from 'commander';
import type { TaskChanges } from '../../client/edit.js';
import { action, type CliCommand } from '../command.js';
import { UsageError } from '../exit-codes.js';
import { integer, isoTime } from '../parse.js';
import { moduleClient } from '../submit-options.js';
import { parsePayload } from './submit.js';

interface EditFlags {
  payload?: string;
  priority?: number;
  at?: Date;
  deadline?: Date | 'none';
  maxAttempts?: number;
  expectUpdatedAt?: Date;
  tasks?: string[];
}

/** An ISO 8601 time, or `none`: no deadline (not null: commander reads a null answer as a flag given without value). */
function deadline(value: string): Date | 'none' {
  if (value.trim() === 'none') return 'none';
  try {
    return isoTime(value);
  } catch {
    throw new InvalidArgumentError('must be an ISO 8601 time such as 2025-06-01T12:00:00Z, or none');
  }
}

export const editCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('edit')
      .description('change a QUEUED, RETRY_WAIT, PAUSED or BLOCKED task: payload, priority, start time, deadline, max attempts (its status stays)')
      .argument('<id>', 'task id')
      .option('--payload <json>', 'the new payload as JSON')
      .option('--priority <n>', 'higher runs first, -1000–1000', integer(-1000, 1000))
      .option('--at <time>', 'start no earlier than this ISO 8601 time', isoTime)
      .option('--deadline <time>', 'never start after, and time out at, this ISO 8601 time; none: no deadline', deadline)
      .option('--max-attempts <n>', 'attempts before the task fails for good, 1–100', integer(1, 100))
      .option('--expect-updated-at <time>', 'refuse (TASK_CHANGED) if the task changed after this time (its updatedAt as you read it)', isoTime)
      .option('--tasks <modules...>', "task modules: their schemas check the payload, their middleware stores it (an encrypted type's key)")
      .action(
        action(ctx, async (id: string, flags: EditFlags) => {
          const changes: TaskChanges = {
            ...(flags.payload !== undefined ? { payload: parsePayload(flags.payload) } : {}),
            ...(flags.priority !== undefined ? { priority: flags.priority } : {}),
            ...(flags.at !== undefined ? { availableAt: flags.at } : {}),
            ...(flags.deadline !== undefined ? { deadlineAt: flags.deadline === 'none' ? null : flags.deadline } : {}),
            ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
          };
          if (Object.keys(changes).length === 0) throw new UsageError('edit needs one of --payload, --priority, --at, --deadline, --max-attempts', 'payload');
          const client = await moduleClient(ctx, flags.tasks, []);
          const task = await client.edit(id, changes, flags.expectUpdatedAt ? { expect: { updatedAt: flags.expectUpdatedAt } } : {});
          const changed = Object.keys(changes);
          ctx.output.result(
            { id, status: task.status, changed, updatedAt: task.updatedAt },
            () => `task ${id} edited (${changed.join(', ')}), still ${ctx.output.status(task.status)}`,
          );
        }),
      );
  },
};
