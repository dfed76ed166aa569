/** `tasklease steps <id>`: the durable steps (ctx.step) a task's handler completed, oldest first — where a retry resumes. */
import { action, type CliCommand } from '../command.js';
import type { Column } from '../output.js';
import type { TaskStep } from '../../client/steps.js';

/** A result is shown as JSON, cut to keep the table one line per step. */
const RESULT_WIDTH = 60;

const STEP_COLUMNS: readonly Column<TaskStep>[] = [
  { header: 'CYCLE', value: (s) => (s.current ? 'current' : `ended at ${s.cycle}`) },
  { header: '#', value: (s) => s.seq },
  { header: 'STEP', value: (s) => s.name },
  { header: 'ATTEMPT', value: (s) => s.attempt },
  { header: 'WORKER', value: (s) => s.workerId },
  { header: 'RECORDED', value: (s) => s.recordedAt },
  {
    header: 'RESULT',
    value: (s) => {
      const json = s.result === undefined ? '' : JSON.stringify(s.result);
      return json.length > RESULT_WIDTH ? `${json.slice(0, RESULT_WIDTH - 1)}…` : json;
    },
  },
];

export const stepsCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('steps')
      .description('list the durable steps (ctx.step) a task completed, oldest first: a retry resumes after the last')
      .argument('<id>', 'task id')
      .option('--all-cycles', "also the steps of cycles an operator's retry or a dead-letter replay ended", false)
      .action(
        action(ctx, async (id: string, flags: { allCycles: boolean }) => {
          const steps = await (await ctx.client()).steps(id, { allCycles: flags.allCycles });
          ctx.output.result({ steps }, () => ctx.output.table(steps, STEP_COLUMNS, 'no durable step completed'));
        }),
      );
  },
};
