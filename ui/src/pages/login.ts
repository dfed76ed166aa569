/** Log in with an API token (tl_…) or a JWT: the server checks it and sets the HttpOnly session cookie. */
import { api, type Me } from '../api.js';
import { h } from '../dom.js';

export function loginPage(root: HTMLElement, loggedIn: (me: Me) => void): void {
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'tl_…',
    'aria-describedby': 'login-help',
  });
  const error = h('p', { class: 'notice error', role: 'alert', hidden: true });
  const form = h(
    'form',
    { class: 'card login' },
    h('h1', {}, 'tasklease'),
    h('label', { for: 'token' }, 'API token'),
    input,
    h(
      'p',
      { id: 'login-help', class: 'muted' },
      'Printed by npm start, or made with tasklease token create. It stays in an HttpOnly cookie of this site, never in page scripts.',
    ),
    error,
    h('button', { type: 'submit' }, 'Log in'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    error.hidden = true;
    api<Me>('POST', '/api/v1/session', { token: input.value }).then(loggedIn, (failure: Error) => {
      error.textContent = failure.message;
      error.hidden = false;
      input.select();
    });
  });
  root.append(form);
  input.focus();
}
