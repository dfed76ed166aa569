/**
 * Sequences: the keys whose tasks run one at a time in submit order, with
 * tasks waiting — each key's head (the task holding it), how many wait
 * behind it, and whether it waits for an operator (a dead-lettered head
 * under BLOCK, or a paused one). Operators skip a dead-lettered head (it
 * stays a dead letter; the next task runs) or change a key's policy.
 */
import { api, isOperator, type SequenceSummary } from '../api.js';
import { clear, confirmAction, every, guarded, h, notify, shortId, tableCard, when } from '../dom.js';
import type { Page } from '../main.js';

const path = (key: string): string => `/api/v1/sequences/${encodeURIComponent(key)}`;

function sequenceRow(sequence: SequenceSummary, operator: boolean, reload: () => Promise<void>): HTMLElement {
  const key = sequence.sequenceKey;
  const skip = () =>
    guarded(async () => {
      if (!(await confirmAction(`Skip the dead-lettered head of ${key}? It stays a dead letter; the next task of the key runs.`, 'Skip'))) return;
      await api('POST', `${path(key)}/skip`);
      notify(`Skipped the head of ${key}: the next task runs`);
      await reload();
    });
  const other = sequence.onDeadLetter === 'BLOCK' ? 'SKIP' : 'BLOCK';
  const setPolicy = () =>
    guarded(async () => {
      await api('PUT', `${path(key)}/policy`, { onDeadLetter: other });
      notify(`${key}: a dead-lettered head now ${other === 'SKIP' ? 'lets the next task run' : 'blocks the key'}`);
      await reload();
    });
  const head = sequence.head;
  const actions = operator
    ? [
        ...(head?.status === 'FAILED' && sequence.blocked
          ? [h('button', { type: 'button', onclick: () => void skip(), 'aria-label': `Skip the head of ${key}` }, 'Skip head')]
          : []),
        h('button', { type: 'button', class: 'secondary', onclick: () => void setPolicy(), 'aria-label': `Set ${key} to ${other}` }, `Set ${other}`),
      ]
    : [];
  return h(
    'tr',
    { 'data-sequence': key, 'data-blocked': String(sequence.blocked) },
    h('th', { scope: 'row' }, key),
    h('td', {}, head ? h('a', { href: `#/tasks/${head.id}`, class: 'mono', title: head.id }, `${head.taskType} ${shortId(head.id)}`) : '—'),
    h('td', {}, head ? `${head.status}${head.lastErrorCode ? ` (${head.lastErrorCode})` : ''}` : '—'),
    h('td', {}, String(sequence.waiting)),
    h('td', {}, sequence.blocked ? h('span', { class: 'badge s-failed' }, 'waits for an operator') : 'no'),
    h('td', {}, sequence.onDeadLetter),
    h('td', {}, when(sequence.updatedAt)),
    h('td', { class: 'row' }, actions),
  );
}

export const sequencesPage: Page = (root, { me }) => {
  const operator = isOperator(me);
  const body = h('tbody');
  const empty = h('p', { class: 'muted' });
  const blockedOnly = h('input', { type: 'checkbox', name: 'blocked' });
  const load = async (): Promise<void> => {
    const { sequences } = await api<{ sequences: SequenceSummary[] }>('GET', `/api/v1/sequences?blocked=${blockedOnly.checked}&limit=500`);
    clear(
      body,
      sequences.map((sequence) => sequenceRow(sequence, operator, load)),
    );
    empty.textContent = sequences.length === 0 ? (blockedOnly.checked ? 'No sequence waits for an operator.' : 'No sequence has tasks waiting.') : '';
  };
  blockedOnly.addEventListener('change', () => void guarded(load));
  root.append(
    h('h1', {}, 'Sequences'),
    h(
      'p',
      { class: 'muted' },
      'Tasks submitted with one sequence key run one at a time, in submit order. A key whose head failed for good (BLOCK) or is paused waits for an operator: replay or skip the head, or resume it.',
    ),
    h('label', { class: 'row' }, blockedOnly, h('span', {}, 'Only keys waiting for an operator')),
    tableCard(['key', 'head', 'head status', 'waiting', 'blocked', 'on dead letter', 'updated', ''], body),
    empty,
  );
  return every(5000, load);
};
