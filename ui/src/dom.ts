/** A tiny DOM toolkit: elements from tag + attributes + children, formatting, a confirm dialog, live polling. */
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

export function clear(element: Element, ...children: (Child | Child[])[]): void {
  element.replaceChildren();
  for (const child of children.flat())
    if (child !== null && child !== undefined && child !== false) element.append(child instanceof Node ? child : String(child));
}

export const when = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : '—');

export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/**
 * A task id as a list shows it: its last 8 characters. A UUIDv7 starts with
 * its creation time, the same on every row created in the same minute; the
 * end is random and tells the rows apart. The full id is the title.
 */
export function shortId(id: string): string {
  return `…${id.slice(-8)}`;
}

/** A payload in one short line (JSON, cut at `max` characters). */
export function snippet(value: unknown, max = 48): string {
  const text = JSON.stringify(value) ?? '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A task type's name linking its page (#/types/<type>). */
export const typeLink = (taskType: string): HTMLElement => h('a', { href: `#/types/${encodeURIComponent(taskType)}` }, taskType);

export const statusBadge = (status: string): HTMLElement => h('span', { class: `badge s-${status.toLowerCase()}` }, status);

/**
 * A modal confirmation (the native <dialog>: focus trapped, Escape goes
 * back). The way out is "Go back", never "Cancel": cancelling a task is an
 * action here, and two "Cancel" buttons in one dialog read as a riddle.
 */
export function confirmAction(question: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-label': 'Confirm' },
      h('p', {}, question),
      h(
        'div',
        { class: 'row' },
        h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close('no') }, 'Go back'),
        h('button', { type: 'button', class: 'danger', 'data-confirm': '', onclick: () => dialog.close('yes') }, confirmLabel),
      ),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue === 'yes');
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** Shows the outcome of an action in the page's status line. */
export function notify(message: string, kind: 'ok' | 'error' = 'ok'): void {
  const line = document.getElementById('notice');
  if (!line) return;
  line.className = `notice ${kind}`;
  line.textContent = message;
}

/** Runs `tick` now and every `ms` until the returned stop() (a page's cleanup) is called. */
export function every(ms: number, tick: () => Promise<void>): () => void {
  let stopped = false;
  let timer: number | undefined;
  const run = async (): Promise<void> => {
    try {
      await tick();
    } catch (error) {
      notify((error as Error).message, 'error');
    }
    if (!stopped) timer = window.setTimeout(run, ms);
  };
  void run();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}

export async function guarded(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    notify((error as Error).message, 'error');
  }
}

/** A scrolling card holding a table: a header row of `columns`, then `body`. */
export function tableCard(columns: readonly string[], body: HTMLTableSectionElement): HTMLElement {
  return h(
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
          columns.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      body,
    ),
  );
}
