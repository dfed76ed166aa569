/**
 * One task: a live progress bar and status (Server-Sent Events from
 * /api/v1/tasks/:id/events), its timeline (submit, attempts, and what
 * operators did, by whom: /api/v1/tasks/:id/actions; the durable steps its
 * handler completed: /api/v1/tasks/:id/steps), the lines it logged
 * (ctx.log: /api/v1/tasks/:id/logs), attempts and lease and the
 * diagnose verdict (operators), and the actions its status and the caller's
 * role allow.
 */
import {
  admin,
  api,
  isOperator,
  type Attempt,
  type Diagnosis,
  type Link,
  type Me,
  type Progress,
  type Task,
  type TaskAction,
  type TaskLog,
  type TaskStep,
  type UniqueHold,
} from '../api.js';
import { clear, confirmAction, duration, every, guarded, h, notify, shortId, statusBadge, when } from '../dom.js';
import type { Page } from '../main.js';
import { estimateCard } from './adaptive.js';
import { storedValuesCard } from './sealed.js';
import { EDITABLE, editTask } from './edit-task.js';

const WAITING = ['QUEUED', 'RETRY_WAIT', 'PAUSED', 'BLOCKED'];

interface Action {
  label: string;
  allowed: (task: Task, me: Me) => boolean;
  run: (task: Task) => Promise<unknown>;
  confirm?: string;
  /** The dialog's confirming button, when the action's own label would be ambiguous there. */
  confirmLabel?: string;
}

const ACTIONS: Action[] = [
  {
    label: 'Cancel',
    allowed: (t) => [...WAITING, 'RUNNING'].includes(t.status),
    run: (t) => api('POST', `/api/v1/tasks/${t.id}/cancel`),
    confirm: 'Cancel this task? A running handler is asked to stop.',
    confirmLabel: 'Cancel task',
  },
  { label: 'Pause', allowed: (t) => ['QUEUED', 'RETRY_WAIT', 'BLOCKED'].includes(t.status), run: (t) => api('POST', `/api/v1/tasks/${t.id}/pause`) },
  { label: 'Resume', allowed: (t) => t.status === 'PAUSED', run: (t) => api('POST', `/api/v1/tasks/${t.id}/resume`) },
  {
    label: 'Retry',
    allowed: (t, me) => t.status === 'FAILED' && isOperator(me),
    run: (t) => admin('POST', `/${t.id}/retry`),
    confirm: 'Run this failed task again with a fresh set of attempts?',
  },
];

function progressView(progress: Progress | null): HTMLElement {
  if (!progress || progress.total <= 0) return h('p', { class: 'muted', 'data-progress': 'none' }, 'No progress reported.');
  const percent = Math.round((progress.processed / progress.total) * 100);
  return h(
    'div',
    { class: 'progress', 'data-progress': percent },
    h('progress', { max: progress.total, value: progress.processed, 'aria-label': 'Progress' }),
    h('span', {}, `${progress.processed} / ${progress.total} (${percent} %)`, progress.message ? ` — ${progress.message}` : ''),
  );
}

function uniqueView(unique: UniqueHold | null): string | HTMLElement {
  if (!unique) return '—';
  const when = `while ${unique.states.join(', ')}${unique.beforeFirstRunOnly ? ', before its first run' : ''}`;
  return h(
    'span',
    { 'data-unique': unique.held ? 'held' : 'released' },
    unique.held ? `holds its key ${when}` : `held its key ${when}; no longer`,
    h('br'),
    h('span', { class: 'mono muted', title: 'The key as stored: a hash of type, owner and key (with a period: @window)' }, unique.key),
  );
}

/** Lost leases; from QUARANTINE_AFTER_LEASE_EXPIRIES on (the diagnosis says) a worker runs the task alone. */
function leaseExpiriesView(task: Task, diagnosis: Diagnosis | null): string | HTMLElement {
  const quarantined = diagnosis?.lease.quarantined ?? false;
  return h(
    'span',
    { 'data-lease-expiries': task.leaseExpiries },
    String(task.leaseExpiries),
    quarantined ? [' ', h('span', { class: 'badge s-failed', 'data-quarantined': '' }, 'QUARANTINED'), ' runs alone'] : null,
  );
}

