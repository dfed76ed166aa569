/**
 * The worker's side of flows: a handler's reads of the tasks at the other
 * end of its edges (ctx.parents, ctx.children), and a fan-out
 * (TaskResult.awaitChildren) written as the attempt's end: the children and
 * the waiting parent in one fenced transaction (store.awaitChildren), so a
 * zombie makes no children and a crash before the commit makes none twice.
 */
import type { RelatedTask } from '../core/context.js';
import { registryOf, type AnyTaskDefinition, type TaskAwaitChildren } from '../core/definition.js';
import { Scope } from '../core/scope.js';
import type { NewTask } from '../core/task.js';
import { prepareTask, type SubmitLimits } from '../client/submit.js';
import type { MiddlewareStack } from '../client/middleware.js';
import { checkNotSequenced } from '../client/flows.js';
import type { AttemptOutcome, DependencyLink, Store } from '../store/types.js';
import type { Execution } from './execution.js';

/**
 * What a handler reads: its parents are the flow nodes it waited for; its
 * children the tasks its fan-outs made (edges from them up to it). A flow's
 * downstream nodes are not a handler's business (they wait for it).
 */
export async function relatedTasks(store: Store, taskId: string, middleware: MiddlewareStack): Promise<{ parents: RelatedTask[]; children: RelatedTask[] }> {
  const { parents: into } = await store.listDependencies({ taskId, scope: Scope.global() });
  const view = (link: DependencyLink, otherId: string): RelatedTask => ({
    taskId: otherId,
    taskType: link.task?.taskType ?? '',
    // A task purged by the cleanup had ended: its edge says how.
    status: link.task?.status ?? (link.resolution === 'FAILED' ? 'FAILED' : 'SUCCESS'),
    result: link.task?.result == null ? null : middleware.hasCodec ? middleware.decode('result', link.task.taskType, link.task.result) : link.task.result,
    lastErrorCode: link.task?.lastErrorCode ?? null,
  });
  return {
    parents: into.filter((l) => !l.fanOut).map((l) => view(l, l.parentId)),
    children: into.filter((l) => l.fanOut).map((l) => view(l, l.parentId)),
  };
}

export class FanOut {
  private readonly registry: Map<string, AnyTaskDefinition>;

  constructor(
    private readonly store: Store,
    tasks: readonly AnyTaskDefinition[],
    private readonly limits: SubmitLimits,
  ) {
    this.registry = registryOf(tasks);
  }

  /** The children as tasks of the parent's owner (a fan-out stays in its owner's scope); throws a ValidationError for a bad one. */
  async prepare(execution: Execution, result: TaskAwaitChildren): Promise<NewTask[]> {
    const owner = execution.task.owner;
    const children = await Promise.all(
      result.children.map((child, i) => prepareTask({ ...child, ...(owner === null ? {} : { owner }) }, this.registry, this.limits, `child #${i}`)),
    );
    children.forEach(checkNotSequenced);
    return children;
  }

  /**
   * Writes the fan-out; the outcome it stands for (an uncharged end: a snooze
   * carrying its children's count, which the worker announces as fannedOut), or
   * null when the lease was gone and nothing was written.
   */
  async write(execution: Execution, children: NewTask[], onFailure: TaskAwaitChildren['onChildFailure']): Promise<AttemptOutcome | null> {
    const progress = execution.context?.finalProgress ?? null;
    // The final progress first (fenced as always): a lost lease writes neither.
    if (progress !== null && !(await this.store.saveProgress({ lease: execution.lease, progress }))) return null;
    const written = await this.store.awaitChildren({ lease: execution.lease, children, onFailure });
    const created = written.children.filter((r) => r.created).map((r) => r.task);
    return written.applied ? { kind: 'SNOOZED', lease: execution.lease, delayMs: 0, progress, children: created } : null;
  }
}
