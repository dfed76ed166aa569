/**
 * Policies: the global and per-type limits, attempts, retry delay and the
 * enabled switch, saved live (every worker applies them at its next claim),
 * with what runs against each limit right now; the per-owner (tenant)
 * limits, with a form to add one; and rates (N starts per period) on any of
 * them and per rate key (rate-policies.ts). An adaptive type's row says so
 * ("adaptive: 7 (2..20)"; a limit saved here is an operator override) and
 * the trail of its limit changes follows the table.
 */
import { admin, type AdaptiveState, type LimitUse, type Policy, type Stats } from '../api.js';
import { adaptiveLabel, adaptiveTrail } from './adaptive.js';
import { OWNER_PREFIX, ownerForm, ownerRow } from './owner-policies.js';
import { KEY_PREFIX, keyForm, keyRow, rateCell } from './rate-policies.js';
import { clear, confirmAction, every, guarded, h, notify, typeLink } from '../dom.js';
import type { Page } from '../main.js';

const numberOrNull = (input: HTMLInputElement): number | null => (input.value.trim() === '' ? null : Number(input.value));

export function policyRow(
  name: string,
  taskType: string | null,
  policy: Policy | undefined,
  use: LimitUse,
  reload: () => Promise<void>,
  adaptive?: AdaptiveState,
): HTMLElement {
  const path = taskType === null ? '/policy/global' : `/policy/type/${encodeURIComponent(taskType)}`;
  const input = (field: string, value: number | null, label: string) =>
    h('input', {
      type: 'number',
      min: field === 'retryBaseDelayMs' ? 0 : 1,
      name: field,
      value: value ?? '',
      placeholder: 'default',
      'aria-label': `${label} of ${name}`,
      class: 'narrow',
    });
  const limit = input('maxConcurrency', policy?.maxConcurrency ?? null, 'Max concurrency');
  const attempts = input('maxAttempts', policy?.maxAttempts ?? null, 'Max attempts');
  const delay = input('retryBaseDelayMs', policy?.retryBaseDelayMs ?? null, 'Retry base delay (ms)');
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: policy?.enabled ?? true, 'aria-label': `${name} enabled` });
  const rate = rateCell(name, policy);
  const save = () =>
    guarded(async () => {
      await admin('PUT', path, {
        maxConcurrency: numberOrNull(limit),
        maxAttempts: numberOrNull(attempts),
        retryBaseDelayMs: numberOrNull(delay),
        enabled: enabled.checked,
        ...rate.value(),
      });
      notify(`Saved the ${name} policy: workers apply it at their next claim`);
      await reload();
    });
  const reset = () =>
    guarded(async () => {
      if (!(await confirmAction(`Reset the ${name} policy to the workers' defaults?`, 'Reset'))) return;
      await admin('DELETE', path);
      notify(`Reset the ${name} policy`);
      await reload();
    });
  return h(
    'tr',
    { 'data-policy': taskType ?? 'GLOBAL' },
    h('th', { scope: 'row' }, taskType === null ? name : typeLink(taskType)),
    h(
      'td',
      { class: 'use' },
      h('meter', { min: 0, max: use.limit, value: use.running, 'aria-label': `${use.running} running of ${use.limit}` }),
      h('span', { 'data-running': use.running }, ` ${use.running} / ${use.limit}`),
    ),
    h('td', {}, limit, adaptive ? adaptiveLabel(adaptive) : null),
    h('td', {}, attempts),
    h('td', {}, delay),
    rate.cell,
    h('td', {}, enabled),
    h(
      'td',
      { class: 'row' },
      h('button', { type: 'button', onclick: () => void save() }, 'Save'),
      policy ? h('button', { type: 'button', class: 'secondary', onclick: () => void reset() }, 'Reset') : null,
    ),
  );
}

export const policiesPage: Page = (root) => {
  const body = h('tbody');
  const uses = h('p', { class: 'muted' });
  const trail = h('div');
  root.append(
    h('h1', {}, 'Policies'),
    h('p', { class: 'muted' }, "Empty fields use the workers' defaults. Changes apply across the cluster at each worker's next claim."),
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
            ['policy', 'running / limit', 'max concurrency', 'max attempts', 'retry base delay (ms)', 'rate (starts per ms)', 'enabled', ''].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        body,
      ),
    ),
    uses,
    trail,
    ownerForm(() => load(true)),
    keyForm(() => load(true)),
  );
  let editing = false;
  body.addEventListener('focusin', () => {
    editing = true;
  });
  body.addEventListener('focusout', () => {
    editing = false;
  });
  const load = async (force = false): Promise<void> => {
    const [policies, stats, adaptive] = await Promise.all([
      admin<Policy[]>('GET', '/policies'),
      admin<Stats>('GET', '/stats'),
      admin<AdaptiveState[]>('GET', '/adaptive'),
    ]);
    const reload = () => load(true);
    // Typing in a field must not be undone by the refresh: while one has focus, only the use figures move.
    if (editing && !force) {
      for (const type of stats.types)
        body.querySelector(`[data-policy="${CSS.escape(type.taskType)}"] [data-running]`)?.replaceChildren(` ${type.running} / ${type.limit}`);
      return;
    }
    clear(
      body,
      policyRow(
        'Global',
        null,
        policies.find((p) => p.policyKey === 'GLOBAL'),
        stats.global,
        reload,
      ),
      stats.types.map((type) =>
        policyRow(
          type.taskType,
          type.taskType,
          policies.find((p) => p.taskType === type.taskType),
          type,
          reload,
          adaptive.find((a) => a.taskType === type.taskType),
        ),
      ),
      policies.filter((p) => p.policyKey.startsWith(OWNER_PREFIX)).map((p) => ownerRow(p, reload)),
      policies.filter((p) => p.policyKey.startsWith(KEY_PREFIX)).map((p) => keyRow(p, reload)),
    );
    uses.textContent = `${stats.workers.live} live worker(s), ${stats.workers.concurrency} slots.`;
    clear(trail, await adaptiveTrail(adaptive));
  };
  return every(2000, () => load());
};