function facts(task: Task, diagnosis: Diagnosis | null): HTMLElement {
  const row = (label: string, value: string | Node) => [h('dt', {}, label), h('dd', {}, value)];
  return h(
    'dl',
    { class: 'facts' },
    row('Type', task.taskType),
    row('Owner', task.owner ?? '—'),
    row('Idempotency key', task.idempotencyKey ?? '—'),
    row('Priority', String(task.priority)),
    row('Attempts', `${task.attemptCount - task.attemptBase} of ${task.maxAttempts}`),
    row('Available at', when(task.availableAt)),
    row('Lease', task.leaseOwner ? `${task.leaseOwner} until ${when(task.leaseUntil)}` : '—'),
    row('Leases lost', leaseExpiriesView(task, diagnosis)),
    row('Unique key', uniqueView(task.unique)),
    row('Last error', task.lastErrorCode ?? '—'),
    row('Trace id', task.traceId ?? '—'),
    row('Trace parent', task.traceParent ? h('span', { class: 'mono', 'data-trace-parent': '' }, task.traceParent) : '—'),
  );
}

/** Its place in a flow: what it waits for and what waits for it, each linked, with the edge's state. */
function flowView(task: Task, links: { parents: Link[]; children: Link[] }): HTMLElement | null {
  if (!task.flowId && links.parents.length === 0 && links.children.length === 0) return null;
  const item = (link: Link, otherId: string) =>
    h(
      'li',
      { 'data-link': otherId, 'data-resolution': link.resolution ?? 'open' },
      h('a', { href: `#/tasks/${otherId}`, class: 'mono', title: otherId }, link.task ? `${link.task.taskType} ${shortId(otherId)}` : shortId(otherId)),
      ' ',
      link.task ? statusBadge(link.task.status) : h('span', { class: 'muted' }, 'gone'),
      link.onFailure === 'CONTINUE' ? h('span', { class: 'muted' }, ' runs even if it fails') : null,
    );
  const waitsFor = links.parents.filter((l) => !l.fanOut);
  const made = links.parents.filter((l) => l.fanOut);
  const list = (title: string, items: HTMLElement[], attr: string) =>
    items.length === 0 ? null : [h('h3', {}, title), h('ul', { class: 'links', [attr]: items.length }, items)];
  return h(
    'section',
    { class: 'card', 'data-flow-section': '' },
    h('h2', {}, 'Flow'),
    task.flowId ? h('p', {}, h('a', { href: `#/flows/${task.flowId}`, 'data-flow-link': task.flowId }, 'Show the flow as a graph')) : null,
    task.status === 'BLOCKED' ? h('p', { class: 'muted' }, `Waits for ${task.pendingParents} task(s) to end.`) : null,
    list(
      'Waits for',
      waitsFor.map((l) => item(l, l.parentId)),
      'data-parents',
    ),
    list(
      'Children it made',
      made.map((l) => item(l, l.parentId)),
      'data-made',
    ),
    list(
      'Waited for by',
      links.children.map((l) => item(l, l.childId)),
      'data-children',
    ),
  );
}

/** How an attempt ended, in words: a snooze or a hand-back spent no attempt, which the bare outcome name does not say. */
function attemptEnd(a: Attempt): string {
  if (a.outcome === 'SNOOZED') return `attempt ${a.attempt} snoozed (asked to run later; no attempt spent)`;
  if (a.outcome === 'RELEASED') return `attempt ${a.attempt} handed back unstarted (no attempt spent)`;
  if (a.outcome === 'LEASE_EXPIRED') return `attempt ${a.attempt} lost its lease`;
  if (a.outcome === 'AWAITING') return `attempt ${a.attempt} made children and waits for them (no attempt spent)`;
  return `attempt ${a.attempt} ended ${a.outcome ?? ''}${a.errorCode ? ` (${a.errorCode})` : ''}`;
}

/** An operator's action in words, with who did it (the token's name when it has one; its stable id on hover). */
function actionEntry(a: TaskAction): HTMLElement {
  const words: Record<TaskAction['action'], string> = {
    PAUSE: 'paused',
    RESUME: 'resumed',
    CANCEL: a.toStatus === 'CANCEL_REQUESTED' ? 'cancel requested' : 'cancelled',
    RETRY: 'retried with a fresh attempt cycle',
    RESCHEDULE: `rescheduled to ${a.detail ? when(a.detail) : '?'}`,
    EDIT: `edited (${(a.detail ?? '').split(',').join(', ')})`,
    REPLAY: 'dead letter replayed',
    ARCHIVE: 'dead letter archived',
  };
  const by = a.actor === null ? null : h('span', { class: 'mono', 'data-actor': a.actor, title: a.actor }, a.actorName ?? a.actor);
  return h('span', { 'data-action': a.action }, words[a.action], by ? [' by ', by] : null);
}

