/**
 * Encrypted payloads and results (the server's client/encryption.ts) on the
 * task page: shown as "encrypted" with the id of the key that sealed them. A
 * viewer who holds that key opens them here, in the browser (Web Crypto
 * AES-GCM with the same additional data: what it is and the task type). The
 * key never leaves the page and the server never sees it; it is kept in this
 * page's memory until a reload, so that a live update opens the value again.
 */
import { clear, h } from '../dom.js';

interface Sealed {
  $encrypted: 'aes-256-gcm';
  kid: string;
  iv: string;
  tag: string;
  data: string;
}

type Kind = 'payload' | 'result';

/** Keys this viewer gave, by key id (base64 text as pasted). */
const keys = new Map<string, string>();
/** The sealed values on the page, told when a key is given: one key opens the payload and the result alike. */
const waiting = new Set<(kid: string) => void>();

function keyGiven(kid: string): void {
  for (const listener of [...waiting]) listener(kid);
}

function isSealed(value: unknown): value is Sealed {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return v.$encrypted === 'aes-256-gcm' && typeof v.kid === 'string' && typeof v.iv === 'string' && typeof v.tag === 'string' && typeof v.data === 'string';
}

function bytes(base64: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64.trim());
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) out[i] = text.charCodeAt(i);
  return out;
}

async function open(sealed: Sealed, kind: Kind, taskType: string, keyBase64: string): Promise<unknown> {
  const key = await crypto.subtle.importKey('raw', bytes(keyBase64), 'AES-GCM', false, ['decrypt']);
  const data = bytes(sealed.data);
  const tag = bytes(sealed.tag);
  const joined = new Uint8Array(data.length + tag.length);
  joined.set(data);
  joined.set(tag, data.length);
  const additionalData = new TextEncoder().encode(`tasklease/${kind}/${taskType}`);
  const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes(sealed.iv), additionalData, tagLength: 128 }, key, joined);
  return JSON.parse(new TextDecoder().decode(plain)) as unknown;
}

/** One value: as it is when in clear; else "encrypted" with a key field, opened in place once a key that opens it is given. */
function valueView(label: string, kind: Kind, taskType: string, value: unknown): HTMLElement {
  if (!isSealed(value)) return h('div', { class: 'stored-value', 'data-kind': kind }, h('h3', {}, label), h('pre', {}, JSON.stringify(value, null, 2)));
  const box = h('div', { class: 'stored-value', 'data-kind': kind, 'data-sealed': value.kid });
  const problem = h('p', { class: 'muted', role: 'status' });
  const tryKey = async (key: string, remember: boolean): Promise<void> => {
    try {
      const opened = await open(value, kind, taskType, key);
      waiting.delete(onKey);
      if (remember) {
        keys.set(value.kid, key);
        keyGiven(value.kid);
      }
      box.removeAttribute('data-sealed');
      box.setAttribute('data-opened', value.kid);
      clear(box, h('h3', {}, label, ' ', h('span', { class: 'badge' }, `opened with key ${value.kid}`)), h('pre', {}, JSON.stringify(opened, null, 2)));
    } catch {
      problem.textContent = `Key ${value.kid} as given does not open this ${kind}.`;
    }
  };
  const input = h('input', { type: 'password', autocomplete: 'off', placeholder: `key ${value.kid} (base64)`, 'aria-label': `key ${value.kid}` });
  clear(
    box,
    h('h3', {}, label, ' ', h('span', { class: 'badge' }, 'encrypted')),
    h('p', { class: 'muted' }, `Sealed with ${value.$encrypted}, key ${value.kid}. The key stays in this page: it is not sent anywhere.`),
    h(
      'form',
      {
        class: 'inline',
        onsubmit: (event: Event) => {
          event.preventDefault();
          void tryKey(input.value, true);
        },
      },
      input,
      h('button', { type: 'submit' }, 'Open'),
    ),
    problem,
  );
  const onKey = (kid: string): void => {
    if (!box.isConnected)
      waiting.delete(onKey); // redrawn away
    else if (kid === value.kid) void tryKey(keys.get(kid)!, false);
  };
  waiting.add(onKey);
  const known = keys.get(value.kid);
  if (known) void tryKey(known, false);
  return box;
}

/** The card last drawn, by what it shows: a redraw of the page (a live update) keeps it, and a key being typed in it. */
let drawn: { key: string; card: HTMLElement } | null = null;

/** The task page's card of its payload and result. */
export function storedValuesCard(task: { id: string; taskType: string; payload: unknown; result: unknown }): HTMLElement {
  const key = JSON.stringify([task.id, task.payload, task.result]);
  if (drawn?.key === key) return drawn.card;
  const card = drawCard(task);
  drawn = { key, card };
  return card;
}

function drawCard(task: { taskType: string; payload: unknown; result: unknown }): HTMLElement {
  const sealed = isSealed(task.payload) || isSealed(task.result);
  const values = [valueView('Payload', 'payload', task.taskType, task.payload), valueView('Result', 'result', task.taskType, task.result)];
  // In clear: folded away as before; encrypted: open, so that the key field is in sight.
  return h('section', { class: 'card wide' }, h('details', { ...(sealed ? { open: true } : {}) }, h('summary', {}, 'Payload and result'), values));
}
