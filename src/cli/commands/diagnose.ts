/**
 * `tasklease diagnose <id>`: seed article 2's diagnose-task.sh — the task,
 * its attempts, its last five failures, its lease status, the health of the
 * workers and the control plane — and the verdict: why it is where it is.
 */
import { controlPlaneHealth } from '../../observe/health.js';
import type { Diagnosis } from '../../client/diagnose.js';
import type { HealthReport, ControlPlaneDetails } from '../../observe/health.js';
import type { WorkerRecord } from '../../store/types.js';
import { action, type CliCommand } from '../command.js';
import { duration } from '../parse.js';
import type { Output } from '../output.js';
import { ATTEMPT_COLUMNS, FAILURE_COLUMNS, taskBlock } from '../render.js';
import { WORKER_COLUMNS } from './workers.js';

interface Report extends Diagnosis {
  /** Live workers that run this task's type, and how many live workers there are in all. */
  workers: { forType: WorkerRecord[]; total: number };
  controlPlane: HealthReport<ControlPlaneDetails>;
}

export const diagnoseCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('diagnose')
      .description('why is this task where it is? task, attempts, failures, lease, worker health and a verdict')
      .argument('<id>', 'task id')
      .option('--seen-within <duration>', 'count a worker as alive if seen this recently', duration, 60_000)
      .action(
        action(ctx, async (id: string, flags: { seenWithin: number }) => {
          const client = await ctx.client();
          const diagnosis = await client.diagnose(id, { workerSeenWithinMs: flags.seenWithin });
          const [workers, controlPlane] = await Promise.all([client.workers({ seenWithinMs: flags.seenWithin }), controlPlaneHealth(client.store)]);
          const report: Report = {
            ...diagnosis,
            task: ctx.reveal(diagnosis.task),
            controlPlane,
            workers: { forType: workers.filter((w) => w.taskTypes.includes(diagnosis.task.taskType)), total: workers.length },
          };
          ctx.output.result(report, () => render(ctx.output, report));
        }),
      );
  },
};

function render(output: Output, report: Report): string {
  const { task, lease, controlPlane } = report;
  const cp = controlPlane.details;
  return [
    output.heading('Task'),
    taskBlock(output, task),
    '',
    output.heading(`Attempts (${report.attempts.length})`),
    output.table(report.attempts, ATTEMPT_COLUMNS),
    '',
    output.heading('Last failures'),
    output.table(report.failures, FAILURE_COLUMNS),
    '',
    output.heading('Steps'),
    report.steps.message ?? 'no durable step completed in this cycle',
    '',
    output.heading('Lease'),
    output.fields([
      ['status', lease.status],
      ['owner', task.leaseOwner],
      ['until', task.leaseUntil],
      ['remaining', lease.remainingSeconds === null ? null : `${lease.remainingSeconds} s`],
    ]),
    '',
    output.heading(`Workers for ${task.taskType} (${report.workers.forType.length} of ${report.workers.total} live)`),
    output.table(report.workers.forType, WORKER_COLUMNS, `no live worker runs ${task.taskType}`),
    '',
    output.heading('Control plane'),
    output.fields([
      ['health', controlPlane.status],
      ['schema', `${cp.schemaVersion ?? '?'} (expected ${cp.expectedSchemaVersion})`],
      ['queued', cp.queued],
      ['running', cp.running],
      ['retry wait', cp.retryWait],
      ['dead letters', cp.deadLetters],
      ...(controlPlane.error ? [['problem', controlPlane.error] as [string, unknown]] : []),
    ]),
    '',
    output.heading('Verdict'),
    output.paint(`${report.verdict} (${report.causes[0]!.code})`, 'bold'),
    ...report.causes.slice(1).map((cause) => `also: ${cause.message} (${cause.code})`),
  ].join('\n');
}
