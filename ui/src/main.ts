/**
 * The dashboard: log in, then a hash-routed page per view. Pages get the
 * caller (role and owner) so they offer only what the role may do; the
 * server refuses the rest anyway.
 */
import './style.css';
import { api, isOperator, type Me } from './api.js';
import { clear, h } from './dom.js';
import { loginPage } from './pages/login.js';
import { overviewPage } from './pages/overview.js';
import { tasksPage } from './pages/tasks.js';
import { taskPage } from './pages/task.js';
import { flowPage } from './pages/flow.js';
import { deadLettersPage } from './pages/dead-letters.js';
import { policiesPage } from './pages/policies.js';
import { schedulesPage } from './pages/schedules.js';
import { subscriptionsPage } from './pages/subscriptions.js';
import { sequencesPage } from './pages/sequences.js';
import { workersPage } from './pages/workers.js';
import { bulkPage } from './pages/bulk.js';
import { taskTypePage, typesPage } from './pages/task-type.js';

export interface PageContext {
  me: Me;
  params: URLSearchParams;
  path: string[];
}
export type Page = (root: HTMLElement, context: PageContext) => (() => void) | void;

interface Route {
  name: string;
  label: string;
  page: Page;
  operator: boolean;
  nav: boolean;
}
const ROUTES: Route[] = [
  { name: 'overview', label: 'Overview', page: overviewPage, operator: true, nav: true },
  { name: 'tasks', label: 'Tasks', page: tasksPage, operator: false, nav: true },
  { name: 'task', label: 'Task', page: taskPage, operator: false, nav: false },
  { name: 'flow', label: 'Flow', page: flowPage, operator: false, nav: false },
  { name: 'types', label: 'Types', page: typesPage, operator: true, nav: true },
  { name: 'type', label: 'Type', page: taskTypePage, operator: true, nav: false },
  { name: 'dead-letters', label: 'Dead letters', page: deadLettersPage, operator: true, nav: true },
  { name: 'policies', label: 'Policies', page: policiesPage, operator: true, nav: true },
  { name: 'schedules', label: 'Schedules', page: schedulesPage, operator: true, nav: true },
  { name: 'subscriptions', label: 'Subscriptions', page: subscriptionsPage, operator: true, nav: true },
  { name: 'sequences', label: 'Sequences', page: sequencesPage, operator: false, nav: true },
  { name: 'bulk', label: 'Bulk', page: bulkPage, operator: false, nav: true },
  { name: 'workers', label: 'Workers', page: workersPage, operator: true, nav: true },
];

const app = document.getElementById('app')!;
let me: Me | null = null;
let cleanup: (() => void) | void;

function shell(current: Me, active: string): HTMLElement {
  const links = ROUTES.filter((r) => r.nav && (!r.operator || isOperator(current))).map((r) =>
    h('a', { href: `#/${r.name}`, ...(r.name === active ? { 'aria-current': 'page' } : {}) }, r.label),
  );
  const logout = h('button', { type: 'button', class: 'secondary', onclick: () => void logOut() }, 'Log out');
  // Under 600 px the links fold behind a Menu button (style.css); a page change draws the shell closed again.
  const nav = h('nav', { 'aria-label': 'Pages', id: 'pages' }, links);
  const menu = h('button', { type: 'button', class: 'secondary menu', 'aria-expanded': 'false', 'aria-controls': 'pages' }, 'Menu');
  menu.addEventListener('click', () => menu.setAttribute('aria-expanded', String(nav.classList.toggle('open'))));
  return h(
    'header',
    { class: 'top' },
    h('a', { class: 'brand', href: '#/' }, 'tasklease'),
    menu,
    nav,
    h('span', { class: 'who' }, `${current.name} · ${current.role}${current.owner ? ` (${current.owner})` : ''}`),
    logout,
  );
}

function render(): void {
  if (typeof cleanup === 'function') cleanup();
  cleanup = undefined;
  if (!me) {
    clear(app, h('main', { id: 'main' }));
    cleanup = loginPage(app.querySelector('main')!, (who) => {
      me = who;
      render();
    });
    return;
  }
  const [pathPart = '', query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const path = pathPart.split('/').filter(Boolean).map(decodeURIComponent);
  const fallback = isOperator(me) ? 'overview' : 'tasks';
  const detail = path[1] ? ({ tasks: 'task', flows: 'flow', types: 'type' } as Record<string, string>)[path[0] ?? ''] : undefined;
  let route = ROUTES.find((r) => r.name === (detail ?? path[0] ?? fallback));
  if (!route || (route.operator && !isOperator(me))) route = ROUTES.find((r) => r.name === fallback)!;
  const main = h('main', { id: 'main', tabindex: '-1' });
  const section = ({ task: 'tasks', flow: 'tasks', type: 'types' } as Record<string, string>)[route.name] ?? route.name;
  clear(app, shell(me, section), h('p', { id: 'notice', class: 'notice', role: 'status' }), main);
  cleanup = route.page(main, { me, params: new URLSearchParams(query), path });
}

async function logOut(): Promise<void> {
  await api('DELETE', '/api/v1/session').catch(() => undefined);
  me = null;
  render();
}

window.addEventListener('hashchange', render);
window.addEventListener('tasklease:logged-out', () => {
  if (me) {
    me = null;
    render();
  }
});
me = await api<Me>('GET', '/api/v1/session').catch(() => null);
render();
