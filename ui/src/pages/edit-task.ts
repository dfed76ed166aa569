/**
 * The task page's Edit dialog (PATCH /api/v1/tasks/:id): payload as JSON
 * text, priority, start time, deadline and max attempts of a waiting task.
 * Only what the viewer changed is sent, with the task's updatedAt as read: an
 * edit made meanwhile by someone else is refused (TASK_CHANGED), never
 * overwritten. An encrypted payload is not shown here (the server seals what
 * is sent); the field stays empty and the payload as it is unless one is typed.
 */
import { api, type Task } from '../api.js';
import { h } from '../dom.js';

/** The statuses an edit takes (the server's EDITABLE_STATUSES). */
export const EDITABLE = ['QUEUED', 'RETRY_WAIT', 'PAUSED', 'BLOCKED'];

const isSealed = (value: unknown): boolean => typeof value === 'object' && value !== null && (value as { $encrypted?: unknown }).$encrypted !== undefined;

function field(label: string, input: HTMLElement, hint?: string): HTMLElement {
  return h('label', { class: 'field' }, label, input, hint ? h('small', { class: 'muted' }, hint) : null);
}

/** The changes the form holds against `task`: only fields whose value differs; throws on text that is not what it must be. */
function changesOf(
  task: Task,
  form: Record<'payload' | 'priority' | 'availableAt' | 'deadlineAt' | 'maxAttempts', HTMLInputElement | HTMLTextAreaElement>,
  shownPayload: string,
): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  const payloadText = form.payload.value.trim();
  if (payloadText !== '' && payloadText !== shownPayload) {
    try {
      changes.payload = JSON.parse(payloadText);
    } catch (error) {
      throw new Error(`The payload is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (Number(form.priority.value) !== task.priority) changes.priority = Number(form.priority.value);
  if (Number(form.maxAttempts.value) !== task.maxAttempts) changes.maxAttempts = Number(form.maxAttempts.value);
  const time = (text: string, name: string): string => {
    const date = new Date(text.trim());
    if (Number.isNaN(date.getTime())) throw new Error(`${name} must be an ISO 8601 time such as 2031-05-01T08:00:00Z`);
    return date.toISOString();
  };
  if (form.availableAt.value.trim() !== task.availableAt) changes.availableAt = time(form.availableAt.value, 'Start at');
  const deadline = form.deadlineAt.value.trim();
  if (deadline !== (task.deadlineAt ?? '')) changes.deadlineAt = deadline === '' ? null : time(deadline, 'Deadline');
  return changes;
}

/** Opens the dialog; resolves true once an edit was saved, false when the viewer went back. */
export function editTask(task: Task): Promise<boolean> {
  const sealed = isSealed(task.payload);
  const shownPayload = sealed ? '' : JSON.stringify(task.payload, null, 2);
  const form = {
    payload: h('textarea', { name: 'payload', rows: 8, class: 'mono', placeholder: sealed ? 'encrypted: leave empty to keep it' : '' }),
    priority: h('input', { type: 'number', name: 'priority', min: -1000, max: 1000, step: 1, value: task.priority }),
    availableAt: h('input', { type: 'text', name: 'availableAt', value: task.availableAt, class: 'mono' }),
    deadlineAt: h('input', { type: 'text', name: 'deadlineAt', value: task.deadlineAt ?? '', class: 'mono', placeholder: 'none' }),
    maxAttempts: h('input', { type: 'number', name: 'maxAttempts', min: 1, max: 100, step: 1, value: task.maxAttempts }),
  };
  form.payload.value = shownPayload;
  const problem = h('p', { class: 'notice error', role: 'alert', hidden: true });
  return new Promise((resolve) => {
    let saved = false;
    const save = async (): Promise<void> => {
      problem.hidden = true;
      try {
        const changes = changesOf(task, form, shownPayload);
        if (Object.keys(changes).length === 0) throw new Error('Nothing changed.');
        await api('PATCH', `/api/v1/tasks/${task.id}`, { ...changes, expectUpdatedAt: task.updatedAt });
        saved = true;
        dialog.close();
      } catch (error) {
        problem.textContent = (error as Error).message;
        problem.hidden = false;
      }
    };
    const dialog = h(
      'dialog',
      { class: 'confirm edit', 'aria-label': 'Edit task' },
      h('h2', {}, 'Edit task'),
      field('Payload (JSON)', form.payload, sealed ? 'Encrypted: what you type is sealed by the server.' : undefined),
      field('Priority', form.priority),
      field('Start at', form.availableAt, 'ISO 8601, UTC'),
      field('Deadline', form.deadlineAt, 'ISO 8601; empty: none'),
      field('Max attempts', form.maxAttempts),
      problem,
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close() }, 'Go back'),
        h('button', { type: 'button', 'data-save': '', onclick: () => void save() }, 'Save changes'),
      ),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(saved);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}