/** A completed durable step in words: which, by which attempt (and worker, for operators); an ended cycle's is marked so. */
function stepEntry(s: TaskStep): HTMLElement {
  return h(
    'span',
    { 'data-step': s.name, 'data-cycle': s.current ? 'current' : String(s.cycle) },
    `step ${s.seq} `,
    h('strong', { class: 'mono' }, s.name),
    ` completed by attempt ${s.attempt}`,
    s.workerId ? [' on ', h('span', { class: 'mono' }, s.workerId)] : null,
    s.current ? null : h('span', { class: 'muted' }, ' (an earlier cycle: not replayed)'),
  );
}

function timeline(task: Task, diagnosis: Diagnosis | null, actions: readonly TaskAction[], steps: readonly TaskStep[]): HTMLElement {
  const events: [string, string | HTMLElement][] = [[task.createdAt, 'submitted']];
  for (const a of actions) events.push([a.at, actionEntry(a)]);
  // Pushed in the order that wins a tie of times (the sort is stable): an attempt's start, its steps, its end.
  for (const a of diagnosis?.attempts ?? []) events.push([a.startedAt, `attempt ${a.attempt} started on ${a.workerId}`]);
  for (const s of steps) events.push([s.recordedAt, stepEntry(s)]);
  for (const a of diagnosis?.attempts ?? []) if (a.finishedAt) events.push([a.finishedAt, attemptEnd(a)]);
  if (!diagnosis && task.startedAt) events.push([task.startedAt, 'started']);
  if (task.finishedAt) events.push([task.finishedAt, `finished ${task.status}`]);
  events.sort((a, b) => a[0].localeCompare(b[0]));
  return h(
    'ol',
    { class: 'timeline' },
    events.map(([at, what]) => h('li', {}, h('time', { datetime: at }, when(at)), ' ', what)),
  );
}

/** The lines the handler logged (ctx.log), oldest first: time, attempt, level, message, fields; a drop marker is marked. */
function logsView(logs: readonly TaskLog[]): HTMLElement {
  if (logs.length === 0) return h('p', { class: 'muted', 'data-logs': 'none' }, 'The handler logged nothing.');
  return h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      { 'data-logs': String(logs.length) },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['time', 'attempt', 'level', 'message', 'fields'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        logs.map((l) =>
          h(
            'tr',
            { 'data-log-level': l.level, 'data-seq': String(l.seq), ...(l.dropped > 0 ? { 'data-dropped': String(l.dropped), class: 'muted' } : {}) },
            h('td', {}, h('time', { datetime: l.loggedAt }, when(l.loggedAt))),
            h('td', {}, l.attempt),
            h('td', {}, h('span', { class: `badge log-${l.level}` }, l.level.toUpperCase())),
            h('td', { class: 'log-message' }, l.message),
            h('td', { class: 'mono' }, l.fields === undefined || l.dropped > 0 ? '' : JSON.stringify(l.fields)),
          ),
        ),
      ),
    ),
  );
}

function attemptsTable(diagnosis: Diagnosis): HTMLElement {
  const failure = (attempt: number) => diagnosis.failures.find((f) => f.attempt === attempt);
  return h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['#', 'worker', 'started', 'duration', 'outcome', 'failure'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        diagnosis.attempts.map((a) =>
          h(
            'tr',
            {},
            h('td', {}, a.attempt),
            h('td', { class: 'mono' }, a.workerId),
            h('td', {}, when(a.startedAt)),
            h('td', {}, a.finishedAt ? duration(Date.parse(a.finishedAt) - Date.parse(a.startedAt)) : 'running'),
            h('td', { 'data-outcome': a.outcome ?? '' }, a.outcome ? statusBadge(a.outcome) : '—'),
            h('td', {}, failure(a.attempt)?.message ?? a.errorCode ?? ''),
          ),
        ),
      ),
    ),
  );
}

