/**
 * `tasklease flow submit|show|cancel|pause|resume|retry`: flows (client/flows.ts).
 * A flow is submitted from a JSON file ({ nodes: [{ key, type, payload, dependsOn }] });
 * without --tasks its payloads are not checked against schemas (as `submit`).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FlowRequest } from '../../client/flows.js';
import { defineTask } from '../../core/definition.js';
import type { Task } from '../../core/task.js';
import { action, type CliCommand } from '../command.js';
import { UsageError } from '../exit-codes.js';
import type { Column } from '../output.js';
import { integer } from '../parse.js';
import { moduleClient } from '../submit-options.js';

export const flowCommand: CliCommand = {
  register(program, ctx) {
    const flow = program.command('flow').description('flows: tasks that wait for other tasks (submit, show, cancel, pause, resume, retry)');
    flow
      .command('submit')
      .description('submit a flow from a JSON file: { "nodes": [{ "key", "type", "payload", "dependsOn": ["key"] }] } — all or none')
      .argument('<file>', 'the flow as JSON (- reads standard input)')
      .option('--tasks <modules...>', 'task modules whose schemas check the payloads')
      .action(
        action(ctx, async (file: string, flags: { tasks?: string[] }) => {
          const request = readFlow(file === '-' ? readFileSync(0, 'utf8') : readFileSync(resolve(ctx.io.cwd, file), 'utf8'));
          const owner = ctx.config().owner;
          const nodes = request.nodes.map((node) => (owner !== undefined && node.owner === undefined ? { ...node, owner } : node));
          const types = [...new Set(nodes.map((node) => node.type))];
          const client = await moduleClient(
            ctx,
            flags.tasks,
            types.map((type) => defineTask({ type })),
          );
          const submitted = await client.submitFlow({ ...request, nodes });
          const ids = Object.fromEntries(Object.entries(submitted.tasks).map(([key, task]) => [key, task.id]));
          ctx.output.result({ flowId: submitted.flowId, created: submitted.created, tasks: ids }, () =>
            submitted.created === 0
              ? `flow ${submitted.flowId} exists already: nothing submitted`
              : `submitted flow ${submitted.flowId} (${submitted.created} of ${nodes.length} tasks created)`,
          );
        }),
      );
    flow
      .command('show')
      .description('a flow: its tasks with their status and what each waits for')
      .argument('<flow-id>', 'flow id')
      .option('--limit <n>', 'tasks to show, 1–50000', integer(1, 50_000), 1000)
      .action(
        action(ctx, async (flowId: string, flags: { limit: number }) => {
          const found = await (await ctx.client()).flow(flowId, { limit: flags.limit });
          const parents = new Map<string, string[]>();
          for (const edge of found.edges) parents.set(edge.childId, [...(parents.get(edge.childId) ?? []), edge.parentId]);
          const columns: readonly Column<Task>[] = [
            { header: 'TASK', value: (t) => t.id },
            { header: 'TYPE', value: (t) => t.taskType },
            { header: 'STATUS', value: (t) => ctx.output.status(t.status) },
            { header: 'WAITS FOR', value: (t) => (parents.get(t.id) ?? []).map((id) => id.slice(-12)).join(' ') || '-' },
            { header: 'ERROR', value: (t) => t.lastErrorCode ?? '' },
          ];
          const counts = Object.entries(found.counts)
            .map(([status, n]) => `${status} ${n}`)
            .join(', ');
          ctx.output.result(found, () =>
            [
              `flow ${flowId}: ${found.tasks.length} tasks (${counts})${found.truncated ? ', more not shown' : ''}`,
              ctx.output.table(found.tasks, columns),
            ].join('\n'),
          );
        }),
      );
    flow
      .command('cancel')
      .description('cancel every task of the flow that has not ended')
      .argument('<flow-id>', 'flow id')
      .action(
        action(ctx, async (flowId: string) => {
          const result = await (await ctx.client()).cancelFlow(flowId);
          ctx.output.result({ flowId, ...result }, () => `flow ${flowId}: ${result.cancelled} cancelled, ${result.cancelRequested} asked to stop`);
        }),
      );
    for (const [name, description] of [
      ['pause', 'hold every waiting task of the flow (QUEUED, RETRY_WAIT, BLOCKED)'],
      ['resume', 'resume the flow’s paused tasks (one whose parents have not ended waits for them again)'],
      ['retry', 'run the flow’s FAILED tasks again; the tasks their failure cancelled wait for them again'],
    ] as const) {
      flow
        .command(name)
        .description(description)
        .argument('<flow-id>', 'flow id')
        .action(
          action(ctx, async (flowId: string) => {
            const client = await ctx.client();
            const changed = await (name === 'pause' ? client.pauseFlow(flowId) : name === 'resume' ? client.resumeFlow(flowId) : client.retryFlow(flowId));
            ctx.output.result({ flowId, changed }, () => `flow ${flowId}: ${changed} task(s) ${name === 'retry' ? 'retried' : `${name}d`}`);
          }),
        );
    }
  },
};

function readFlow(text: string): FlowRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`the flow file is not JSON: ${(error as Error).message}`, 'file');
  }
  if (parsed === null || typeof parsed !== 'object' || !Array.isArray((parsed as FlowRequest).nodes)) {
    throw new UsageError('the flow file must be an object with a "nodes" array', 'file');
  }
  return parsed as FlowRequest;
}
