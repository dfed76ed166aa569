/**
 * Flows: tasks that wait for other tasks. A flow is submitted in one call
 * (all its nodes and edges in one transaction, or none), cycles refused
 * before anything is written; a single submit may also wait for tasks that
 * exist (`dependsOn`). What a parent's end does to its children is the
 * store's rule (store/rules/flows.ts). Operations on a whole flow (cancel,
 * pause, resume, retry) are the single-task operations applied to its nodes.
 */
import { NotFoundError, ValidationError, ErrorCode } from '../core/errors.js';
import { uuidv7 } from '../core/ids.js';
import type { Scope } from '../core/scope.js';
import type { NewTask, Task } from '../core/task.js';
import { checkKnownKeys } from '../core/validate.js';
import { ON_PARENT_FAILURE, type OnParentFailure } from '../store/rules/flows.js';
import type { DependencyEdge, FlowGraph, InsertTaskResult, Store } from '../store/types.js';
import type { SubmitRequest } from './submit.js';

/** A parent given by its key in the same flow, or by the id of a task that exists; with what its failure does. */
export type ParentRef = string | { key?: string; taskId?: string; onParentFailure?: OnParentFailure };

export interface FlowNode extends SubmitRequest {
  /** Unique within the flow (1–200 characters): other nodes name it in dependsOn. */
  key: string;
  /** Keys of nodes of this flow (or `{ taskId }` of existing tasks) this node waits for. */
  dependsOn?: readonly ParentRef[];
  /** What a parent's failure does to this node unless its edge says: the flow's default, else CANCEL. */
  onParentFailure?: OnParentFailure;
}

export interface FlowRequest {
  nodes: readonly FlowNode[];
  /** The flow's id (a UUID); default: the flow of the first existing task a node depends on (its own id when it has none), else a new UUIDv7. */
  flowId?: string;
  /** The default of every edge: CANCEL (a failed or cancelled parent cancels its children, and theirs) or CONTINUE. */
  onParentFailure?: OnParentFailure;
}

export interface FlowSubmission {
  flowId: string;
  /** Each node's task by its key (an idempotent repeat: the existing task). */
  tasks: Record<string, Task>;
  /** How many nodes this call created (0: the whole flow existed already). */
  created: number;
}

const NODE_KEYS = ['key', 'dependsOn', 'onParentFailure'] as const;
export const MAX_FLOW_NODES = 50_000;
const MAX_KEY = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function checkOnParentFailure(value: unknown, field: string): OnParentFailure | undefined {
  if (value === undefined) return undefined;
  if (!ON_PARENT_FAILURE.includes(value as OnParentFailure)) {
    throw new ValidationError(`${field} must be one of ${ON_PARENT_FAILURE.join(', ')}, got ${String(value)}`, field);
  }
  return value as OnParentFailure;
}

export function checkFlowId(value: unknown, field = 'flowId'): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new ValidationError(`${field} must be a lowercase UUID`, field);
  return value;
}

/** The flow's edges by key and the ids of existing parents, checked: every key known, no cycle. */
export interface PlannedFlow {
  requests: SubmitRequest[];
  /** Per node: its parents as node indexes or existing task ids, with their rule. */
  parents: { node?: number; taskId?: string; onFailure: OnParentFailure }[][];
  /** Given by the request; else chosen by flowTasks. */
  flowId: string | undefined;
}

export function planFlow(request: FlowRequest): PlannedFlow {
  checkKnownKeys('submitFlow', request, ['nodes', 'flowId', 'onParentFailure']);
  const nodes = request?.nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) throw new ValidationError('submitFlow: nodes must be a non-empty array', 'nodes');
  if (nodes.length > MAX_FLOW_NODES) throw new ValidationError(`a flow holds at most ${MAX_FLOW_NODES} nodes, got ${nodes.length}`, 'nodes');
  const flowDefault = checkOnParentFailure(request.onParentFailure, 'onParentFailure') ?? 'CANCEL';
  const flowId = request.flowId === undefined ? undefined : checkFlowId(request.flowId);
  const index = new Map<string, number>();
  nodes.forEach((node, i) => {
    const key = (node as FlowNode | undefined)?.key;
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY) {
      throw new ValidationError(`flow node #${i}: key must be a string of 1 to ${MAX_KEY} characters`, 'key');
    }
    if (index.has(key)) throw new ValidationError(`flow node #${i}: key ${JSON.stringify(key)} is used twice`, 'key');
    index.set(key, i);
  });
  const parents = nodes.map((node, i) => {
    const nodeDefault = checkOnParentFailure(node.onParentFailure, 'onParentFailure') ?? flowDefault;
    if (node.dependsOn !== undefined && !Array.isArray(node.dependsOn))
      throw new ValidationError(`flow node ${node.key}: dependsOn must be an array`, 'dependsOn');
    const seen = new Set<string>();
    return (node.dependsOn ?? []).map((ref: ParentRef) => {
      const parent = parentOf(ref, index, nodeDefault, `flow node ${node.key}`);
      const id = parent.node === undefined ? `id:${parent.taskId}` : `key:${parent.node}`;
      if (parent.node === i) throw new ValidationError(`flow node ${node.key} depends on itself`, 'dependsOn', ErrorCode.FLOW_CYCLE);
      if (seen.has(id)) throw new ValidationError(`flow node ${node.key} names a parent twice`, 'dependsOn');
      seen.add(id);
      return parent;
    });
  });
  checkAcyclic(nodes, parents);
  const requests = nodes.map((node) => {
    const rest: Record<string, unknown> = { ...node };
    for (const key of NODE_KEYS) delete rest[key];
    return rest as unknown as SubmitRequest;
  });
  return { requests, parents, flowId };
}

