/**
 * `tasklease policy get|set|reset [type] [--owner <owner>]`: runtime
 * policies, read by every claim — a change applies across the cluster at the
 * next claim. Without a type the command works on the GLOBAL policy (`get`
 * without a type lists all); with --owner, on that owner's (tenant's) limit.
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
  { header: 'UPDATED', value: (p) => p.updatedAt },
];

const OWNER_HELP = "an owner's (tenant's) policy instead: its concurrency limit and enabled switch";

/** The policy a command names: --owner, else the type, else GLOBAL. */
function targetOf(type: string | undefined, owner: string | undefined): { target: PolicyTarget; name: string } {
  if (owner !== undefined && type !== undefined) throw new UsageError('name a task type or --owner, not both', 'owner');
  if (owner !== undefined) return { target: { owner }, name: `OWNER:${owner}` };
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
      .action(
        action(ctx, async (type: string | undefined, flags: { owner?: string }) => {
          const client = await ctx.client();
          if (type === undefined && flags.owner === undefined) {
            const policies = await client.policies.list();
            return ctx.output.result({ policies }, () => ctx.output.table(policies, POLICY_COLUMNS, "no policies: the workers' defaults apply"));
          }
          const { target, name } = targetOf(type, flags.owner);
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
      .action(
        action(ctx, async (type: string | undefined, flags: { owner?: string }) => {
          const { target, name } = targetOf(type, flags.owner);
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

function registerSet(policy: Command, ctx: CommandContext): void {
  policy
    .command('set')
    .description('change a type\'s or an owner\'s policy (or, without either, the GLOBAL one); unnamed fields keep their value; "default" clears one')
    .argument('[type]', 'task type')
    .option('--owner <owner>', OWNER_HELP)
    .option('--max-concurrency <n>', 'running tasks at once across the cluster, 1–100000, or default', maxConcurrency)
    .option('--max-attempts <n>', 'attempts of tasks submitted from now on, 1–100, or default', integerOrDefault(1, 100))
    .option('--retry-base-delay-ms <ms>', 'first retry delay, 0–604800000, or default', integerOrDefault(0, 7 * 86_400_000))
    .option('--enabled <bool>', 'false: tasks of the type (or all, for GLOBAL) are not claimed; they wait', boolean)
    .action(
      action(ctx, async (type: string | undefined, flags: Record<string, string | number | boolean | undefined>) => {
        const { target } = targetOf(type, flags.owner as string | undefined);
        const change = Object.fromEntries(
          Object.entries(flags)
            .filter(([key, value]) => value !== undefined && key !== 'owner')
            .map(([key, value]) => [key, value === 'default' ? null : value]),
        ) as PolicyChange;
        if (Object.keys(change).length === 0) {
          throw new UsageError('policy set needs at least one of --max-concurrency, --max-attempts, --retry-base-delay-ms, --enabled', 'change');
        }
        const saved = await (await ctx.client()).policies.update(target, change);
        ctx.output.result({ policy: saved }, () => ctx.output.table([saved], POLICY_COLUMNS));
      }),
    );
}
