/** Dead letters: list by type and time, replay one or a selection, archive a selection — each after a confirmation. */
import { admin, type DeadLetter } from '../api.js';
import { clear, confirmAction, every, guarded, h, notify, shortId, when } from '../dom.js';
import type { Page } from '../main.js';

function state(letter: DeadLetter): HTMLElement | string {
  if (letter.replayTaskId) return h('a', { href: `#/tasks/${letter.replayTaskId}` }, 'replayed');
  return letter.archivedAt ? 'archived' : 'waiting';
}

export const deadLettersPage: Page = (root, { params }) => {
  const type = h('input', { name: 'taskType', value: params.get('taskType') ?? '', placeholder: 'any type' });
  const from = h('input', { name: 'from', type: 'datetime-local' });
  const to = h('input', { name: 'to', type: 'datetime-local' });
  const filters = h(
    'form',
    { class: 'card filters', role: 'search' },
    h('label', { class: 'field' }, h('span', {}, 'Type'), type),
    h('label', { class: 'field' }, h('span', {}, 'Moved after'), from),
    h('label', { class: 'field' }, h('span', {}, 'Moved before'), to),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const body = h('tbody');
  const selected = new Set<string>();
  const replaySelected = h('button', { type: 'button', disabled: true, onclick: () => void replay([...selected]) }, 'Replay selected');
  const archiveSelected = h('button', { type: 'button', class: 'danger', disabled: true, onclick: () => void archive([...selected]) }, 'Archive selected');
  /** The ids on screen that can still be replayed or archived: what "select all" selects. */
  let shown: string[] = [];
  const selectAll = h('input', { type: 'checkbox', 'aria-label': 'Select all waiting dead letters' });
  selectAll.addEventListener('change', () => {
    for (const id of shown) {
      if (selectAll.checked) selected.add(id);
      else selected.delete(id);
    }
    for (const box of body.querySelectorAll<HTMLInputElement>('input[type=checkbox]:not(:disabled)')) box.checked = selectAll.checked;
    syncButtons();
  });
  const syncButtons = (): void => {
    replaySelected.disabled = archiveSelected.disabled = selected.size === 0;
    selectAll.checked = shown.length > 0 && shown.every((id) => selected.has(id));
    selectAll.disabled = shown.length === 0;
  };
  root.append(
    h('h1', {}, 'Dead letters'),
    filters,
    h('div', { class: 'row actions' }, replaySelected, archiveSelected),
    h(
      'div',
      { class: 'card scroll' },
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, selectAll),
            ['task', 'type', 'error', 'attempts', 'moved', 'owner', 'state', ''].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
  );

  const replay = (ids: string[]) =>
    guarded(async () => {
      if (!(await confirmAction(`Replay ${ids.length} dead letter(s)? Their tasks run again with fresh attempts.`, 'Replay'))) return;
      const result = await admin<{ replayed: number; results: { outcome: string }[] }>('POST', '/dead-letters/replay-batch', ids);
      const refused = result.results.filter((r) => r.outcome !== 'REPLAYED').map((r) => r.outcome);
      notify(`Replayed ${result.replayed}${refused.length ? `; not replayed: ${refused.join(', ')}` : ''}`);
      selected.clear();
      await load();
    });
  const archive = (ids: string[]) =>
    guarded(async () => {
      if (!(await confirmAction(`Archive ${ids.length} dead letter(s)? They leave the queue for good (kept for the record).`, 'Archive'))) return;
      const result = await admin<{ archived: number }>('POST', '/dead-letters/archive', ids);
      notify(`Archived ${result.archived}`);
      selected.clear();
      await load();
    });

  const load = async (): Promise<void> => {
    const query = new URLSearchParams({ limit: '100' });
    if (type.value.trim()) query.set('taskType', type.value.trim());
    if (from.value) query.set('from', new Date(from.value).toISOString());
    if (to.value) query.set('to', new Date(to.value).toISOString());
    const { deadLetters } = await admin<{ deadLetters: DeadLetter[] }>('GET', `/dead-letters?${query}`);
    const open = (l: DeadLetter): boolean => !l.replayTaskId && !l.archivedAt;
    shown = deadLetters.filter(open).map((l) => l.id);
    clear(
      body,
      deadLetters.length === 0
        ? h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'The dead-letter queue is empty.'))
        : deadLetters.map((letter) => {
            const box = h('input', { type: 'checkbox', 'aria-label': `Select ${letter.id}`, checked: selected.has(letter.id), disabled: !open(letter) });
            box.addEventListener('change', () => {
              if (box.checked) selected.add(letter.id);
              else selected.delete(letter.id);
              syncButtons();
            });
            return h(
              'tr',
              { 'data-id': letter.id, 'data-task': letter.originalTaskId },
              h('td', {}, box),
              h('td', {}, h('a', { href: `#/tasks/${letter.originalTaskId}`, class: 'mono', title: letter.originalTaskId }, shortId(letter.originalTaskId))),
              h('td', {}, letter.taskType),
              h('td', {}, h('strong', {}, letter.errorCode), h('div', { class: 'muted small' }, letter.errorMessage)),
              h('td', {}, letter.attemptCount),
              h('td', {}, when(letter.movedAt)),
              h('td', {}, letter.owner ?? '—'),
              h('td', {}, state(letter)),
              h('td', {}, open(letter) ? h('button', { type: 'button', class: 'secondary', onclick: () => void replay([letter.id]) }, 'Replay') : ''),
            );
          }),
    );
    syncButtons();
  };
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(load);
  });
  return every(5000, load);
};
