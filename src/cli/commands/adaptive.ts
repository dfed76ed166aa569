/**
 * `tasklease adaptive set|show|off|override|resume|history <type>`: adaptive
 * limits (client/adaptive.ts). `set` turns adaptation on with its bounds;
 * `show` prints the limit in force ("adaptive: 7 (2..20)"); `history` the
 * trail of every change with its cause and actor. An operator's `override`
 * (or `policy set <type> --max-concurrency`) suspends adaptation until
 * `resume`, or for --for.
 */
import type { Command } from 'commander';
import type { AdaptiveConfigInput, AdaptiveState, LimitChange } from '../../client/adaptive.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import type { Column } from '../output.js';
import { duration, integer, positiveNumber } from '../parse.js';

/** "adaptive: 7 (2..20)", with the state that holds it when it is not adapting. */
export function adaptiveSummary(s: AdaptiveState): string {
  const base = `adaptive: ${s.currentLimit} (${s.minLimit}..${s.maxLimit})`;
  if (!s.enabled) return `${base}, off`;
  if (s.overridden) return `${base}, overridden ${s.overrideUntil ? `until ${s.overrideUntil.toISOString()}` : 'until resumed'}`;
  return base;
}

const STATE_COLUMNS: readonly Column<AdaptiveState>[] = [
  { header: 'TYPE', value: (s) => s.taskType },
  { header: 'LIMIT', value: adaptiveSummary },
  { header: 'THRESHOLD', value: (s) => `${s.failureThreshold} of ${s.codes?.join(',') ?? 'any failure'}` },
  { header: 'WINDOW MS', value: (s) => s.windowMs },
  { header: 'STEP', value: (s) => `×${s.decreaseFactor} / +${s.increaseStep}` },
  { header: 'COOLDOWN MS', value: (s) => s.cooldownMs },
  { header: 'CHANGED', value: (s) => s.changedAt },
];

const CHANGE_COLUMNS: readonly Column<LimitChange>[] = [
  { header: 'AT', value: (c) => c.changedAt },
  { header: 'KIND', value: (c) => c.kind },
  { header: 'LIMIT', value: (c) => `${c.fromLimit ?? 'default'} → ${c.toLimit ?? c.fromLimit ?? '-'}` },
  { header: 'ACTOR', value: (c) => (c.actorName ? `${c.actorName} (${c.actor})` : c.actor) },
  { header: 'CAUSE', value: (c) => c.cause },
];

export const adaptiveCommand: CliCommand = {
  register(program, ctx) {
    const adaptive = program
      .command('adaptive')
      .description("adaptive limits: a type's concurrency limit follows its failure rate within bounds; every change is in its trail");
    registerSet(adaptive, ctx);
    adaptive
      .command('show')
      .description('show the adaptive state of a type (or, without one, of every adaptive type)')
      .argument('[type]', 'task type')
      .action(
        action(ctx, async (type: string | undefined) => {
          const client = await ctx.client();
          const states = type === undefined ? await client.adaptive.list() : [await client.adaptive.get(type)].filter((s) => s !== null);
          ctx.output.result(type === undefined ? { adaptive: states } : { adaptive: states[0] ?? null }, () =>
            ctx.output.table(states, STATE_COLUMNS, type === undefined ? 'no adaptive type' : `${type} is not adaptive`),
          );
        }),
      );
    stateCommand(adaptive, ctx, 'off', 'turn adaptation off: the limit stays where it is', (client, type) => client.adaptive.disable(type));
    stateCommand(adaptive, ctx, 'resume', 'adapt again after an override, from the limit in force', (client, type) => client.adaptive.resume(type));
    adaptive
      .command('override')
      .description('set the limit by hand and suspend adaptation (until resume, or for --for)')
      .argument('<type>', 'task type')
      .argument('<limit>', 'the limit, 1–100000', integer(1, 100_000))
      .option('--for <duration>', 'adaptation resumes by itself after this long (e.g. 30m, 2h)', duration)
      .action(
        action(ctx, async (type: string, limit: number, flags: { for?: number }) => {
          const state = await (await ctx.client()).adaptive.override(type, limit, { overrideForMs: flags.for ?? null });
          ctx.output.result({ adaptive: state }, () => ctx.output.table([state], STATE_COLUMNS));
        }),
      );
    adaptive
      .command('history')
      .description("a type's trail of limit changes, newest first: cause and actor of each")
      .argument('<type>', 'task type')
      .option('--limit <n>', 'at most this many, 1–10000', integer(1, 10_000), 50)
      .action(
        action(ctx, async (type: string, flags: { limit: number }) => {
          const changes = await (await ctx.client()).adaptive.history(type, { limit: flags.limit });
          ctx.output.result({ changes }, () => ctx.output.table(changes, CHANGE_COLUMNS, `no limit change of ${type}`));
        }),
      );
  },
};

