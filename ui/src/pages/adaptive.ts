/**
 * Adaptive limits and start estimates in the dashboard: the policy row's
 * "adaptive: 7 (2..20)" (with its state when it is not adapting), the trail
 * of each adaptive type's limit changes below the policies, and the task
 * page's Estimate card (its position under each limit, the reason).
 */
import { admin, api, type AdaptiveState, type LimitChange, type TaskEstimate } from '../api.js';
import { h } from '../dom.js';

/** "adaptive: 7 (2..20)", and why it is not adapting now. */
export function adaptiveLabel(state: AdaptiveState): HTMLElement {
  const base = `adaptive: ${state.currentLimit} (${state.minLimit}..${state.maxLimit})`;
  const why = !state.enabled
    ? ', off'
    : state.overridden
      ? `, overridden ${state.overrideUntil ? `until ${new Date(state.overrideUntil).toLocaleString()}` : 'until resumed'}`
      : '';
  return h('div', { class: 'muted', 'data-adaptive': state.taskType }, base + why);
}

/** The trails of the adaptive types (newest change first, 20 each), one table. */
export async function adaptiveTrail(states: readonly AdaptiveState[]): Promise<HTMLElement | null> {
  if (states.length === 0) return null;
  const trails = await Promise.all(states.map(async (s) => admin<LimitChange[]>('GET', `/adaptive/${encodeURIComponent(s.taskType)}/history?limit=20`)));
  const rows = trails.flat().sort((a, b) => b.changedAt.localeCompare(a.changedAt));
  return h(
    'section',
    { class: 'card scroll', 'aria-label': 'Adaptive limit changes' },
    h('h2', {}, 'Adaptive limit changes'),
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['when', 'type', 'change', 'limit', 'by', 'cause'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((c) =>
          h(
            'tr',
            { 'data-change': c.kind },
            h('td', {}, new Date(c.changedAt).toLocaleString()),
            h('td', {}, c.taskType),
            h('td', {}, c.kind),
            h('td', {}, `${c.fromLimit ?? 'default'} → ${c.toLimit ?? c.fromLimit ?? '-'}`),
            h('td', {}, c.actorName ?? c.actor),
            h('td', {}, c.cause),
          ),
        ),
      ),
    ),
  );
}

/** The task page's Estimate card: when it will start, and each limit's part in it. */
export async function estimateCard(taskId: string): Promise<HTMLElement> {
  const estimate = await api<TaskEstimate>('GET', `/api/v1/tasks/${encodeURIComponent(taskId)}/estimate`);
  const start = estimate.startsAt
    ? new Date(estimate.startsAt).toLocaleString()
    : estimate.state === 'STARTED' && estimate.startedAt
      ? `started ${new Date(estimate.startedAt).toLocaleString()}`
      : 'unknown';
  return h(
    'section',
    { class: 'card', 'data-estimate': estimate.state },
    h('h2', {}, 'Estimate'),
    h('p', { class: 'verdict' }, estimate.state === 'WAITING' ? `Starts: ${start}` : estimate.state.toLowerCase()),
    h('p', { class: 'muted' }, estimate.reason),
    estimate.binds.length === 0
      ? null
      : h(
          'table',
          {},
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['limit', 'position', 'running / limit', 'pace', 'wait'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            {},
            estimate.binds.map((b) =>
              h(
                'tr',
                { 'data-bind': b.kind, title: b.reason },
                h('td', {}, b.kind),
                h('td', {}, `${b.aheadAtLeast ? '≥ ' : ''}${b.position}`),
                h('td', {}, b.limit === null ? `${b.running} / none` : `${b.running} / ${b.limit}`),
                h('td', {}, b.throughputPerSecond === null ? '-' : `${b.throughputPerSecond.toFixed(2)}/s`),
                h('td', {}, b.waitMs === null ? 'unknown' : `${(b.waitMs / 1000).toFixed(1)} s`),
              ),
            ),
          ),
        ),
  );
}
