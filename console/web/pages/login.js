// The sign-in page: a sandboxd token (the RPC API's: the tokens file or the development
// token) makes a session; the token itself is sent once and kept nowhere by the page.

import {post} from '../api.js';
import {signedIn} from '../app.js';
import {errorBox, h} from '../dom.js';

export function render(main, r) {
  const input = h('input', {type: 'password', id: 'token', name: 'token', autocomplete: 'off',
    spellcheck: 'false', required: true, placeholder: 'sbd_…', 'aria-label': 'token'});
  const status = h('div', {id: 'login-status'});
  const form = h('form', {id: 'login', class: 'login', on: {submit: async (ev) => {
    ev.preventDefault();
    status.replaceChildren();
    try {
      const who = await post('login', {token: input.value});
      input.value = '';
      signedIn(who);
      const next = r.params.get('next');
      location.replace(next && next.startsWith('#/') && !next.startsWith('#/login') ? next : '#/sandboxes');
    } catch (e) {
      status.append(errorBox(e));
    }
  }}},
  h('h1', {}, 'Sign in'),
  h('p', {}, 'Sign in with a sandboxd token. A tenant\'s token shows that tenant\'s sandboxes and their history; a token with the admin scope also shows bills, the audit log and the node.'),
  h('label', {for: 'token'}, 'Token'), input,
  h('button', {type: 'submit', id: 'signin'}, 'Sign in'),
  status);
  main.append(form);
  input.focus();
}
