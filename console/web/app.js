// app.js — the console's shell: who is signed in, the navigation, and the router from the
// address's #fragment to a page. Pages live in pages/*.js; each exports
// render(main, params, ctx) and may return a function that stops what it started (polling).
//
// Routes: #/sandboxes · #/sandboxes/<id>[?seq=N] · #/billing · #/audit · #/node · #/login.
// Query parameters after the route are each page's own (filters, the period, the selection).

import {ApiError, get, post, whenSignedOut} from './api.js';
import {clear, errorBox, h, put} from './dom.js';

const pages = {
  login: () => import('./pages/login.js'),
  sandboxes: () => import('./pages/sandboxes.js'),
  sandbox: () => import('./pages/sandbox.js'),
  billing: () => import('./pages/billing.js'),
  audit: () => import('./pages/audit.js'),
  node: () => import('./pages/node.js'),
};

const ctx = {who: null};
let stop = null;
let generation = 0;

export function parseHash(hash) {
  const text = (hash || '').replace(/^#\/?/, '');
  const q = text.indexOf('?');
  const path = (q < 0 ? text : text.slice(0, q)).split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(q < 0 ? '' : text.slice(q + 1));
  if (path[0] === 'sandboxes' && path[1]) return {page: 'sandbox', id: path[1], params};
  return {page: pages[path[0]] ? path[0] : 'sandboxes', params};
}

// The address of a page, with its parameters (empty ones left out).
export function link(page, params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined && x !== null && x !== '') p.append(k, String(x));
  }
  const q = p.toString();
  return `#/${page}${q ? `?${q}` : ''}`;
}

export function sandboxLink(id, params) {
  return link(`sandboxes/${encodeURIComponent(id)}`, params);
}

export function isAdmin() {
  return !!(ctx.who && ctx.who.scopes.includes('admin'));
}

function showWho() {
  const who = document.getElementById('who');
  const nav = document.getElementById('nav');
  const out = document.getElementById('signout');
  clear(who);
  nav.hidden = !ctx.who;
  out.hidden = !ctx.who;
  if (!ctx.who) return;
  put(who, h('span', {class: 'tenant', title: 'tenant'}, ctx.who.tenant), ' · ',
    h('span', {class: 'principal', title: 'principal'}, ctx.who.principal),
    isAdmin() ? h('span', {class: 'scope'}, 'admin') : null);
  for (const a of nav.querySelectorAll('[data-admin]')) a.hidden = !isAdmin();
}

async function route() {
  const mine = ++generation;
  if (stop) { stop(); stop = null; }
  const main = document.getElementById('main');
  const r = parseHash(location.hash);
  if (!ctx.who && r.page !== 'login') {
    try {
      const s = await get('session');
      ctx.who = s.signed_in ? s : null;
    } catch (e) {
      ctx.who = null;
    }
    showWho();
    if (!ctx.who) {
      const back = location.hash && !location.hash.startsWith('#/login') ? location.hash : '';
      location.replace(link('login', {next: back}));
      return;
    }
  }
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('current', a.dataset.page === (r.page === 'sandbox' ? 'sandboxes' : r.page));
  }
  try {
    const mod = await pages[r.page]();
    if (mine !== generation) return;
    clear(main);
    const s = await mod.render(main, r, ctx);
    if (mine !== generation) { if (typeof s === 'function') s(); return; }
    stop = typeof s === 'function' ? s : null;
  } catch (e) {
    if (mine !== generation) return;
    clear(main).append(errorBox(e instanceof ApiError ? e : {code: 'internal', message: String(e)}));
  }
}

export function signedIn(who) {
  ctx.who = who;
  showWho();
}

whenSignedOut(() => {
  if (!ctx.who) return;
  ctx.who = null;
  showWho();
  location.replace(link('login', {next: location.hash}));
});

document.getElementById('signout').addEventListener('click', async () => {
  try { await post('logout'); } catch (e) { /* signed out either way */ }
  ctx.who = null;
  showWho();
  location.replace(link('login'));
});

window.addEventListener('hashchange', route);
route();
