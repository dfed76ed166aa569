/** Workers: each live worker's host, types, and utilization (its running tasks over its concurrency); above 90 % it is DEGRADED. */
import { admin, api, type Task, type WorkerRecord } from '../api.js';
import { clear, every, h, when } from '../dom.js';
import type { Page } from '../main.js';

export const DEGRADED_ABOVE = 0.9;

export const workersPage: Page = (root) => {
  const body = h('tbody');
  root.append(
    h('h1', {}, 'Workers'),
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
            ['worker', 'host / pid', 'types', 'utilization', 'health', 'last seen'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
  );
  return every(2000, async () => {
    const [workers, running] = await Promise.all([
      admin<WorkerRecord[]>('GET', '/workers?seenWithinSeconds=60'),
      api<{ tasks: Task[] }>('GET', '/api/v1/tasks?status=RUNNING,CANCEL_REQUESTED&limit=1000'),
    ]);
    const held = new Map<string, number>();
    for (const task of running.tasks) if (task.leaseOwner) held.set(task.leaseOwner, (held.get(task.leaseOwner) ?? 0) + 1);
    clear(
      body,
      workers.length === 0
        ? h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No worker seen in the last minute.'))
        : workers.map((worker) => {
            const active = held.get(worker.workerId) ?? 0;
            const utilization = worker.concurrency > 0 ? active / worker.concurrency : 0;
            const health = utilization > DEGRADED_ABOVE ? 'DEGRADED' : 'UP';
            return h(
              'tr',
              { 'data-worker': worker.workerId, 'data-health': health },
              h('td', { class: 'mono' }, worker.workerId),
              h('td', {}, `${worker.host} / ${worker.pid}`),
              h('td', {}, worker.taskTypes.join(', ')),
              h(
                'td',
                {},
                h('meter', { min: 0, max: 1, high: DEGRADED_ABOVE, value: utilization, 'aria-label': 'Utilization' }),
                ` ${active} / ${worker.concurrency} (${Math.round(utilization * 100)} %)`,
              ),
              h('td', {}, h('span', { class: `badge ${health === 'UP' ? 's-success' : 's-failed'}` }, health)),
              h('td', {}, when(worker.lastSeenAt)),
            );
          }),
    );
  });
};
