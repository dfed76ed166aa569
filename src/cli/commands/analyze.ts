/**
 * `tasklease analyze <type> [--hours N]`: seed article 2's
 * analyze-performance.sh — counts by status, execution time and queue wait
 * (avg, min, max, p95), and the failure codes with their share.
 */
import type { DurationStats } from '../../client/analyze.js';
import { ALL_STATUSES } from '../../core/status.js';
import { action, type CliCommand } from '../command.js';
import { formatMs, type Output } from '../output.js';
import { positiveNumber } from '../parse.js';
import type { Analysis } from '../../client/analyze.js';

export const analyzeCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('analyze')
      .description('performance of a task type over the last hours: counts, execution time, queue wait, failure reasons')
      .argument('<type>', 'task type')
      .option('--hours <n>', 'window, in hours (default 24)', positiveNumber(24 * 366), 24)
      .action(
        action(ctx, async (type: string, flags: { hours: number }) => {
          const analysis = await (await ctx.client()).analyze(type, flags.hours);
          ctx.output.result({ ...analysis, hours: flags.hours }, () => render(ctx.output, analysis, flags.hours));
        }),
      );
  },
};

function render(output: Output, analysis: Analysis, hours: number): string {
  const counts = ALL_STATUSES.map((status) => ({ status, count: analysis.statusCounts[status] ?? 0 }))
    .filter((row) => row.count > 0)
    .sort((a, b) => b.count - a.count);
  return [
    `task type ${analysis.taskType}, last ${hours} h (since ${analysis.since.toISOString()})`,
    '',
    output.heading('Tasks by status'),
    output.table(
      counts,
      [
        { header: 'STATUS', value: (r) => r.status, colourByValue: true },
        { header: 'COUNT', value: (r) => r.count },
      ],
      'no tasks created in the window',
    ),
    '',
    output.heading('Execution time (finished attempts)'),
    durations(output, analysis.execution),
    '',
    output.heading('Queue wait (due to first start)'),
    durations(output, analysis.queueWait),
    output.fields([
      [
        'oldest waiting',
        analysis.oldestWaiting
          ? `${formatMs(analysis.oldestWaiting.ageMs)} (due since ${analysis.oldestWaiting.since.toISOString()})`
          : 'none: no task of the type is due and unclaimed',
      ],
    ]),
    '',
    output.heading('Failure reasons'),
    output.table(
      analysis.failures,
      [
        { header: 'CODE', value: (f) => f.errorCode },
        { header: 'COUNT', value: (f) => f.count },
        { header: 'SHARE', value: (f) => `${(f.share * 100).toFixed(1)} %` },
      ],
      'no failures in the window',
    ),
  ].join('\n');
}

function durations(output: Output, stats: DurationStats | null): string {
  if (!stats) return output.paint('no samples in the window', 'gray');
  return output.fields([
    ['samples', stats.count],
    ['avg', formatMs(stats.avgMs)],
    ['min', formatMs(stats.minMs)],
    ['max', formatMs(stats.maxMs)],
    ['p95', formatMs(stats.p95Ms)],
  ]);
}