function parentOf(ref: ParentRef, index: ReadonlyMap<string, number>, fallback: OnParentFailure, label: string): PlannedFlow['parents'][number][number] {
  if (typeof ref === 'string') {
    const node = index.get(ref);
    if (node === undefined) throw new ValidationError(`${label}: dependsOn names ${JSON.stringify(ref)}, which is no node of this flow`, 'dependsOn');
    return { node, onFailure: fallback };
  }
  if (ref === null || typeof ref !== 'object')
    throw new ValidationError(`${label}: dependsOn entries are keys or { key | taskId, onParentFailure }`, 'dependsOn');
  checkKnownKeys(`${label} dependsOn`, ref, ['key', 'taskId', 'onParentFailure']);
  const onFailure = checkOnParentFailure(ref.onParentFailure, 'onParentFailure') ?? fallback;
  if ((ref.key === undefined) === (ref.taskId === undefined)) throw new ValidationError(`${label}: a dependsOn entry names a key or a taskId`, 'dependsOn');
  if (ref.taskId !== undefined) return { taskId: checkFlowId(ref.taskId, 'dependsOn'), onFailure };
  const node = index.get(ref.key!);
  if (node === undefined) throw new ValidationError(`${label}: dependsOn names ${JSON.stringify(ref.key)}, which is no node of this flow`, 'dependsOn');
  return { node, onFailure };
}

/** Kahn's algorithm: a node left over sits on a cycle, and the message names one. */
function checkAcyclic(nodes: readonly FlowNode[], parents: PlannedFlow['parents']): void {
  const waiting = parents.map((list) => list.filter((p) => p.node !== undefined).length);
  const children: number[][] = nodes.map(() => []);
  parents.forEach((list, child) => list.forEach((p) => p.node !== undefined && children[p.node]!.push(child)));
  const ready = waiting.flatMap((n, i) => (n === 0 ? [i] : []));
  let done = 0;
  while (ready.length > 0) {
    const node = ready.pop()!;
    done += 1;
    for (const child of children[node]!) if (--waiting[child]! === 0) ready.push(child);
  }
  if (done === nodes.length) return;
  const stuck = waiting.flatMap((n, i) => (n > 0 ? [nodes[i]!.key] : [])).slice(0, 5);
  throw new ValidationError(
    `the flow's dependencies form a cycle (among ${stuck.map((k) => JSON.stringify(k)).join(', ')})`,
    'dependsOn',
    ErrorCode.FLOW_CYCLE,
  );
}

/**
 * The prepared tasks with their flow and counts, and the edges between them
 * (and to existing parents, which must be in scope).
 */
export async function flowTasks(store: Store, plan: PlannedFlow, tasks: NewTask[], scope: Scope): Promise<{ tasks: NewTask[]; edges: DependencyEdge[] }> {
  const edges: DependencyEdge[] = [];
  const existing = [...new Set(plan.parents.flatMap((list) => list.flatMap((p) => (p.taskId === undefined ? [] : [p.taskId]))))];
  const parents: Task[] = [];
  for (const id of existing) {
    const parent = await store.getTask({ id, scope });
    if (!parent) throw new NotFoundError('task', id);
    parents.push(parent);
  }
  // Tasks that wait for tasks that exist join their flow (the first parent's; its own id when it is in none).
  plan.flowId ??= parents[0] ? (parents[0].flowId ?? parents[0].id) : uuidv7();
  tasks.forEach((task, i) => {
    checkNotSequenced(task);
    if (task.unique && plan.parents[i]!.length > 0) {
      throw new ValidationError('a task with parents cannot take a unique option (it holds no key while it waits): use an idempotency key', 'unique');
    }
    task.flowId = plan.flowId!;
    task.pendingParents = plan.parents[i]!.length;
    for (const parent of plan.parents[i]!) {
      edges.push({ parentId: parent.taskId ?? tasks[parent.node!]!.id, childId: task.id, onFailure: parent.onFailure });
    }
  });
  return { tasks, edges };
}

export function submission(plan: PlannedFlow, nodes: readonly FlowNode[], results: readonly InsertTaskResult[]): FlowSubmission {
  const tasks: Record<string, Task> = {};
  nodes.forEach((node, i) => (tasks[node.key] = results[i]!.task));
  const flowId = results[0]!.task.flowId ?? plan.flowId!;
  return { flowId, tasks, created: results.filter((r) => r.created).length };
}

/** A flow as the client shows it: its tasks, edges, and a count per status. */
export interface Flow extends FlowGraph {
  flowId: string;
  counts: Partial<Record<Task['status'], number>>;
}

export async function readFlow(store: Store, flowId: string, scope: Scope, limit: number): Promise<Flow> {
  checkFlowId(flowId);
  const graph = await store.getFlow({ flowId, scope, limit });
  if (graph.tasks.length === 0) throw new NotFoundError('flow', flowId);
  const counts: Partial<Record<Task['status'], number>> = {};
  for (const task of graph.tasks) counts[task.status] = (counts[task.status] ?? 0) + 1;
  return { flowId, ...graph, counts };
}

/** A task waits for its turn in a sequence or for its parents in a flow, not both (store/rules/sequences.ts). */
export function checkNotSequenced(task: NewTask): void {
  if (task.sequenceKey) throw new ValidationError('a task in a flow (dependsOn, submitFlow, a fan-out) cannot take a sequenceKey', 'sequenceKey');
}
