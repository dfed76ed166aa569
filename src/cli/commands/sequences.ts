/**
 * `tasklease sequences list|show|skip|policy`: sequence keys (client/sequences.ts)
 * — which keys have tasks waiting and which of them wait for an operator, one
 * key, skipping a dead-lettered head, a key's dead-letter policy.
 */
import type { SequenceSummary } from '../../client/sequences.js';
import { SEQUENCE_ON_DEAD_LETTER, type SequenceOnDeadLetter } from '../../store/rules/sequences.js';
import { action, type CliCommand } from '../command.js';
import { UsageError } from '../exit-codes.js';
import type { Column } from '../output.js';
import { integer } from '../parse.js';

const COLUMNS: readonly Column<SequenceSummary>[] = [
  { header: 'KEY', value: (s) => s.sequenceKey },
  { header: 'HEAD', value: (s) => s.head?.id ?? '-' },
  { header: 'HEAD STATUS', value: (s) => (s.head ? `${s.head.status}${s.head.lastErrorCode ? ` (${s.head.lastErrorCode})` : ''}` : '-') },
  { header: 'WAITING', value: (s) => s.waiting },
  { header: 'BLOCKED', value: (s) => (s.blocked ? 'yes' : 'no') },
  { header: 'ON DEAD LETTER', value: (s) => s.onDeadLetter },
];

export const sequencesCommand: CliCommand = {
  register(program, ctx) {
    const sequences = program.command('sequences').description('sequence keys: tasks that run one at a time in submit order, per key');
    sequences
      .command('list')
      .description('keys with tasks waiting, each with its head (the task holding the key)')
      .option('--blocked', 'only keys whose head waits for an operator (dead-lettered under BLOCK, or paused)')
      .option('--limit <n>', 'at most this many keys (1–1000)', integer(1, 1000), 100)
      .action(
        action(ctx, async (flags: { blocked?: boolean; limit: number }) => {
          const found = await (await ctx.client()).sequences.list({ blockedOnly: flags.blocked === true, limit: flags.limit });
          ctx.output.result({ sequences: found }, () =>
            ctx.output.table(found, COLUMNS, flags.blocked ? 'no blocked sequence' : 'no sequence has tasks waiting'),
          );
        }),
      );
    sequences
      .command('show')
      .description('one key: its head, how many wait, its policy')
      .argument('<key>', 'sequence key')
      .action(
        action(ctx, async (key: string) => {
          const found = await (await ctx.client()).sequences.get(key);
          ctx.output.result(found, () => ctx.output.table([found], COLUMNS));
        }),
      );
    sequences
      .command('skip')
      .description("let the key's next task run past its dead-lettered head (the head stays a dead letter)")
      .argument('<key>', 'sequence key')
      .action(
        action(ctx, async (key: string) => {
          const { skipped } = await (await ctx.client()).sequences.skip(key);
          ctx.output.result({ sequenceKey: key, skipped }, () =>
            skipped === null ? `sequence ${key}: its head is not dead-lettered, nothing skipped` : `sequence ${key}: skipped ${skipped}, the next task runs`,
          );
        }),
      );
    sequences
      .command('policy')
      .description("what the key's dead-lettered head does to the tasks behind it: BLOCK (wait for a replay or a skip) or SKIP")
      .argument('<key>', 'sequence key')
      .argument('<on-dead-letter>', SEQUENCE_ON_DEAD_LETTER.join(' or '))
      .action(
        action(ctx, async (key: string, onDeadLetter: string) => {
          const policy = onDeadLetter.toUpperCase() as SequenceOnDeadLetter;
          if (!SEQUENCE_ON_DEAD_LETTER.includes(policy)) throw new UsageError(`<on-dead-letter> is ${SEQUENCE_ON_DEAD_LETTER.join(' or ')}`, 'on-dead-letter');
          const client = await ctx.client();
          await client.sequences.setPolicy(key, policy);
          const found = await client.sequences.get(key);
          ctx.output.result(found, () => ctx.output.table([found], COLUMNS));
        }),
      );
  },
};
