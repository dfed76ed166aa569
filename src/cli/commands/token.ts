/**
 * `tasklease token create|list|revoke`: API tokens for the HTTP server. A new
 * token's secret is printed once and only its hash is stored.
 */
import { Option } from 'commander';
import type { ApiTokenRecord, TokenRole } from '../../store/tokens.js';
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import { duration, nonEmpty } from '../parse.js';

const COLUMNS: readonly Column<ApiTokenRecord>[] = [
  { header: 'ID', value: (t) => t.id },
  { header: 'NAME', value: (t) => t.name },
  { header: 'ROLE', value: (t) => t.role },
  { header: 'OWNER', value: (t) => t.owner },
  { header: 'CREATED', value: (t) => t.createdAt },
  { header: 'EXPIRES', value: (t) => t.expiresAt },
  { header: 'REVOKED', value: (t) => t.revokedAt },
  { header: 'LAST USED', value: (t) => t.lastUsedAt },
];

export const tokenCommand: CliCommand = {
  register(program, ctx) {
    const token = program.command('token').description('API tokens for the HTTP server (admin, operator, or user bound to an owner)');
    token
      .command('create')
      .description('create a token and print its secret (shown once)')
      .requiredOption('--name <name>', 'what the token is for', nonEmpty)
      .addOption(
        new Option('--role <role>', "admin (everything), operator (operations and reads), user (its owner's tasks)")
          .choices(['admin', 'operator', 'user'])
          .makeOptionMandatory(),
      )
      .option('--owner <owner>', 'the owner a user token sees (required for --role user)', nonEmpty)
      .option('--expires-in <duration>', 'lifetime, e.g. 30d (default: never expires)', duration)
      .action(
        action(ctx, async (flags: { name: string; role: TokenRole; owner?: string; expiresIn?: number }) => {
          const created = await (
            await ctx.client()
          ).tokens.create({
            name: flags.name,
            role: flags.role,
            owner: flags.owner ?? null,
            ...(flags.expiresIn ? { expiresInMs: flags.expiresIn } : {}),
          });
          ctx.output.result(
            created,
            () => `${created.token}\n(token ${created.record.id}, role ${created.record.role}: the secret is shown once, store it now)`,
          );
        }),
      );
    token
      .command('list')
      .description('list tokens (never their secrets)')
      .action(
        action(ctx, async () => {
          const tokens = await (await ctx.client()).tokens.list();
          ctx.output.result({ tokens }, () => ctx.output.table(tokens, COLUMNS, 'no tokens'));
        }),
      );
    token
      .command('revoke')
      .description('revoke a token at once')
      .argument('<id>', 'the token id (from token list)')
      .action(
        action(ctx, async (id: string) => {
          await (await ctx.client()).tokens.revoke(id);
          ctx.output.result({ revoked: id }, () => `revoked ${id}`);
        }),
      );
  },
};
