/**
 * Event subscriptions (fan-out by event): which task types a publish of an
 * event creates a task in, with each subscription's priority and max
 * attempts. Admins add and remove them here; a change applies to the next
 * publish (one that already read a subscription still creates its task).
 */
import { admin, type Subscription } from '../api.js';
import { clear, confirmAction, every, guarded, h, notify, tableCard, when } from '../dom.js';
import type { Page } from '../main.js';

const query = (s: { event: string; taskType: string }): string => `event=${encodeURIComponent(s.event)}&taskType=${encodeURIComponent(s.taskType)}`;

function subscriptionRow(subscription: Subscription, isAdmin: boolean, reload: () => Promise<void>): HTMLElement {
  const name = `${subscription.taskType} on ${subscription.event}`;
  const remove = () =>
    guarded(async () => {
      if (!(await confirmAction(`Unsubscribe ${subscription.taskType} from ${subscription.event}? The tasks publishes created stay.`, 'Unsubscribe'))) return;
      await admin('DELETE', `/subscriptions?${query(subscription)}`);
      notify(`Unsubscribed ${name}`);
      await reload();
    });
  return h(
    'tr',
    { 'data-subscription': `${subscription.event} ${subscription.taskType}` },
    h('th', { scope: 'row' }, subscription.event),
    h('td', {}, subscription.taskType),
    h('td', {}, subscription.priority ?? '—'),
    h('td', {}, subscription.maxAttempts ?? '—'),
    h('td', {}, when(subscription.updatedAt)),
    isAdmin
      ? h(
          'td',
          { class: 'row' },
          h('button', { type: 'button', class: 'secondary', onclick: () => void remove(), 'aria-label': `Unsubscribe ${name}` }, 'Unsubscribe'),
        )
      : h('td'),
  );
}

/** Adds a subscription (or changes the options of an existing one). */
function subscriptionForm(reload: () => Promise<void>): HTMLElement {
  const event = h('input', {
    type: 'text',
    name: 'event',
    required: true,
    maxlength: 100,
    pattern: '[A-Za-z0-9][A-Za-z0-9._/\\-]*',
    placeholder: 'e.g. order.created',
  });
  const taskType = h('input', { type: 'text', name: 'taskType', required: true, maxlength: 200, placeholder: 'e.g. send-receipt' });
  const priority = h('input', { type: 'number', name: 'priority', min: -1000, max: 1000, class: 'narrow', placeholder: 'default' });
  const maxAttempts = h('input', { type: 'number', name: 'maxAttempts', min: 1, max: 100, class: 'narrow', placeholder: 'default' });
  const optional = (input: HTMLInputElement): number | null => (input.value.trim() === '' ? null : Number(input.value));
  const form = h(
    'form',
    { class: 'card row', 'aria-label': 'Add a subscription' },
    h('strong', {}, 'Subscribe'),
    h('label', { class: 'field' }, h('span', {}, 'Event'), event),
    h('label', { class: 'field' }, h('span', {}, 'Task type'), taskType),
    h('label', { class: 'field' }, h('span', {}, 'Priority'), priority),
    h('label', { class: 'field' }, h('span', {}, 'Max attempts'), maxAttempts),
    h('button', { type: 'submit' }, 'Subscribe'),
  );
  form.addEventListener('submit', (submitted) => {
    submitted.preventDefault();
    void guarded(async () => {
      const body = { event: event.value.trim(), taskType: taskType.value.trim(), priority: optional(priority), maxAttempts: optional(maxAttempts) };
      await admin('PUT', '/subscriptions', body);
      notify(`Subscribed ${body.taskType} to ${body.event}: the next publish creates its task`);
      for (const input of [event, taskType, priority, maxAttempts]) input.value = '';
      await reload();
    });
  });
  return form;
}

export const subscriptionsPage: Page = (root, { me }) => {
  const isAdmin = me.role === 'admin';
  const body = h('tbody');
  const empty = h('p', { class: 'muted' });
  const columns = ['event', 'task type', 'priority', 'max attempts', 'updated', ''];
  const load = async (): Promise<void> => {
    const subscriptions = await admin<Subscription[]>('GET', '/subscriptions');
    clear(
      body,
      subscriptions.map((subscription) => subscriptionRow(subscription, isAdmin, load)),
    );
    empty.textContent = subscriptions.length === 0 ? 'No subscriptions: a publish of any event creates nothing.' : '';
  };
  root.append(
    h('h1', {}, 'Subscriptions'),
    h('p', { class: 'muted' }, 'A publish of an event creates one task in every task type subscribed to it, in one transaction.'),
    ...(isAdmin ? [subscriptionForm(load)] : []),
    tableCard(columns, body),
    empty,
  );
  return every(5000, load);
};
