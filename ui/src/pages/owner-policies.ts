/**
 * Owner (tenant) policies on the Policies page: a row per OWNER:<owner>
 * policy (its concurrency limit and enabled switch: attempts and retry delay
 * are per type), and a form that adds one. While any owner policy exists,
 * workers take turns across owners at each claim.
 */
import { admin, type Policy } from '../api.js';
import { confirmAction, guarded, h, notify } from '../dom.js';
import { rateCell } from './rate-policies.js';

export const OWNER_PREFIX = 'OWNER:';

const ownerPath = (owner: string): string => `/policy/owner/${encodeURIComponent(owner)}`;

export function ownerRow(policy: Policy, reload: () => Promise<void>): HTMLElement {
  const owner = policy.policyKey.slice(OWNER_PREFIX.length);
  const name = `owner ${owner}`;
  const limit = h('input', {
    type: 'number',
    min: 1,
    name: 'maxConcurrency',
    value: policy.maxConcurrency ?? '',
    placeholder: 'default',
    'aria-label': `Max concurrency of ${name}`,
    class: 'narrow',
  });
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: policy.enabled, 'aria-label': `${name} enabled` });
  const rate = rateCell(name, policy);
  const save = () =>
    guarded(async () => {
      await admin('PUT', ownerPath(owner), {
        maxConcurrency: limit.value.trim() === '' ? null : Number(limit.value),
        enabled: enabled.checked,
        ...rate.value(),
      });
      notify(`Saved the ${name} policy: workers apply it at their next claim`);
      await reload();
    });
  const reset = () =>
    guarded(async () => {
      if (!(await confirmAction(`Remove the ${name} policy?`, 'Remove'))) return;
      await admin('DELETE', ownerPath(owner));
      notify(`Removed the ${name} policy`);
      await reload();
    });
  return h(
    'tr',
    { 'data-policy': policy.policyKey },
    h('th', { scope: 'row' }, name),
    h('td', { class: 'use muted' }, '—'),
    h('td', {}, limit),
    h('td', { class: 'muted' }, 'per type'),
    h('td', { class: 'muted' }, 'per type'),
    rate.cell,
    h('td', {}, enabled),
    h(
      'td',
      { class: 'row' },
      h('button', { type: 'button', onclick: () => void save() }, 'Save'),
      h('button', { type: 'button', class: 'secondary', onclick: () => void reset() }, 'Remove'),
    ),
  );
}

/** Adds (or changes) an owner's concurrency limit. */
export function ownerForm(reload: () => Promise<void>): HTMLElement {
  // Visible labels (a placeholder is no label: it vanishes while typing, and the number field had none at all).
  const owner = h('input', { type: 'text', name: 'owner', required: true, maxlength: 255, placeholder: 'e.g. acme' });
  const limit = h('input', { type: 'number', min: 1, name: 'ownerMaxConcurrency', required: true, class: 'narrow' });
  const form = h(
    'form',
    { class: 'card row', 'aria-label': 'Add an owner limit' },
    h('strong', {}, 'Owner limit'),
    h('label', { class: 'field' }, h('span', {}, 'Owner'), owner),
    h('label', { class: 'field' }, h('span', {}, 'Owner max concurrency'), limit),
    h('button', { type: 'submit' }, 'Save owner limit'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      await admin('PUT', ownerPath(owner.value.trim()), { maxConcurrency: Number(limit.value) });
      notify(`Saved the owner ${owner.value.trim()} policy: workers apply it at their next claim`);
      owner.value = '';
      limit.value = '';
      await reload();
    });
  });
  return form;
}
