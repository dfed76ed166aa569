/**
 * `tasklease publish <event> [payload-json]`: one task in every task type
 * subscribed to the event (client.publish). Without --tasks the payload is
 * not checked against schemas (the CLI has no definitions); with --tasks it
 * is, as the application's own publish would.
 * `tasklease subscriptions list|add|remove`: which types an event fans out to.
 */
import type { InsertTaskResult } from '../../store/types.js';
import type { Subscription } from '../../client/events.js';
import { NotFoundError } from '../../core/errors.js';
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import { duration, integer, isoTime, nonEmpty } from '../parse.js';
import { moduleClient, submitOptions } from '../submit-options.js';
import { parsePayload } from './submit.js';

const RESULT_COLUMNS: readonly Column<InsertTaskResult>[] = [
  { header: 'TASK', value: (r) => r.task.id },
  { header: 'TYPE', value: (r) => r.task.taskType },
  { header: 'STATUS', value: (r) => r.task.status },
  { header: 'CREATED', value: (r) => r.created },
];

const SUBSCRIPTION_COLUMNS: readonly Column<Subscription>[] = [
  { header: 'EVENT', value: (s) => s.event },
  { header: 'TYPE', value: (s) => s.taskType },
  { header: 'PRIORITY', value: (s) => s.priority ?? '-' },
  { header: 'MAX ATTEMPTS', value: (s) => s.maxAttempts ?? '-' },
  { header: 'UPDATED', value: (s) => s.updatedAt },
];

interface PublishFlags {
  owner?: string;
  idempotencyKey?: string;
  traceId?: string;
  delay?: number;
  at?: Date;
  deadline?: Date;
  tasks?: string[];
}

export const publishCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('publish')
      .description('publish an event: one task in every task type subscribed to it')
      .argument('<event>', 'event name (A-Z a-z 0-9 . _ / -)')
      .argument('[payload-json]', 'payload as JSON (default {})')
      .option('--owner <owner>', 'owner of the tasks (default TASKLEASE_OWNER)', nonEmpty)
      .option('--idempotency-key <key>', 'a repeat returns the tasks the first publish created', nonEmpty)
      .option('--trace-id <id>', 'correlates logs and failures', nonEmpty)
      .option('--delay <duration>', 'start no earlier than this long from now: 90s, 10m', duration)
      .option('--at <time>', 'start no earlier than this ISO 8601 time', isoTime)
      .option('--deadline <time>', 'never start after, and time out at, this ISO 8601 time', isoTime)
      .option('--tasks <modules...>', 'task modules whose schemas check the payload')
      .action(
        action(ctx, async (event: string, payloadJson: string | undefined, flags: PublishFlags) => {
          const payload = parsePayload(payloadJson ?? '{}');
          // submit's flags of the same names, read the same way (TASKLEASE_OWNER, --delay or --at); publish takes no others.
          const options = submitOptions(ctx, { ...flags, batchSize: 0 });
          const { results } = await (await moduleClient(ctx, flags.tasks, [])).publish(event, payload, options);
          const tasks = results.map((r) => ({ id: r.task.id, taskType: r.task.taskType, status: r.task.status, created: r.created }));
          ctx.output.result({ event, tasks }, () =>
            results.length === 0 ? `no task type subscribes to ${event}: nothing created` : ctx.output.table(results, RESULT_COLUMNS),
          );
        }),
      );
  },
};

export const subscriptionsCommand: CliCommand = {
  register(program, ctx) {
    const subscriptions = program.command('subscriptions').description('event subscriptions: which task types a publish of an event creates a task in');
    subscriptions
      .command('list')
      .description('subscriptions by event, then task type')
      .option('--event <event>', 'only this event', nonEmpty)
      .option('--type <type>', 'only this task type', nonEmpty)
      .action(
        action(ctx, async (flags: { event?: string; type?: string }) => {
          const found = await (
            await ctx.client()
          ).listSubscriptions({ ...(flags.event ? { event: flags.event } : {}), ...(flags.type ? { taskType: flags.type } : {}) });
          ctx.output.result({ subscriptions: found }, () => ctx.output.table(found, SUBSCRIPTION_COLUMNS, 'no subscriptions'));
        }),
      );
    subscriptions
      .command('add')
      .description('subscribe a task type to an event (again: change its priority or max attempts)')
      .argument('<event>', 'event name')
      .argument('<type>', 'task type')
      .option('--priority <n>', "-1000–1000 (default: the type's definition's, else 0)", integer(-1000, 1000))
      .option('--max-attempts <n>', '1–100 (default: as a submit)', integer(1, 100))
      .action(
        action(ctx, async (event: string, taskType: string, flags: { priority?: number; maxAttempts?: number }) => {
          const saved = await (await ctx.client()).subscribe({ event, taskType, priority: flags.priority ?? null, maxAttempts: flags.maxAttempts ?? null });
          ctx.output.result({ subscription: saved }, () => ctx.output.table([saved], SUBSCRIPTION_COLUMNS));
        }),
      );
    subscriptions
      .command('remove')
      .description('unsubscribe a task type from an event (the tasks publishes created stay)')
      .argument('<event>', 'event name')
      .argument('<type>', 'task type')
      .action(
        action(ctx, async (event: string, taskType: string) => {
          if (!(await (await ctx.client()).unsubscribe({ event, taskType }))) throw new NotFoundError('subscription', `${event} → ${taskType}`);
          ctx.output.result({ event, taskType, removed: true }, () => `${taskType} no longer subscribes to ${event}`);
        }),
      );
  },
};
