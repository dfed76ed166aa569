/**
 * A flow as a graph (GET /api/v1/flows/:id), redrawn every two seconds while
 * any of its tasks has not ended: one column per layer (a task's layer is
 * one more than its deepest parent's), a node per task colored by status and
 * linked to its page, an edge per dependency (dashed: the child runs even if
 * the parent fails; violet: a fan-out's child, which its parent waits for).
 * A layer wider than MAX_NODES_PER_LAYER is drawn as one summary node with
 * its counts per status, so a fan-out of ten thousand stays readable.
 * The flow's actions (cancel, pause, resume; retry for operators) are above.
 */
import { api, isOperator, type Edge, type Flow, type Task } from '../api.js';
import { clear, confirmAction, every, guarded, h, notify, shortId, statusBadge } from '../dom.js';
import type { Page } from '../main.js';

const MAX_NODES_PER_LAYER = 40;
const NODE_W = 170;
const NODE_H = 34;
const GAP_X = 70;
const GAP_Y = 14;
const SVG = 'http://www.w3.org/2000/svg';
const ENDED = ['SUCCESS', 'PARTIAL_SUCCESS', 'FAILED', 'CANCELLED'];

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

/** Layers by longest path from a root (the edges point parent → child; a fan-out's child is drawn before its parent). */
export function layersOf(tasks: readonly Task[], edges: readonly Edge[]): Task[][] {
  const parents = new Map<string, string[]>();
  for (const edge of edges) parents.set(edge.childId, [...(parents.get(edge.childId) ?? []), edge.parentId]);
  const depth = new Map<string, number>();
  const known = new Set(tasks.map((t) => t.id));
  const visit = (id: string, seen: Set<string>): number => {
    const cached = depth.get(id);
    if (cached !== undefined) return cached;
    if (seen.has(id)) return 0; // never: flows have no cycles
    seen.add(id);
    const d = Math.max(-1, ...(parents.get(id) ?? []).filter((p) => known.has(p)).map((p) => visit(p, seen))) + 1;
    depth.set(id, d);
    return d;
  };
  const layers: Task[][] = [];
  for (const task of tasks) (layers[visit(task.id, new Set())] ??= []).push(task);
  return layers.filter(Boolean);
}

interface Placed {
  x: number;
  y: number;
  /** The summary node standing for this task's wide layer. */
  group: boolean;
}

function graph(flow: Flow): HTMLElement {
  const layers = layersOf(flow.tasks, flow.edges);
  const placed = new Map<string, Placed>();
  const nodes: SVGElement[] = [];
  let height = 0;
  layers.forEach((layer, column) => {
    const x = 10 + column * (NODE_W + GAP_X);
    if (layer.length > MAX_NODES_PER_LAYER) {
      const counts = new Map<string, number>();
      for (const task of layer) counts.set(task.status, (counts.get(task.status) ?? 0) + 1);
      const lines = [...counts].map(([status, n]) => `${status} ${n}`);
      const boxH = NODE_H + 14 * lines.length;
      for (const task of layer) placed.set(task.id, { x, y: 10, group: true });
      nodes.push(
        svg(
          'g',
          { class: 'node group', 'data-layer': column, 'data-count': layer.length },
          svg('rect', { x, y: 10, width: NODE_W, height: boxH }),
          svg('text', { x: x + 8, y: 28 }, `${layer.length} tasks (${layer[0]!.taskType})`),
          ...lines.map((line, i) => svg('text', { x: x + 8, y: 44 + i * 14 }, line)),
        ),
      );
      height = Math.max(height, boxH + 20);
      return;
    }
    layer.forEach((task, row) => {
      const y = 10 + row * (NODE_H + GAP_Y);
      placed.set(task.id, { x, y, group: false });
      const link = svg(
        'a',
        { href: `#/tasks/${task.id}` },
        svg('rect', { x, y, width: NODE_W, height: NODE_H }),
        svg('text', { x: x + 8, y: y + 14 }, `${task.taskType} ${shortId(task.id)}`),
        svg('text', { x: x + 8, y: y + 28 }, task.status),
      );
      nodes.push(svg('g', { class: `node s-${task.status.toLowerCase()}`, 'data-task': task.id, 'data-status': task.status }, link));
      height = Math.max(height, y + NODE_H + 10);
    });
  });
  // One line per edge between two drawn nodes; edges into or out of a summary node are drawn once per pair of places.
  const drawn = new Set<string>();
  const lines: SVGElement[] = [];
  for (const edge of flow.edges) {
    const from = placed.get(edge.parentId);
    const to = placed.get(edge.childId);
    if (!from || !to) continue;
    const key = `${from.x},${from.y}->${to.x},${to.y}`;
    if (drawn.has(key)) continue;
    drawn.add(key);
    const [x1, y1, x2, y2] = [from.x + NODE_W, from.y + NODE_H / 2, to.x, to.y + NODE_H / 2];
    const bend = (x2 - x1) / 2;
    lines.push(
      svg('path', {
        class: `edge${edge.onFailure === 'CONTINUE' ? ' continue' : ''}${edge.fanOut ? ' fan-out' : ''}`,
        d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
        'data-resolution': edge.resolution ?? 'open',
      }),
    );
  }
  const width = 20 + layers.length * (NODE_W + GAP_X);
  const picture = svg(
    'svg',
    { width, height: Math.max(height, 60), role: 'img', 'aria-label': `Flow graph: ${flow.tasks.length} tasks in ${layers.length} layers` },
    ...lines,
    ...nodes,
  );
  return h('div', { class: 'flow-graph', 'data-layers': layers.length, 'data-edges': flow.edges.length }, picture as unknown as Node);
}

