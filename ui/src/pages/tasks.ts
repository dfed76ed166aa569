/**
 * Tasks: filter by type, status, owner (operators) and creation time, page
 * with the API's cursor, and search by id or idempotency key. The filters live in the URL
 * (#/tasks?type=…&status=…), so a filtered view can be linked and reloaded.
 */
import { api, ApiError, isOperator, STATUSES, type Task } from '../api.js';
import { clear, every, h, shortId, snippet, statusBadge, typeLink, when } from '../dom.js';
import type { Page } from '../main.js';
import { bulkBar } from './bulk.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function field(label: string, control: HTMLElement): HTMLElement {
  return h('label', { class: 'field' }, h('span', {}, label), control);
}

function progressCell(task: Task): HTMLElement | string {
  const p = task.progress;
  if (!p || p.total <= 0) return '—';
  return h('progress', { max: p.total, value: p.processed, 'aria-label': `${p.processed} of ${p.total}` });
}

/** datetime-local (browser's zone) → ISO for the API, and back. */
const toIso = (local: string): string => (local ? new Date(local).toISOString() : '');
const toLocal = (iso: string | null): string =>
  iso ? new Date(new Date(iso).getTime() - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16) : '';

/** Whether a task with this id is visible to us (a key may look like an id, too). */
async function taskExists(id: string): Promise<boolean> {
  try {
    await api('GET', `/api/v1/tasks/${id}`);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

/** The search's URL parameters (kept when the filters change). */
const SEARCH_PARAMS = ['idempotencyKey', 'idempotencyKeyPrefix', 'payload', 'payloadPrefix'] as const;

/** A payload filter term: `order.id=42`, `customer.name^=Ada` (starts with); a value with spaces is "quoted". */
const PAYLOAD_TERM = /^([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)(\^?=)(.*)$/s;

/**
 * The search box's text as URL parameters: terms split on spaces outside
 * "quotes"; `path=value` filters a payload field (the API reads 42, true and
 * "42" as JSON), `path^=text` a string field's prefix, `inv-*` an idempotency
 * key prefix; otherwise the whole text is one exact idempotency key. Null
 * when the text is not made of filter terms only.
 */
export function searchTerms(text: string): URLSearchParams | null {
  const terms = text.match(/(?:[^\s"]+|"(?:[^"\\]|\\.)*")+/g) ?? [];
  const found = new URLSearchParams();
  for (const term of terms) {
    const match = PAYLOAD_TERM.exec(term);
    if (match) {
      const [, path, op, raw] = match;
      const value = op === '^=' && /^".*"$/s.test(raw!) ? (JSON.parse(raw!) as string) : raw!;
      found.append(op === '^=' ? 'payloadPrefix' : 'payload', `${path}=${value}`);
    } else if (terms.length === 1 && term.length > 1 && term.endsWith('*') && !term.slice(0, -1).includes('*')) {
      found.set('idempotencyKeyPrefix', term.slice(0, -1));
    } else {
      return null;
    }
  }
  return found;
}

/** The search box's text for the URL's search parameters. */
function searchText(params: URLSearchParams): string {
  const quoted = (value: string): string => (/[\s"]/.test(value) ? JSON.stringify(value) : value);
  const terms = [...params.getAll('payload'), ...params.getAll('payloadPrefix').map((f) => f.replace(/=(.*)$/s, (_m, v: string) => `^=${quoted(v)}`))];
  const keyPrefix = params.get('idempotencyKeyPrefix');
  if (keyPrefix) terms.push(`${keyPrefix}*`);
  return terms.length > 0 ? terms.join(' ') : (params.get('idempotencyKey') ?? '');
}

/**
 * One box for an id, an idempotency key, a key prefix (`inv-*`) or payload
 * filters (`order.id=42 customer.name^=Ada`): an id of a visible task opens
 * it; filter terms filter the list; anything else filters the list by exact
 * key (keys are free text, UUIDs included). An empty search drops them all.
 */
function searchForm(params: URLSearchParams): HTMLElement {
  const search = h('input', {
    name: 'search',
    type: 'search',
    value: searchText(params),
    placeholder: 'task id, idempotency key, inv-*, order.id=42',
    'aria-label': 'Search by task id, idempotency key or payload field',
    maxlength: 1000,
  });
  const form = h(
    'form',
    { class: 'inline', role: 'search', 'aria-label': 'Find a task' },
    search,
    h('button', { type: 'submit', class: 'secondary' }, 'Search'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = search.value.trim();
    void (async () => {
      if (UUID.test(text) && (await taskExists(text))) {
        location.hash = `#/tasks/${text}`;
        return;
      }
      const next = new URLSearchParams(params);
      for (const key of SEARCH_PARAMS) next.delete(key);
      const terms = text ? searchTerms(text) : null;
      if (terms) for (const [key, value] of terms) next.append(key, value);
      else if (text) next.set('idempotencyKey', text);
      location.hash = `#/tasks?${next}`;
    })();
  });
  return form;
}

/** A tab per status with its count (of the type filtered on, in the caller's scope); "All" drops the status filter. */
function statusTabs(params: URLSearchParams, counts: Record<string, number>): HTMLElement[] {
  const current = params.get('status') ?? '';
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  const tab = (status: string, label: string, count: number): HTMLElement => {
    const next = new URLSearchParams(params);
    if (status) next.set('status', status);
    else next.delete('status');
    return h(
      'a',
      { href: `#/tasks?${next}`, 'data-tab': status || 'ALL', ...(status === current ? { 'aria-current': 'page' } : {}) },
      label,
      h('span', { class: 'count' }, count),
    );
  };
  return [
    tab('', 'All', total),
    ...STATUSES.filter((s) => (counts[s] ?? 0) > 0 || s === current).map((s) => tab(s, s.toLowerCase().replace('_', ' '), counts[s] ?? 0)),
  ];
}

export const tasksPage: Page = (root, { me, params }) => {
  const type = h('input', { name: 'type', value: params.get('type') ?? '', placeholder: 'any type' });
  const status = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'any status'),
    STATUSES.map((s) => h('option', { value: s, selected: params.get('status') === s }, s)),
  );
  const owner = h('input', { name: 'owner', value: params.get('owner') ?? '', placeholder: 'any owner' });
  const after = h('input', { name: 'createdAfter', type: 'datetime-local', value: toLocal(params.get('createdAfter')) });
  const before = h('input', { name: 'createdBefore', type: 'datetime-local', value: toLocal(params.get('createdBefore')) });
  const filters = h(
    'form',
    { class: 'card filters', role: 'search' },
    field('Type', type),
    field('Status', status),
    isOperator(me) ? field('Owner', owner) : null,
    field('Created after', after),
    field('Created before', before),
    h('button', { type: 'submit' }, 'Filter'),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    const set = (key: string, value: string): void => {
      if (value.trim()) next.set(key, value.trim());
    };
    set('type', type.value);
    set('status', status.value);
    set('owner', isOperator(me) ? owner.value : '');
    set('createdAfter', toIso(after.value));
    set('createdBefore', toIso(before.value));
    for (const key of SEARCH_PARAMS) for (const value of params.getAll(key)) next.append(key, value);
    location.hash = `#/tasks?${next}`;
  });
  const open = searchForm(params);

  const body = h('tbody');
  const pager = h('nav', { class: 'row pager', 'aria-label': 'Pages of tasks' });
  const cursors: (string | null)[] = [null];
  // Rows selected for a bulk action, kept across the first page's refreshes.
  const chosen = new Set<string>();
  const selectPage = h('input', {
    type: 'checkbox',
    'aria-label': 'Select every task on this page',
    onchange: () => {
      for (const box of body.querySelectorAll<HTMLInputElement>('input[data-select]')) {
        box.checked = selectPage.checked;
        if (box.checked) chosen.add(box.dataset.select!);
        else chosen.delete(box.dataset.select!);
      }
    },
  });
  const bar = bulkBar(
    me,
    params,
    () => [...chosen],
    () => void load(),
  );
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Task counts' });
  root.append(
    h('div', { class: 'row spread' }, h('h1', {}, 'Tasks'), open),
    filters,
    bar,
    tabs,
    h(
      'div',
      { class: 'card scroll' },
      h(
        'table',
        { class: 'tasks' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, selectPage),
            ['id', 'type', 'status', 'payload', 'last error', 'owner', 'created', 'attempts', 'progress'].map((c) => h('th', { scope: 'col' }, c)),
          ),
        ),
        body,
      ),
    ),
    pager,
  );

  const load = async (): Promise<void> => {
    const query = new URLSearchParams(params);
    query.set('limit', '25');
    const cursor = cursors[cursors.length - 1];
    if (cursor) query.set('cursor', cursor);
    const type = params.get('type');
    const [page, { counts }] = await Promise.all([
      api<{ tasks: Task[]; nextCursor: string | null }>('GET', `/api/v1/tasks?${query}`),
      api<{ counts: Record<string, number> }>('GET', `/api/v1/tasks/counts${type ? `?type=${encodeURIComponent(type)}` : ''}`),
    ]);
    clear(tabs, statusTabs(params, counts));
    clear(
      body,
      page.tasks.length === 0
        ? h('tr', {}, h('td', { colspan: 10, class: 'muted' }, 'No tasks match.'))
        : page.tasks.map((task) =>
            h(
              'tr',
              { 'data-id': task.id, 'data-status': task.status },
              h(
                'td',
                {},
                h('input', {
                  type: 'checkbox',
                  'data-select': task.id,
                  checked: chosen.has(task.id),
                  'aria-label': `Select task ${shortId(task.id)}`,
                  onchange: (event: Event) => {
                    if ((event.target as HTMLInputElement).checked) chosen.add(task.id);
                    else chosen.delete(task.id);
                  },
                }),
              ),
              h('td', {}, h('a', { href: `#/tasks/${task.id}`, class: 'mono', title: task.id }, shortId(task.id))),
              h('td', {}, isOperator(me) ? typeLink(task.taskType) : task.taskType),
              h('td', {}, statusBadge(task.status)),
              h('td', { class: 'mono small', 'data-payload': '' }, snippet(task.payload)),
              h('td', { 'data-error': '' }, task.lastErrorCode ?? '—'),
              h('td', { 'data-owner': '' }, task.owner ?? '—'),
              h('td', {}, when(task.createdAt)),
              h('td', {}, `${task.attemptCount - task.attemptBase} / ${task.maxAttempts}`),
              h('td', {}, progressCell(task)),
            ),
          ),
    );
    clear(
      pager,
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          disabled: cursors.length === 1,
          onclick: () => {
            cursors.pop();
            void load();
          },
        },
        'Previous',
      ),
      h('span', { class: 'muted' }, `page ${cursors.length}`),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          disabled: page.nextCursor === null,
          onclick: () => {
            cursors.push(page.nextCursor);
            void load();
          },
        },
        'Next',
      ),
    );
  };
  // The first page refreshes itself; later pages stay put while read.
  return every(3000, async () => {
    if (cursors.length === 1) await load();
  });
};
