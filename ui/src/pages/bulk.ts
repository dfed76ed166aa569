/**
 * Bulk actions (POST /api/v1/bulk/<action>, client/bulk.ts): the Tasks list's
 * action bar over the rows selected or "all matching" the list's filter — a
 * dry run's count first, in a confirmation, then the operation started and
 * its progress followed over Server-Sent Events — and the Bulk operations
 * page (#/bulk): who started each, when, its filter, its progress; Cancel on
 * a running one. A user gets cancel, pause and resume over its own tasks; the
 * server confines and refuses the rest anyway.
 */
import { api, isOperator, type Me } from '../api.js';
import { clear, every, h, notify, statusBadge, when } from '../dom.js';
import type { Page } from '../main.js';

export interface BulkOperation {
  id: string;
  action: string;
  filter: Record<string, unknown>;
  statuses: string[];
  status: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  matched: number;
  processed: number;
  changed: number;
  cancelRequested: boolean;
  error: string | null;
  actor: { id: string; name?: string | null };
  owner: string | null;
  createdAt: string;
  finishedAt: string | null;
}

interface DryRun {
  matched: number;
  statuses: string[];
}

const USER_ACTIONS = ['cancel', 'pause', 'resume'];
const OPERATOR_ACTIONS = ['retry', 'replay', 'reschedule', 'delete'];
const PAST: Record<string, string> = {
  retry: 'retried',
  cancel: 'cancelled',
  pause: 'paused',
  resume: 'resumed',
  reschedule: 'rescheduled',
  replay: 'replayed',
  delete: 'deleted',
};

/** The Tasks list's URL filter as a bulk filter (the API's names; payload prefixes as `path^=value`). */
export function filterOfParams(params: URLSearchParams): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  for (const key of ['type', 'owner', 'idempotencyKey', 'idempotencyKeyPrefix', 'createdAfter', 'createdBefore', 'errorCode']) {
    const value = params.get(key);
    if (value) filter[key] = value;
  }
  const status = params.get('status');
  if (status) filter.status = status.split(',');
  const payload = [...params.getAll('payload'), ...params.getAll('payloadPrefix').map((term) => term.replace('=', '^='))];
  if (payload.length > 0) filter.payload = payload;
  return filter;
}

function progressOf(op: BulkOperation): HTMLElement {
  return h(
    'span',
    { class: 'row', 'data-bulk-progress': op.id },
    h('progress', { max: Math.max(op.matched, 1), value: Math.min(op.processed, op.matched), 'aria-label': `${op.processed} of ${op.matched}` }),
    h('span', { class: 'small' }, `${op.processed}/${op.matched} · ${op.changed} ${PAST[op.action] ?? 'changed'}`),
    statusBadge(op.status),
  );
}

/** Follows an operation over SSE until it ends; `onChange` after each batch. Returns the stop. */
export function follow(id: string, onChange: (op: BulkOperation) => void): () => void {
  const source = new EventSource(`/api/v1/bulk/${id}/events`);
  source.addEventListener('progress', (event) => onChange(JSON.parse((event as MessageEvent<string>).data) as BulkOperation));
  source.addEventListener('end', () => source.close());
  return () => source.close();
}

/** The confirmation: the dry run's count and statuses; reschedule asks for the new start. Resolves with the extra body, or null. */
function confirmBulk(action: string, dry: DryRun, what: string): Promise<Record<string, unknown> | null> {
  return new Promise((resolve) => {
    const at = h('input', { type: 'datetime-local', name: 'availableAt', required: true, 'aria-label': 'New start time' });
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-label': 'Confirm the bulk action' },
      h('p', { 'data-bulk-count': String(dry.matched) }, `${dry.matched} task(s) ${what} (${dry.statuses.join(', ')}) would be ${PAST[action]}.`),
      action === 'reschedule' ? h('label', { class: 'field' }, h('span', {}, 'Start at'), at) : null,
      h('p', { class: 'muted small' }, 'It runs in the background in batches; tasks that change meanwhile are left alone.'),
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close('no') }, 'Go back'),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'data-confirm': '',
            disabled: dry.matched === 0,
            onclick: () => {
              if (action === 'reschedule' && !at.value) return at.reportValidity();
              dialog.close('yes');
            },
          },
          `${action[0]!.toUpperCase()}${action.slice(1)} ${dry.matched}`,
        ),
      ),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (dialog.returnValue !== 'yes') return resolve(null);
      resolve(action === 'reschedule' ? { availableAt: new Date(at.value).toISOString() } : {});
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/**
 * The action bar above the Tasks list: the rows `selected()` gives, or every task matching the list's filter.
 * `changed` runs when an operation ends (the list reloads).
 */
