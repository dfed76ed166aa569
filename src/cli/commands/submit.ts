/**
 * `tasklease submit <type> [payload-json]`: one task.
 * `tasklease submit --file tasks.jsonl|tasks.csv --type T`: many, in batches (submit-file.ts).
 * Without --tasks the payload is not checked against a schema (the CLI has no
 * definitions); with --tasks ./tasks.js it is, as the application's own submit would.
 */
import { Option } from 'commander';
import { action, type CliCommand } from '../command.js';
import { UsageError } from '../exit-codes.js';
import { duration, integer, isoTime, nonEmpty } from '../parse.js';
import { submitFile } from '../submit-file.js';
import { submitClient, submitOptions, type SubmitFlags } from '../submit-options.js';

export const submitCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('submit')
      .description('submit one task, or many from a JSON-lines or CSV file')
      .argument('[type]', 'task type')
      .argument('[payload-json]', 'payload as JSON (default {})')
      .option('--priority <n>', 'higher runs first, -1000–1000', integer(-1000, 1000))
      .option('--delay <duration>', 'start no earlier than this long from now: 90s, 10m', duration)
      .option('--at <time>', 'start no earlier than this ISO 8601 time', isoTime)
      .option('--deadline <time>', 'never start after, and time out at, this ISO 8601 time', isoTime)
      .option('--max-attempts <n>', 'attempts before the task fails for good, 1–100', integer(1, 100))
      .option('--owner <owner>', 'owner of the task(s) (default TASKLEASE_OWNER)', nonEmpty)
      .option('--idempotency-key <key>', 'the same type + owner + key returns the existing task', nonEmpty)
      .option('--trace-id <id>', 'correlates logs and failures', nonEmpty)
      .option('--rate-key <key>', "starts count against the rate of policy KEY:<key>, else KEY:<group>:* (group: the key's part before ':')", nonEmpty)
      .option('--unique-key <key>', 'one task per type + owner + key while it is not finished (default key with the flags below: the payload)', nonEmpty)
      .option('--unique-period <duration>', 'throttle: one task per key per window of this length: 1m, 1h', duration)
      .option('--debounce <duration>', 'a later submit with the key replaces the waiting task and starts it this much later', duration)
      .option('--sequence-key <key>', 'run one at a time, in submit order, with the other tasks of this key', nonEmpty)
      .addOption(
        new Option('--sequence-on-dead-letter <policy>', "what the key's dead-lettered head does to the tasks behind it (sets the key's policy)").choices([
          'BLOCK',
          'SKIP',
        ]),
      )
      .option('--tasks <modules...>', 'task modules whose schemas check the payloads')
      .option('-f, --file <path>', 'submit every record of a .jsonl (one payload per line) or .csv (header row) file')
      .option('--type <type>', 'with --file: the task type (or give it as the first argument)', nonEmpty)
      .addOption(new Option('--format <format>', 'with --file: the file format (default: by extension)').choices(['jsonl', 'csv']))
      .option('--batch-size <n>', 'with --file: tasks per submit statement, 1–50000', integer(1, 50_000), 1000)
      .option(
        '--idempotency-key-field <field>',
        "with --file: take each task's idempotency key from this payload field (re-runs skip rows already submitted)",
        nonEmpty,
      )
      .action(
        action(ctx, async (type: string | undefined, payloadJson: string | undefined, flags: SubmitFlags) => {
          if (flags.file !== undefined) return submitFile(ctx, { ...flags, type: pickType(type, flags.type) }, payloadJson);
          if (type === undefined) throw new UsageError('submit needs a task type: tasklease submit <type> [payload-json]', 'type');
          const payload = parsePayload(payloadJson ?? '{}');
          const client = await submitClient(ctx, flags, type);
          const { task, created } = await client.submit(type, payload, submitOptions(ctx, flags));
          ctx.output.result({ id: task.id, taskType: task.taskType, status: task.status, created }, () =>
            created
              ? `submitted task ${task.id} (${task.taskType}, ${ctx.output.status(task.status)})`
              : `task ${task.id} already exists for this key (${ctx.output.status(task.status)}): nothing submitted`,
          );
        }),
      );
  },
};

function pickType(positional: string | undefined, flag: string | undefined): string {
  if (positional !== undefined && flag !== undefined && positional !== flag)
    throw new UsageError(`two task types given: ${positional} and --type ${flag}`, 'type');
  const type = flag ?? positional;
  if (type === undefined) throw new UsageError('--file needs the task type: --type <type>', 'type');
  return type;
}

export function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`payload is not valid JSON (${(error as Error).message}); quote it for the shell: '{"id": 1}'`, 'payload');
  }
}
