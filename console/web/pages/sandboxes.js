// The Sandboxes page: the `sandboxes` read model's rows for the tenant, newest first, with
// filters by state and label, keyset pages, and live updates (the page asks again every two
// seconds while it is shown, and marks the rows whose state changed).

import {get, serverTiming} from '../api.js';
import {isAdmin, link, sandboxLink} from '../app.js';
import {clear, errorBox, h, put} from '../dom.js';
import {age, bytes, ms, utc} from '../format.js';

const STATES = ['creating', 'running', 'pausing', 'paused', 'resuming', 'deleting', 'deleted', 'failed'];
const POLL_MS = 2000;

function query(params) {
  return {
    state: params.getAll('state'),
    label: params.getAll('label'),
    deleted: params.get('deleted') || '',
    tenant: params.get('tenant') || '',
    page: params.get('page') || '',
    limit: params.get('limit') || '',
  };
}

function filters(q) {
  const boxes = STATES.map((st) => h('label', {class: 'check'},
    h('input', {type: 'checkbox', name: 'state', value: st, checked: q.state.includes(st)}), st));
  const label = h('input', {type: 'text', name: 'label', id: 'filter-label', value: q.label.join(' '),
    placeholder: 'team=search tier=free', 'aria-label': 'labels (key=value, all must match)'});
  const deleted = h('input', {type: 'checkbox', name: 'deleted', checked: q.deleted === '1'});
  const tenant = isAdmin() ? h('input', {type: 'text', name: 'tenant', value: q.tenant,
    placeholder: 'own tenant', 'aria-label': 'tenant'}) : null;
  return h('form', {class: 'filters', id: 'sandbox-filters', on: {submit: (ev) => {
    ev.preventDefault();
    const f = ev.target;
    location.hash = link('sandboxes', {
      state: [...f.querySelectorAll('input[name=state]:checked')].map((i) => i.value),
      label: label.value.split(/\s+/).filter(Boolean),
      deleted: deleted.checked ? '1' : '',
      tenant: tenant ? tenant.value.trim() : '',
    });
  }}},
  h('fieldset', {}, h('legend', {}, 'State'), boxes),
  h('label', {}, 'Labels ', label),
  h('label', {class: 'check'}, deleted, 'deleted too'),
  tenant ? h('label', {}, 'Tenant ', tenant) : null,
  h('button', {type: 'submit'}, 'Apply'));
}

function labelChips(labels) {
  return Object.entries(labels || {}).map(([k, v]) => h('span', {class: 'chip'}, `${k}=${v}`));
}

function row(s, now) {
  const created = ms(s.created_at);
  return h('tr', {dataset: {id: s.id, state: s.state, sequence: s.sequence}},
    h('td', {}, h('a', {href: sandboxLink(s.id), class: 'mono'}, s.id)),
    h('td', {}, h('span', {class: `badge state-${s.state}`}, s.state,
      s.pause_mode ? ` (${s.pause_mode})` : '')),
    h('td', {}, s.template),
    h('td', {}, s.runtime || '—'),
    h('td', {title: utc(created)}, age(created, now)),
    h('td', {}, bytes(s.writable_bytes)),
    h('td', {class: 'labels'}, labelChips(s.labels)));
}

export async function render(main, r) {
  const q = query(r.params);
  const table = h('tbody', {id: 'sandbox-rows'});
  const foot = h('div', {class: 'foot'});
  const live = h('span', {class: 'live', id: 'live'}, 'live');
  const tenantNote = h('span', {class: 'muted'});
  main.append(
    h('h1', {}, 'Sandboxes ', tenantNote),
    filters(q),
    h('table', {class: 'list', id: 'sandboxes'},
      h('thead', {}, h('tr', {}, ['Sandbox', 'State', 'Template', 'Runtime', 'Age', 'Writable layer', 'Labels']
        .map((c) => h('th', {scope: 'col'}, c)))),
      table),
    foot);

  let states = new Map();
  let first = true;
  let timer = null;
  let stopped = false;
  const t0 = performance.now();

  async function load() {
    let doc;
    try {
      doc = await get('sandboxes', q);
    } catch (e) {
      if (stopped) return;
      clear(foot).append(errorBox(e));
      live.classList.add('stale');
      return;
    }
    if (stopped) return;
    live.classList.remove('stale');
    const now = Date.now();
    const seen = new Map();
    const rows = doc.sandboxes.map((s) => {
      const tr = row(s, now);
      if (!first && states.has(s.id) && states.get(s.id) !== s.state) tr.classList.add('changed');
      seen.set(s.id, s.state);
      return tr;
    });
    states = seen;
    table.replaceChildren(...rows);
    tenantNote.textContent = `of tenant ${doc.tenant}`;
    if (!rows.length) table.append(h('tr', {}, h('td', {colspan: 7, class: 'empty'}, 'No sandbox matches.')));
    const older = doc.next_page_token ? h('a', {href: link('sandboxes', Object.assign({}, q, {page: doc.next_page_token})), id: 'older'}, 'Older →') : null;
    const newest = q.page ? h('a', {href: link('sandboxes', Object.assign({}, q, {page: ''})), id: 'newest'}, '← Newest') : null;
    put(clear(foot), newest, ' ', older, ' ', live, ' ',
      h('span', {class: 'muted', id: 'list-timing'}, `${rows.length} shown · answered in ${serverTiming.sandboxes?.toFixed(1) ?? '?'} ms · updated ${new Date(now).toISOString().slice(11, 19)}Z`));
    if (first) {
      window.sandboxdTimings = Object.assign(window.sandboxdTimings || {}, {
        list: {server_ms: serverTiming.sandboxes, page_ms: performance.now() - t0, rows: rows.length},
      });
    }
    first = false;
  }

  await load();
  const tick = async () => {
    if (stopped) return;
    if (document.visibilityState === 'visible') await load();
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  timer = setTimeout(tick, POLL_MS);
  return () => { stopped = true; clearTimeout(timer); };
}