export function bulkBar(me: Me, params: URLSearchParams, selected: () => string[], changed: () => void): HTMLElement {
  const scope = h(
    'select',
    { name: 'bulkScope', 'aria-label': 'Act on' },
    h('option', { value: 'selected' }, 'the selected rows'),
    h('option', { value: 'matching' }, 'all tasks matching the filter'),
  );
  const progress = h('span', { class: 'bulk-progress', role: 'status' });
  const actions = [...USER_ACTIONS, ...(isOperator(me) ? OPERATOR_ACTIONS : [])];
  const run = async (action: string): Promise<void> => {
    const ids = selected();
    const matching = scope.value === 'matching';
    if (!matching && ids.length === 0) return notify('Select rows first, or choose "all tasks matching the filter".', 'error');
    const filter = matching ? filterOfParams(params) : { ids };
    const dry = await api<DryRun>('POST', `/api/v1/bulk/${action}`, { filter, dryRun: true });
    const extra = await confirmBulk(action, dry, matching ? 'matching the filter' : 'selected');
    if (!extra) return;
    const { operation } = await api<{ operation: BulkOperation }>('POST', `/api/v1/bulk/${action}`, { filter, ...extra });
    clear(progress, progressOf(operation));
    follow(operation.id, (op) => {
      clear(progress, progressOf(op), h('a', { href: '#/bulk' }, 'all operations'));
      if (op.status !== 'RUNNING') {
        notify(
          `${op.action}: ${op.changed} of ${op.processed} task(s) ${PAST[op.action]}; ${op.status.toLowerCase()}`,
          op.status === 'FAILED' ? 'error' : 'ok',
        );
        changed();
      }
    });
  };
  return h(
    'div',
    { class: 'card row bulk-bar', role: 'group', 'aria-label': 'Bulk actions' },
    h('span', {}, 'Act on'),
    scope,
    actions.map((action) =>
      h(
        'button',
        {
          type: 'button',
          class: action === 'delete' || action === 'cancel' ? 'danger' : 'secondary',
          'data-bulk': action,
          onclick: () => void run(action).catch((error: Error) => notify(error.message, 'error')),
        },
        `${action[0]!.toUpperCase()}${action.slice(1)}`,
      ),
    ),
    progress,
  );
}

/** #/bulk: the operations, newest first, refreshed every 2 s; Cancel on a running one. */
export const bulkPage: Page = (root) => {
  const body = h('tbody');
  root.append(
    h('h1', {}, 'Bulk operations'),
    h(
      'div',
      { class: 'card scroll' },
      h(
        'table',
        { class: 'bulk' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['started', 'action', 'filter', 'by', 'progress', ''].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
  );
  return every(2000, async () => {
    const { operations } = await api<{ operations: BulkOperation[] }>('GET', '/api/v1/bulk?limit=100');
    clear(
      body,
      operations.length === 0
        ? h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No bulk operations yet: select tasks on Tasks.'))
        : operations.map((op) =>
            h(
              'tr',
              { 'data-id': op.id, 'data-status': op.status },
              h('td', { title: op.id }, when(op.createdAt)),
              h('td', {}, op.action),
              h('td', { class: 'mono small' }, JSON.stringify(op.filter)),
              h('td', {}, op.actor.name ?? op.actor.id),
              h('td', {}, progressOf(op), op.error ? h('div', { class: 'small error' }, op.error) : null),
              h(
                'td',
                {},
                op.status === 'RUNNING' && !op.cancelRequested
                  ? h(
                      'button',
                      {
                        type: 'button',
                        class: 'secondary',
                        onclick: () =>
                          void api('POST', `/api/v1/bulk/${op.id}/cancel`)
                            .then(() => notify(`Stopping ${op.action} after its current batch.`))
                            .catch((error: Error) => notify(error.message, 'error')),
                      },
                      'Stop',
                    )
                  : '',
              ),
            ),
          ),
    );
  });
};
