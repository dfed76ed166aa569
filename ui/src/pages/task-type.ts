/**
 * A task type's page (#/types/<type>): its claims paused or running (the
 * type policy's enabled switch, one button), its limits (the Policies row:
 * concurrency, attempts, retry delay, rate), how many of its tasks are in
 * each status (linking the Tasks list), its stored history (1 h / 24 h / 7 d),
 * the oldest task waiting and the last 24 hours' failures by error code
 * (analyze). #/types lists the types the cluster knows.
 */
import { admin, api, type Policy, type Stats } from '../api.js';
import { clear, duration, every, guarded, h, notify, statusBadge, tableCard, typeLink, when } from '../dom.js';
import type { Page } from '../main.js';
import { historyChart } from './overview.js';
import { policyRow } from './policies.js';

/** What the page reads of GET …/analyze/<type> (it reads the window's attempts: once every ANALYZE_EVERY_MS, not each poll). */
interface Analysis {
  failures: { errorCode: string; count: number; share: number }[];
  oldestWaiting: { since: string; ageMs: number } | null;
}

const ANALYZE_EVERY_MS = 30_000;

/** #/types: every type the cluster knows, with running / limit, backlog and whether its claims run. */
export const typesPage: Page = (root) => {
  const body = h('tbody');
  root.append(h('h1', {}, 'Task types'), tableCard(['type', 'running / limit', 'backlog', 'claims'], body));
  return every(3000, async () => {
    const stats = await admin<Stats>('GET', '/stats');
    clear(
      body,
      stats.types.length === 0
        ? h('tr', {}, h('td', { colspan: 4, class: 'muted' }, 'No task types yet.'))
        : stats.types.map((type) =>
            h(
              'tr',
              { 'data-type': type.taskType },
              h('td', {}, typeLink(type.taskType)),
              h('td', {}, `${type.running} / ${type.limit}`),
              h('td', {}, type.backlog),
              h('td', {}, type.enabled ? 'running' : statusBadge('PAUSED')),
            ),
          ),
    );
  });
};

/** #/types/<type>. */
export const taskTypePage: Page = (root, { path }) => {
  const taskType = path[1]!;
  const tasksHref = (status?: string) => `#/tasks?${new URLSearchParams({ type: taskType, ...(status ? { status } : {}) })}`;
  const state = h('span', { 'data-claims': '' });
  const toggle = h('button', { type: 'button', 'data-toggle': '' });
  const counts = h('div', { class: 'row', 'aria-label': 'Task counts' });
  const limits = h('tbody');
  const oldest = h('p', { 'data-oldest': '' });
  const failures = h('tbody');
  const history = historyChart(taskType);
  root.append(
    h('div', { class: 'row spread' }, h('h1', {}, taskType), h('div', { class: 'row' }, state, toggle, h('a', { href: tasksHref() }, 'its tasks'))),
    h('section', { class: 'card' }, h('h2', {}, 'Tasks by status'), counts),
    h(
      'section',
      {},
      h('h2', {}, 'Limits'),
      tableCard(['policy', 'running / limit', 'max concurrency', 'max attempts', 'retry base delay (ms)', 'rate (starts per ms)', 'enabled', ''], limits),
    ),
    h('section', { class: 'charts' }, history.element),
    h('section', { class: 'card' }, h('h2', {}, 'Waiting'), oldest),
    h('section', { 'data-failures': '' }, h('h2', {}, 'Failures by error code (last 24 h)'), tableCard(['error code', 'failures', 'share'], failures)),
  );
  let editing = false;
  limits.addEventListener('focusin', () => (editing = true));
  limits.addEventListener('focusout', () => (editing = false));
  let analyzedAt = 0;
  const load = async (force = false): Promise<void> => {
    const analyze = force || Date.now() - analyzedAt >= ANALYZE_EVERY_MS;
    if (analyze) analyzedAt = Date.now();
    const [stats, policies, statusCounts, analysis] = await Promise.all([
      admin<Stats>('GET', '/stats'),
      admin<Policy[]>('GET', '/policies'),
      api<{ counts: Record<string, number> }>('GET', `/api/v1/tasks/counts?type=${encodeURIComponent(taskType)}`),
      analyze ? admin<Analysis>('GET', `/analyze/${encodeURIComponent(taskType)}?hours=24`) : null,
    ]);
    const use = stats.types.find((t) => t.taskType === taskType) ?? { running: 0, limit: stats.global.limit, enabled: true, backlog: 0 };
    const policy = policies.find((p) => p.taskType === taskType);
    const enabled = policy?.enabled ?? true;
    clear(state, enabled ? h('span', { class: 'badge s-running' }, 'claims running') : h('span', { class: 'badge s-paused' }, 'claims paused'));
    toggle.textContent = enabled ? 'Pause type' : 'Resume type';
    toggle.className = enabled ? 'danger' : '';
    toggle.onclick = () =>
      void guarded(async () => {
        await admin('PUT', `/policy/type/${encodeURIComponent(taskType)}`, { enabled: !enabled });
        notify(enabled ? `Paused ${taskType}: no worker claims its tasks; they wait` : `Resumed ${taskType}: workers claim its tasks again`);
        await load(true);
      });
    clear(
      counts,
      Object.entries(statusCounts.counts)
        .filter(([, n]) => n > 0)
        .map(([status, n]) => h('a', { href: tasksHref(status), class: 'row', 'data-count': status }, statusBadge(status), ` ${n}`)),
      Object.values(statusCounts.counts).every((n) => n === 0) ? h('span', { class: 'muted' }, 'No tasks of this type.') : null,
    );
    if (!editing || force)
      clear(
        limits,
        policyRow(taskType, taskType, policy, use, () => load(true)),
      );
    if (analysis) {
      oldest.textContent = analysis.oldestWaiting
        ? `Oldest task waiting: since ${when(analysis.oldestWaiting.since)} (${duration(analysis.oldestWaiting.ageMs)}).`
        : 'Nothing waits to be claimed.';
      clear(
        failures,
        analysis.failures.length === 0
          ? h('tr', {}, h('td', { colspan: 3, class: 'muted' }, 'No failures in the last 24 hours.'))
          : analysis.failures.map((f) =>
              h(
                'tr',
                { 'data-code': f.errorCode },
                h('td', {}, h('a', { href: `#/tasks?${new URLSearchParams({ type: taskType, errorCode: f.errorCode })}` }, f.errorCode)),
                h('td', {}, f.count),
                h('td', {}, `${Math.round(f.share * 100)} %`),
              ),
            ),
      );
    }
    await history.refresh();
  };
  return every(3000, () => load());
};