export const taskPage: Page = (root, { me, path }) => {
  const id = path[1]!;
  let task: Task | null = null;
  let diagnosis: Diagnosis | null = null;
  let history: TaskAction[] = [];
  let links: { parents: Link[]; children: Link[] } = { parents: [], children: [] };
  let steps: TaskStep[] = [];
  let logs: TaskLog[] = [];
  let estimate: HTMLElement | null = null;
  const header = h('div', { class: 'row spread' });
  const progress = h('section', { class: 'card', 'aria-label': 'Progress' });
  const actions = h('div', { class: 'row actions', role: 'group', 'aria-label': 'Actions' });
  const details = h('div', { class: 'grid2' });
  root.append(header, progress, actions, details);

  const act = (action: Action) =>
    guarded(async () => {
      if (action.confirm && !(await confirmAction(action.confirm, action.confirmLabel ?? action.label))) return;
      await action.run(task!);
      notify(`${action.label}: done`);
      await refresh();
    });
  const edit = (): HTMLElement =>
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () =>
          void guarded(async () => {
            if (!(await editTask(task!))) return;
            notify('Edited');
            await refresh();
          }),
      },
      'Edit',
    );
  const reschedule = (): HTMLElement => {
    const minutes = h('input', { type: 'number', min: 0, value: 0, name: 'delayMinutes', 'aria-label': 'Start in minutes', class: 'narrow' });
    const form = h(
      'form',
      { class: 'inline' },
      h('label', {}, 'Start in ', minutes, ' min'),
      h('button', { type: 'submit', class: 'secondary' }, 'Reschedule'),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void guarded(async () => {
        await admin('POST', `/${id}/reschedule`, { delayMs: Math.round(Number(minutes.value) * 60_000) });
        notify('Rescheduled');
        await refresh();
      });
    });
    return form;
  };

  const draw = (): void => {
    if (!task) return;
    clear(header, h('h1', {}, task.taskType, ' ', statusBadge(task.status)), h('span', { class: 'mono muted' }, task.id));
    clear(progress, h('h2', {}, 'Progress'), progressView(task.progress));
    clear(
      actions,
      ACTIONS.filter((a) => a.allowed(task!, me)).map((a) =>
        h('button', { type: 'button', class: a.label === 'Cancel' ? 'danger' : '', onclick: () => void act(a) }, a.label),
      ),
      EDITABLE.includes(task.status) ? edit() : null,
      isOperator(me) && WAITING.includes(task.status) ? reschedule() : null,
    );
    clear(
      details,
      h('section', { class: 'card' }, h('h2', {}, 'Details'), facts(task, diagnosis)),
      h('section', { class: 'card' }, h('h2', {}, 'Timeline'), timeline(task, diagnosis, history, steps)),
      flowView(task, links),
      estimate,
      diagnosis
        ? h(
            'section',
            { class: 'card', 'data-diagnosis': diagnosis.causes[0]?.code ?? '' },
            h('h2', {}, 'Diagnosis'),
            h('p', { class: 'verdict' }, diagnosis.verdict),
            h(
              'p',
              { class: 'muted' },
              `Lease: ${diagnosis.lease.status}${diagnosis.lease.remainingSeconds !== null ? `, ${diagnosis.lease.remainingSeconds} s left` : ''}`,
            ),
          )
        : null,
      diagnosis && diagnosis.attempts.length > 0 ? h('section', { class: 'card wide' }, h('h2', {}, 'Attempts'), attemptsTable(diagnosis)) : null,
      h('section', { class: 'card wide', 'aria-label': 'Logs' }, h('h2', {}, 'Logs'), logsView(logs)),
      storedValuesCard(task),
    );
  };
  const refresh = async (): Promise<void> => {
    task = await api<Task>('GET', `/api/v1/tasks/${id}`);
    history = (await api<{ actions: TaskAction[] }>('GET', `/api/v1/tasks/${id}/actions`)).actions;
    links = await api<{ parents: Link[]; children: Link[] }>('GET', `/api/v1/tasks/${id}/dependencies`);
    steps = (await api<{ steps: TaskStep[] }>('GET', `/api/v1/tasks/${id}/steps?allCycles=true`)).steps;
    logs = (await api<{ logs: TaskLog[] }>('GET', `/api/v1/tasks/${id}/logs`)).logs;
    estimate = await estimateCard(id);
    if (isOperator(me)) diagnosis = await admin<Diagnosis>('GET', `/${id}/diagnose`);
    draw();
  };

  const events = new EventSource(`/api/v1/tasks/${id}/events`);
  events.addEventListener('task', (event) => {
    task = JSON.parse((event as MessageEvent).data);
    draw();
  });
  events.addEventListener('progress', (event) => {
    if (!task) return;
    task.progress = JSON.parse((event as MessageEvent).data).progress;
    clear(progress, h('h2', {}, 'Progress'), progressView(task.progress));
  });
  events.addEventListener('end', () => {
    events.close();
    void guarded(refresh);
  });
  // Lease seconds and the verdict change without a status change: operators re-read the diagnosis.
  const stop = every(4000, async () => {
    try {
      await refresh();
    } catch (error) {
      clear(header, h('h1', {}, 'Task not found'));
      throw error;
    }
  });
  return () => {
    events.close();
    stop();
  };
};