type Client = Awaited<ReturnType<CommandContext['client']>>;

function stateCommand(
  parent: Command,
  ctx: CommandContext,
  name: string,
  description: string,
  run: (client: Client, type: string) => Promise<AdaptiveState>,
): void {
  parent
    .command(name)
    .description(description)
    .argument('<type>', 'task type')
    .action(
      action(ctx, async (type: string) => {
        const state = await run(await ctx.client(), type);
        ctx.output.result({ adaptive: state }, () => ctx.output.table([state], STATE_COLUMNS));
      }),
    );
}

function registerSet(parent: Command, ctx: CommandContext): void {
  parent
    .command('set')
    .description("turn adaptation on for a type (or change its configuration): it starts from the type's policy limit, clamped to the bounds")
    .argument('<type>', 'task type')
    .requiredOption('--max <n>', 'the highest limit (and the start without a policy), 1–100000', integer(1, 100_000))
    .option('--min <n>', 'the lowest limit (default 1)', integer(1, 100_000))
    .option('--window <duration>', 'the window of attempt outcomes each evaluation reads (default 30s)', duration)
    .option('--min-samples <n>', 'fewer finished attempts in the window: no decision (default 10)', integer(1, 1_000_000))
    .option('--threshold <rate>', 'failure rate (0..1) at or above which the limit steps down (default 0.2)', positiveNumber(1))
    .option('--codes <codes>', 'only failures with these error codes count, comma-separated (e.g. HTTP_429,HTTP_503,TIMEOUT)')
    .option('--decrease-factor <f>', 'multiplicative decrease, between 0 and 1 (default 0.5)', positiveNumber(1))
    .option('--increase-step <n>', 'additive increase (default 1)', integer(1, 100_000))
    .option('--cooldown <duration>', 'the least time between two changes (default 10s)', duration)
    .action(
      action(ctx, async (type: string, flags: Record<string, string | number | undefined>) => {
        const config: AdaptiveConfigInput = { maxLimit: flags.max as number };
        if (flags.min !== undefined) config.minLimit = flags.min as number;
        if (flags.window !== undefined) config.windowMs = flags.window as number;
        if (flags.minSamples !== undefined) config.minSamples = flags.minSamples as number;
        if (flags.threshold !== undefined) config.failureThreshold = flags.threshold as number;
        if (flags.codes !== undefined)
          config.codes = String(flags.codes)
            .split(',')
            .map((code) => code.trim())
            .filter(Boolean);
        if (flags.decreaseFactor !== undefined) config.decreaseFactor = flags.decreaseFactor as number;
        if (flags.increaseStep !== undefined) config.increaseStep = flags.increaseStep as number;
        if (flags.cooldown !== undefined) config.cooldownMs = flags.cooldown as number;
        const state = await (await ctx.client()).adaptive.set(type, config);
        ctx.output.result({ adaptive: state }, () => ctx.output.table([state], STATE_COLUMNS));
      }),
    );
}
