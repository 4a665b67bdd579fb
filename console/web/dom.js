// dom.js — the only way the console's pages make elements. Text always goes in as text (text
// nodes), attributes by name with setAttribute, never markup: no call of the DOM's HTML
// parsers anywhere (the Content-Security-Policy requires Trusted Types, so such a call would
// throw; test_console_core checks that no module names one). Whatever a tenant wrote — a label, an argv, a path, a message — shows
// as the characters it is.

const SVG = 'http://www.w3.org/2000/svg';

// Links may only point inside the console: a page (#/...) or one of its files (/api/...).
function safeHref(v) {
  const s = String(v);
  if (s.startsWith('#/') || s.startsWith('/api/')) return s;
  throw new Error(`refusing a link outside the console: ${s}`);
}

function setAll(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k.startsWith('on') || k === 'style' || k === 'srcdoc') {
      throw new Error(`refusing attribute ${k}: handlers go in {on: {...}}, styles in console.css`);
    } else if (k === 'href') {
      el.setAttribute('href', safeHref(v));
    } else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = String(dv);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function addAll(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// An HTML element: h('a', {href: '#/sandboxes', class: 'x'}, 'text', child, ...).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAll(el, attrs);
  addAll(el, children);
  return el;
}

// An SVG element.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAll(el, attrs);
  addAll(el, children);
  return el;
}

// Appends children as h() does (null, undefined and false are left out; never "null").
export function put(el, ...children) {
  addAll(el, children);
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// An error as every page shows it: the code (the project's vocabulary) and the message.
export function errorBox(e, title) {
  return h('div', {class: 'error', role: 'alert', 'data-code': e.code || 'internal'},
    title ? h('h2', {}, title) : null,
    h('strong', {}, e.code || 'internal'), ': ', e.message || String(e));
}

// A two-column table of name/value pairs.
export function fieldTable(obj, attrs) {
  const rows = Object.entries(obj).map(([k, v]) =>
    h('tr', {}, h('th', {scope: 'row'}, k), h('td', {}, valueText(v))));
  return h('table', Object.assign({class: 'fields'}, attrs || {}), h('tbody', {}, rows));
}

// A JSON value as text: objects as k=v pairs, arrays space-separated.
export function valueText(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.map(valueText).join(' ');
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}=${valueText(x)}`).join(' ');
  return String(v);
}
