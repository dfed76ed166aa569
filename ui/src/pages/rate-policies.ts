/**
 * Rate limits on the Policies page (issue 27): the rate cell of every policy
 * row (N starts per period; both empty: no rate), a row per rate key policy
 * (KEY:<key>, or KEY:<group>:* for every key of a group, each with a budget of
 * its own), and a form that adds one. Every worker applies a change at its next
 * claim.
 */
import { admin, type Policy } from '../api.js';
import { confirmAction, guarded, h, notify } from '../dom.js';

export const KEY_PREFIX = 'KEY:';

const keyPath = (rateKey: string): string => `/policy/key/${encodeURIComponent(rateKey)}`;

export interface RateCell {
  cell: HTMLElement;
  /** The change to send: both null when either field is empty (no rate). */
  value(): { rateLimit: number | null; ratePeriodMs: number | null };
}

/** Two number fields, N and the period in ms, for the policy called `name`. */
export function rateCell(name: string, policy: Policy | undefined): RateCell {
  const limit = h('input', {
    type: 'number',
    min: 1,
    name: 'rateLimit',
    value: policy?.rateLimit ?? '',
    placeholder: 'none',
    'aria-label': `Rate limit of ${name}`,
    class: 'narrow',
  });
  const period = h('input', {
    type: 'number',
    min: 1,
    name: 'ratePeriodMs',
    value: policy?.ratePeriodMs ?? '',
    placeholder: 'ms',
    'aria-label': `Rate period (ms) of ${name}`,
    class: 'narrow',
  });
  return {
    cell: h('td', { class: 'row' }, limit, h('span', { class: 'muted' }, ' per '), period),
    value: () =>
      limit.value.trim() === '' || period.value.trim() === ''
        ? { rateLimit: null, ratePeriodMs: null }
        : { rateLimit: Number(limit.value), ratePeriodMs: Number(period.value) },
  };
}

export function keyRow(policy: Policy, reload: () => Promise<void>): HTMLElement {
  const rateKey = policy.policyKey.slice(KEY_PREFIX.length);
  const name = `rate key ${rateKey}`;
  const rate = rateCell(name, policy);
  const save = () =>
    guarded(async () => {
      await admin('PUT', keyPath(rateKey), rate.value());
      notify(`Saved the ${name} policy: workers apply it at their next claim`);
      await reload();
    });
  const remove = () =>
    guarded(async () => {
      if (!(await confirmAction(`Remove the ${name} policy?`, 'Remove'))) return;
      await admin('DELETE', keyPath(rateKey));
      notify(`Removed the ${name} policy`);
      await reload();
    });
  return h(
    'tr',
    { 'data-policy': policy.policyKey },
    h('th', { scope: 'row' }, name),
    h('td', { class: 'use muted' }, '—'),
    h('td', { class: 'muted' }, '—'),
    h('td', { class: 'muted' }, 'per type'),
    h('td', { class: 'muted' }, 'per type'),
    rate.cell,
    h('td', { class: 'muted' }, '—'),
    h(
      'td',
      { class: 'row' },
      h('button', { type: 'button', onclick: () => void save() }, 'Save'),
      h('button', { type: 'button', class: 'secondary', onclick: () => void remove() }, 'Remove'),
    ),
  );
}

/** Adds (or changes) a rate key's rate. */
export function keyForm(reload: () => Promise<void>): HTMLElement {
  const rateKey = h('input', { type: 'text', name: 'rateKey', required: true, maxlength: 255, placeholder: 'e.g. partner:* or partner:42' });
  const limit = h('input', { type: 'number', min: 1, name: 'keyRateLimit', required: true, class: 'narrow' });
  const period = h('input', { type: 'number', min: 1, name: 'keyRatePeriodMs', required: true, class: 'narrow' });
  const form = h(
    'form',
    { class: 'card row', 'aria-label': 'Add a rate key limit' },
    h('strong', {}, 'Rate key limit'),
    h('label', { class: 'field' }, h('span', {}, 'Rate key'), rateKey),
    h('label', { class: 'field' }, h('span', {}, 'Starts'), limit),
    h('label', { class: 'field' }, h('span', {}, 'Per (ms)'), period),
    h('button', { type: 'submit' }, 'Save rate key limit'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void guarded(async () => {
      const key = rateKey.value.trim();
      await admin('PUT', keyPath(key), { rateLimit: Number(limit.value), ratePeriodMs: Number(period.value) });
      notify(`Saved the rate key ${key} policy: workers apply it at their next claim`);
      rateKey.value = '';
      limit.value = '';
      period.value = '';
      await reload();
    });
  });
  return form;
}
