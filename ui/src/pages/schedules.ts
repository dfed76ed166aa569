/**
 * Schedules (periodic tasks): each cron schedule with its time zone, the
 * last tick it submitted and its next runs by the database clock. Admins
 * enable, disable or delete one here; schedules are declared in code, the
 * API or the CLI (`tasklease schedule set`).
 */
import { admin, type Schedule } from '../api.js';
import { clear, confirmAction, every, guarded, h, notify, tableCard, when } from '../dom.js';
import type { Page } from '../main.js';

function scheduleRow(schedule: Schedule, isAdmin: boolean, reload: () => Promise<void>): HTMLElement {
  const path = `/schedules/${encodeURIComponent(schedule.key)}`;
  const toggle = () =>
    guarded(async () => {
      await admin('POST', `${path}/${schedule.enabled ? 'disable' : 'enable'}`);
      notify(`${schedule.enabled ? 'Disabled' : 'Enabled'} the schedule ${schedule.key}`);
      await reload();
    });
  const remove = () =>
    guarded(async () => {
      if (!(await confirmAction(`Delete the schedule ${schedule.key}? The tasks it submitted stay.`, 'Delete'))) return;
      await admin('DELETE', path);
      notify(`Deleted the schedule ${schedule.key}`);
      await reload();
    });
  const runs =
    schedule.nextRuns.length === 0
      ? '—'
      : h(
          'ol',
          { class: 'plain' },
          schedule.nextRuns.map((run) => h('li', { 'data-run': run }, when(run))),
        );
  return h(
    'tr',
    { 'data-schedule': schedule.key, 'data-enabled': String(schedule.enabled) },
    h('th', { scope: 'row' }, schedule.key),
    h('td', {}, schedule.taskType),
    h('td', {}, h('code', {}, schedule.cron)),
    h('td', {}, schedule.timeZone),
    h('td', {}, schedule.enabled ? 'yes' : 'no'),
    h('td', {}, schedule.catchUp),
    h(
      'td',
      {},
      schedule.lastTaskId ? h('a', { href: `#/tasks/${encodeURIComponent(schedule.lastTaskId)}` }, when(schedule.lastTickAt)) : when(schedule.lastTickAt),
    ),
    h('td', { class: 'runs' }, runs),
    isAdmin
      ? h(
          'td',
          { class: 'row' },
          h('button', { type: 'button', onclick: () => void toggle() }, schedule.enabled ? 'Disable' : 'Enable'),
          h('button', { type: 'button', class: 'secondary', onclick: () => void remove() }, 'Delete'),
        )
      : h('td'),
  );
}

export const schedulesPage: Page = (root, { me }) => {
  const body = h('tbody');
  const empty = h('p', { class: 'muted' });
  const columns = ['schedule', 'task type', 'cron', 'time zone', 'enabled', 'catch up', 'ticks done up to', 'next runs', ''];
  root.append(
    h('h1', {}, 'Schedules'),
    h('p', { class: 'muted' }, 'Each tick is submitted once across all workers. Times are shown in your browser’s time zone.'),
    tableCard(columns, body),
    empty,
  );
  const load = async (): Promise<void> => {
    const schedules = await admin<Schedule[]>('GET', '/schedules?nextRuns=3');
    clear(
      body,
      schedules.map((schedule) => scheduleRow(schedule, me.role === 'admin', load)),
    );
    empty.textContent = schedules.length === 0 ? 'No schedules: declare them on a worker (schedules) or with tasklease schedule set.' : '';
  };
  return every(5000, load);
};
