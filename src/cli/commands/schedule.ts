/**
 * `tasklease schedule list|get|set|enable|disable|delete`: periodic tasks
 * (client.schedules). Workers pick a change up at their next pass (at most
 * scheduleRefreshMs later); each tick is submitted once across all of them.
 */
import type { Command } from 'commander';
import type { ScheduleInput, ScheduleView } from '../../client/schedules.js';
import { MAX_CATCH_UP } from '../../core/schedule.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import type { Column } from '../output.js';
import { boolean, integer } from '../parse.js';
import { parsePayload } from './submit.js';

const SCHEDULE_COLUMNS: readonly Column<ScheduleView>[] = [
  { header: 'SCHEDULE', value: (s) => s.key },
  { header: 'TYPE', value: (s) => s.taskType },
  { header: 'CRON', value: (s) => s.cron },
  { header: 'TIME ZONE', value: (s) => s.timeZone },
  { header: 'ENABLED', value: (s) => s.enabled },
  { header: 'CATCH UP', value: (s) => s.catchUp },
  { header: 'LAST TICK', value: (s) => s.lastTickAt },
  { header: 'NEXT RUNS', value: (s) => (s.nextRuns.length === 0 ? '-' : s.nextRuns.map((run) => run.toISOString()).join(' ')) },
];

export const scheduleCommand: CliCommand = {
  register(program, ctx) {
    const schedule = program.command('schedule').description('periodic tasks: cron schedules in a time zone, each tick submitted once');
    schedule
      .command('list')
      .description('every schedule with its next runs')
      .option('--next <n>', 'next runs to show per schedule, 0–20', integer(0, 20), 3)
      .action(
        action(ctx, async (flags: { next: number }) => {
          const schedules = await (await ctx.client()).schedules.list({ nextRuns: flags.next });
          ctx.output.result({ schedules }, () => ctx.output.table(schedules, SCHEDULE_COLUMNS, 'no schedules'));
        }),
      );
    schedule
      .command('get')
      .description('one schedule with its next runs')
      .argument('<key>', 'schedule key')
      .option('--next <n>', 'next runs to show, 0–20', integer(0, 20), 5)
      .action(
        action(ctx, async (key: string, flags: { next: number }) => {
          const found = await (await ctx.client()).schedules.get(key, { nextRuns: flags.next });
          ctx.output.result({ schedule: found }, () => (found ? ctx.output.table([found], SCHEDULE_COLUMNS) : `no schedule ${key}`));
        }),
      );
    registerSet(schedule, ctx);
    for (const enabled of [true, false]) {
      schedule
        .command(enabled ? 'enable' : 'disable')
        .description(enabled ? 'enable a schedule: it runs from its next tick after now (ticks while disabled are not caught up)' : 'disable a schedule')
        .argument('<key>', 'schedule key')
        .action(
          action(ctx, async (key: string) => {
            const saved = await (await ctx.client()).schedules.setEnabled(key, enabled);
            ctx.output.result({ schedule: saved }, () => ctx.output.table([saved], SCHEDULE_COLUMNS));
          }),
        );
    }
    schedule
      .command('delete')
      .description('delete a schedule (the tasks it submitted stay)')
      .argument('<key>', 'schedule key')
      .action(
        action(ctx, async (key: string) => {
          await (await ctx.client()).schedules.delete(key);
          ctx.output.result({ key, deleted: true }, () => `schedule ${key} deleted`);
        }),
      );
  },
};

interface SetFlags {
  cron: string;
  timeZone?: string;
  payload?: string;
  priority?: number;
  maxAttempts?: number;
  owner?: string;
  catchUp?: number;
  enabled?: boolean;
}

function registerSet(schedule: Command, ctx: CommandContext): void {
  schedule
    .command('set')
    .description('create or replace a schedule')
    .argument('<key>', 'schedule key (A-Z a-z 0-9 . _ : -)')
    .argument('<type>', 'task type it submits')
    .requiredOption('--cron <expression>', "5 fields, or 6 with seconds first, e.g. '0 3 * * *'")
    .option('--time-zone <zone>', 'IANA time zone the expression is read in (default UTC)')
    .option('--payload <json>', 'payload of every task (default null)')
    .option('--priority <n>', '-1000–1000 (default 0)', integer(-1000, 1000))
    .option('--max-attempts <n>', '1–100 (default 3)', integer(1, 100))
    .option('--owner <owner>', 'owner of the tasks it submits')
    .option('--catch-up <n>', `missed ticks run besides the newest after a downtime, 0–${MAX_CATCH_UP} (default 0)`, integer(0, MAX_CATCH_UP))
    .option('--enabled <bool>', 'left out: a new schedule is enabled, an existing one keeps its state', boolean)
    .action(
      action(ctx, async (key: string, taskType: string, flags: SetFlags) => {
        const { payload, ...rest } = flags;
        const input: ScheduleInput = { key, taskType, ...rest, ...(payload !== undefined ? { payload: parsePayload(payload) } : {}) };
        const saved = await (await ctx.client()).schedules.save(input);
        ctx.output.result({ schedule: saved }, () => ctx.output.table([saved], SCHEDULE_COLUMNS));
      }),
    );
}
