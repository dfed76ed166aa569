/**
 * `tasklease policy get|set|reset [type] [--owner <owner> | --rate-key <key>]`:
 * runtime policies, read by every claim — a change applies across the cluster
 * at the next claim. Without a type the command works on the GLOBAL policy
 * (`get` without a type lists all); with --owner, on that owner's (tenant's)
 * limit; with --rate-key, on a rate key's rate (`<group>:*` for each key of a
 * group). `set --rate 100/1m` sets N starts per period on any of them.
 */
import { InvalidArgumentError, type Command } from 'commander';
import type { PolicyChange, PolicyTarget } from '../../client/policies.js';
import type { Policy } from '../../store/types.js';
import { action, type CliCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { UsageError } from '../exit-codes.js';
import type { Column } from '../output.js';
import { boolean, integerOrDefault } from '../parse.js';

const POLICY_COLUMNS: readonly Column<Policy>[] = [
  { header: 'POLICY', value: (p) => p.policyKey },
  { header: 'MAX CONCURRENCY', value: (p) => p.maxConcurrency ?? 'default' },
  { header: 'MAX ATTEMPTS', value: (p) => p.maxAttempts ?? 'default' },
  { header: 'RETRY BASE DELAY MS', value: (p) => p.retryBaseDelayMs ?? 'default' },
  { header: 'ENABLED', value: (p) => p.enabled },
  { header: 'RATE', value: (p) => (p.rateLimit == null ? 'none' : `${p.rateLimit}/${p.ratePeriodMs}ms`) },
  { header: 'UPDATED', value: (p) => p.updatedAt },
];

const OWNER_HELP = "an owner's (tenant's) policy instead: its concurrency limit, enabled switch and rate";
const RATE_KEY_HELP = "a rate key's policy instead (its rate only): one key, or <group>:* for every key <group>:… with a budget each";

/** The policy a command names: --owner or --rate-key, else the type, else GLOBAL. */
function targetOf(type: string | undefined, owner: string | undefined, rateKey?: string): { target: PolicyTarget; name: string } {
  if ([type, owner, rateKey].filter((v) => v !== undefined).length > 1)
    throw new UsageError('name one of a task type, --owner and --rate-key, not both', 'owner');
  if (owner !== undefined) return { target: { owner }, name: `OWNER:${owner}` };
  if (rateKey !== undefined) return { target: { rateKey }, name: `KEY:${rateKey}` };
  return type === undefined ? { target: null, name: 'GLOBAL' } : { target: type, name: `TYPE:${type}` };
}

export const policyCommand: CliCommand = {
  register(program, ctx) {
    const policy = program.command('policy').description('runtime limits per task type, per owner or global: concurrency, attempts, retry delay, enabled');
    policy
      .command('get')
      .description("show a type's or an owner's policy (or, without either, every policy)")
      .argument('[type]', 'task type')
      .option('--owner <owner>', OWNER_HELP)
      .option('--rate-key <key>', RATE_KEY_HELP)
      .action(
        action(ctx, async (type: string | undefined, flags: { owner?: string; rateKey?: string }) => {
          const client = await ctx.client();
          if (type === undefined && flags.owner === undefined && flags.rateKey === undefined) {
            const policies = await client.policies.list();
            return ctx.output.result({ policies }, () => ctx.output.table(policies, POLICY_COLUMNS, "no policies: the workers' defaults apply"));
          }
          const { target, name } = targetOf(type, flags.owner, flags.rateKey);
          const found = await client.policies.get(target);
          ctx.output.result({ policy: found }, () =>
            found ? ctx.output.table([found], POLICY_COLUMNS) : `no policy for ${name}: the workers' defaults apply`,
          );
        }),
      );
    registerSet(policy, ctx);
    policy
      .command('reset')
      .description("delete a type's or an owner's policy (or, without either, the GLOBAL one): the workers' defaults apply again")
      .argument('[type]', 'task type')
      .option('--owner <owner>', OWNER_HELP)
      .option('--rate-key <key>', RATE_KEY_HELP)
      .action(
        action(ctx, async (type: string | undefined, flags: { owner?: string; rateKey?: string }) => {
          const { target, name } = targetOf(type, flags.owner, flags.rateKey);
          const removed = await (await ctx.client()).policies.reset(target);
          ctx.output.result({ policyKey: name, removed }, () => (removed ? `${name} reset to the defaults` : `${name} had no policy: nothing to reset`));
        }),
      );
  },
};

/** A limit of 0 is not how to stop a type: say what is. */
function maxConcurrency(value: string): number | 'default' {
  if (value.trim() === '0') throw new InvalidArgumentError('must be from 1 to 100000 or default; to stop claiming these tasks, use --enabled false');
  return integerOrDefault(1, 100_000)(value);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `N/period` (period: a number with ms, s, m or h, or a bare 1 unit as in 100/m), or none to clear the rate. */
export function rate(value: string): { rateLimit: number | null; ratePeriodMs: number | null } {
  if (value.trim() === 'none' || value.trim() === 'default') return { rateLimit: null, ratePeriodMs: null };
  const match = /^(\d+)\/(\d*)(ms|s|m|h)$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('must be N/period, e.g. 100/1m, 10/2s, 5/500ms, 1000/h, or none');
  const periodMs = Number(match[2] === '' ? 1 : match[2]) * UNIT_MS[match[3]!]!;
  const rateLimit = Number(match[1]);
  if (rateLimit < 1 || rateLimit > 1_000_000) throw new InvalidArgumentError('N must be from 1 to 1000000');
  if (periodMs < 1 || periodMs > 86_400_000) throw new InvalidArgumentError('the period must be from 1 ms to 24 h');
  return { rateLimit, ratePeriodMs: periodMs };
}

function registerSet(policy: Command, ctx: CommandContext): void {
  policy
    .command('set')
    .description('change a type\'s or an owner\'s policy (or, without either, the GLOBAL one); unnamed fields keep their value; "default" clears one')
    .argument('[type]', 'task type')
    .option('--owner <owner>', OWNER_HELP)
    .option('--rate-key <key>', RATE_KEY_HELP)
    .option('--rate <N/period>', 'at most N starts per period (e.g. 100/1m, 10/2s, 5/500ms), or none', rate)
    .option('--max-concurrency <n>', 'running tasks at once across the cluster, 1–100000, or default', maxConcurrency)
    .option('--max-attempts <n>', 'attempts of tasks submitted from now on, 1–100, or default', integerOrDefault(1, 100))
    .option('--retry-base-delay-ms <ms>', 'first retry delay, 0–604800000, or default', integerOrDefault(0, 7 * 86_400_000))
    .option('--enabled <bool>', 'false: tasks of the type (or all, for GLOBAL) are not claimed; they wait', boolean)
    .action(
      action(ctx, async (type: string | undefined, flags: Record<string, unknown>) => {
        const { target } = targetOf(type, flags.owner as string | undefined, flags.rateKey as string | undefined);
        const change = Object.fromEntries(
          Object.entries(flags)
            .filter(([key, value]) => value !== undefined && key !== 'owner' && key !== 'rateKey' && key !== 'rate')
            .map(([key, value]) => [key, value === 'default' ? null : value]),
        ) as PolicyChange;
        if (flags.rate !== undefined) Object.assign(change, flags.rate);
        if (Object.keys(change).length === 0) {
          throw new UsageError('policy set needs at least one of --max-concurrency, --max-attempts, --retry-base-delay-ms, --enabled, --rate', 'change');
        }
        const saved = await (await ctx.client()).policies.update(target, change);
        ctx.output.result({ policy: saved }, () => ctx.output.table([saved], POLICY_COLUMNS));
      }),
    );
}