export const flowPage: Page = (root, { me, path }) => {
  const id = path[1]!;
  let flow: Flow | null = null;
  const header = h('div', { class: 'row spread' });
  const actions = h('div', { class: 'row actions', role: 'group', 'aria-label': 'Flow actions' });
  const summary = h('p', { class: 'muted', 'data-flow-counts': '' });
  const body = h('section', { class: 'card wide', 'aria-label': 'Flow graph' });
  root.append(header, actions, summary, body);

  const act = (label: string, path: string, confirm?: string) =>
    guarded(async () => {
      if (confirm && !(await confirmAction(confirm, label))) return;
      await api('POST', `/api/v1/flows/${id}/${path}`);
      notify(`${label}: done`);
      await refresh();
    });
  const draw = (): void => {
    if (!flow) return;
    const open = flow.tasks.some((t) => !ENDED.includes(t.status));
    clear(header, h('h1', {}, 'Flow ', h('span', { class: 'mono muted' }, flow.flowId)));
    clear(
      actions,
      open
        ? h(
            'button',
            { type: 'button', class: 'danger', onclick: () => void act('Cancel flow', 'cancel', 'Cancel every task of this flow that has not ended?') },
            'Cancel flow',
          )
        : null,
      open ? h('button', { type: 'button', class: 'secondary', onclick: () => void act('Pause flow', 'pause') }, 'Pause flow') : null,
      flow.tasks.some((t) => t.status === 'PAUSED') ? h('button', { type: 'button', onclick: () => void act('Resume flow', 'resume') }, 'Resume flow') : null,
      isOperator(me) && flow.tasks.some((t) => t.status === 'FAILED')
        ? h(
            'button',
            { type: 'button', onclick: () => void act('Retry flow', 'retry', 'Run the failed tasks again? The tasks they cancelled wait for them again.') },
            'Retry flow',
          )
        : null,
    );
    clear(
      summary,
      `${flow.tasks.length} tasks${flow.truncated ? ' (more not shown)' : ''}: `,
      Object.entries(flow.counts).map(([status, n]) => h('span', { 'data-count-status': status }, statusBadge(status), ` ${n} `)),
    );
    clear(body, h('h2', {}, 'Graph'), graph(flow));
  };
  const refresh = async (): Promise<void> => {
    flow = await api<Flow>('GET', `/api/v1/flows/${id}?limit=2000`);
    draw();
  };
  return every(2000, async () => {
    try {
      await refresh();
    } catch (error) {
      clear(header, h('h1', {}, 'Flow not found'));
      throw error;
    }
  });
};
