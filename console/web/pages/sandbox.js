// A sandbox's page: its timeline (every event in order, the state bands, execs and file
// changes as spans, rejected commands), the list of its events, and — for the event selected
// by a click on the timeline or the list — its fields and the sandbox's state right after
// it, folded from the log as `sandboxctl replay --until-seq` does.

import {get, serverTiming} from '../api.js';
import {isAdmin, link, sandboxLink} from '../app.js';
import {clear, errorBox, fieldTable, h} from '../dom.js';
import {pairs, utc} from '../format.js';
import {Timeline} from '../timeline.js';

function frames(n) {
  return new Promise((resolve) => {
    const step = () => (n-- <= 0 ? resolve() : requestAnimationFrame(step));
    step();
  });
}

function header(doc) {
  const st = doc.sandbox.state;
  const id = doc.sandbox.id;
  const labels = Object.entries(st).filter(([k]) => k.startsWith('label.'))
    .map(([k, v]) => h('span', {class: 'chip'}, `${k.slice(6)}=${v}`));
  const tenant = doc.sandbox.tenant;
  return h('section', {class: 'sandbox-head'},
    h('h1', {}, 'Sandbox ', h('span', {class: 'mono', id: 'sandbox-id'}, id), ' ',
      h('span', {class: `badge state-${st.status}`, id: 'sandbox-status'}, st.status, st.pause_mode && ['pausing', 'paused', 'resuming'].includes(st.status) ? ` (${st.pause_mode})` : '')),
    doc.redacted ? h('p', {class: 'note', id: 'redacted-note'}, 'This sandbox was redacted: its labels, command lines, paths and messages are left out here as they are from the read models.') : null,
    h('dl', {class: 'facts'},
      h('dt', {}, 'tenant'), h('dd', {}, tenant),
      h('dt', {}, 'template'), h('dd', {}, st.template ?? '—'),
      h('dt', {}, 'runtime'), h('dd', {}, st.runtime ?? '—'),
      h('dt', {}, 'memory'), h('dd', {}, st['limits.memory_mib'] !== undefined ? `${st['limits.memory_mib']} MiB` : '—'),
      h('dt', {}, 'created'), h('dd', {}, st.created_at ?? '—'),
      h('dt', {}, 'events'), h('dd', {}, String(doc.events.length))),
    labels.length ? h('p', {class: 'labels', id: 'sandbox-labels'}, labels) : null,
    isAdmin() ? h('p', {class: 'links'},
      h('a', {href: link('billing', {tenant, sandbox: id, from: doc.events[0].time.slice(0, 10)}), id: 'bill-link'}, 'Bill lines'), ' · ',
      h('a', {href: link('audit', {tenant, sandbox: id}), id: 'audit-link'}, 'Audit rows')) : null);
}

function legend() {
  const items = ['creating', 'running', 'pausing', 'paused-filesystem', 'paused-memory', 'resuming', 'deleting', 'deleted', 'failed'];
  return h('p', {class: 'legend'}, items.map((i) => h('span', {class: `key band-key-${i}`}, i)),
    h('span', {class: 'key span-key-ok'}, 'exit 0'), h('span', {class: 'key span-key-bad'}, 'failed / non-zero'),
    h('span', {class: 'key span-key-open'}, 'running'));
}

export async function render(main, r) {
  const id = r.id;
  const t0 = performance.now();
  let doc;
  try {
    doc = await get(`sandboxes/${encodeURIComponent(id)}/timeline`);
  } catch (e) {
    main.append(h('section', {class: 'not-found', id: 'sandbox-error'}, errorBox(e, e.code === 'not_found' ? 'No such sandbox' : 'The sandbox cannot be shown'),
      h('p', {}, h('a', {href: link('sandboxes')}, '← Sandboxes'))));
    return;
  }
  const t1 = performance.now();

  const detail = h('section', {class: 'detail', id: 'event-detail'}, h('p', {class: 'muted'}, 'Click an event on the timeline or in the list to see it and the state right after it.'));
  // The event list: one row element per event, each laid out and painted only when it
  // scrolls into view (content-visibility), so a 5,000-event list costs what its screenful
  // costs.
  const rows = h('div', {id: 'event-rows', class: 'rows', role: 'rowgroup'});
  const linked = new Set((r.params.get('events') || '').split(',').filter(Boolean)
    .map((x) => Number(x.slice(x.lastIndexOf(':') + 1))));
  let current = null;

  async function select(seq, push) {
    current = seq;
    tl.select(seq);
    for (const tr of rows.querySelectorAll('.row.selected')) tr.classList.remove('selected');
    const tr = rows.querySelector(`.row[data-seq="${seq}"]`);
    if (tr) { tr.classList.add('selected'); tr.scrollIntoView({block: 'nearest'}); }
    if (push !== false) {
      const p = new URLSearchParams(r.params);
      p.set('seq', seq);
      history.replaceState(null, '', `${sandboxLink(id)}?${p}`);
    }
    let st;
    try {
      st = await get(`sandboxes/${encodeURIComponent(id)}/state`, {seq});
    } catch (e) {
      clear(detail).append(errorBox(e));
      return;
    }
    if (current !== seq) return;
    const ev = st.event;
    const changes = st.changes.map((c) => h('li', {}, h('span', {class: 'field'}, c.field), ': ',
      h('span', {class: 'before'}, c.before === null ? '—' : String(c.before)), ' → ',
      h('span', {class: 'after'}, c.after === null ? '—' : String(c.after))));
    clear(detail).append(
      h('h2', {}, `Event ${ev.sequence}: `, h('span', {id: 'detail-kind'}, ev.kind)),
      fieldTable({time: ev.time, principal: ev.principal, event_id: ev.event_id,
        'partition/offset': `${ev.partition}/${ev.offset}`, correlation_id: ev.correlation_id || '—',
        causation_id: ev.causation_id || '—'}, {id: 'event-envelope'}),
      h('h3', {}, 'Fields'),
      Object.keys(ev.payload).length ? fieldTable(ev.payload, {id: 'event-fields'}) : h('p', {class: 'muted', id: 'event-fields'}, 'none'),
      h('h3', {}, `State after event ${ev.sequence}`),
      fieldTable(st.state, {id: 'event-state'}),
      h('h3', {}, 'What it changed'),
      changes.length ? h('ul', {class: 'changes', id: 'event-changes'}, changes) : h('p', {class: 'muted', id: 'event-changes'}, 'no field of the state'),
      h('p', {class: 'muted'}, 'The same, from the log: ', h('code', {}, `sandboxctl replay ${id} --until-seq ${ev.sequence}`)));
  }

  const tl = new Timeline(doc, (seq) => select(seq));
  if (linked.size) tl.linked = linked;
  const axis = h('select', {id: 'axis', 'aria-label': 'axis', on: {change: (ev) => tl.setAxis(ev.target.value)}},
    h('option', {value: 'time'}, 'time axis'), h('option', {value: 'sequence'}, 'one step per event'));

  const box = h('div', {class: 'timeline-box'}, tl.svg);
  main.append(header(doc),
    h('div', {class: 'controls'}, axis, ' ', h('button', {type: 'button', id: 'reset-zoom', on: {click: () => tl.resetZoom()}}, 'Reset zoom'),
      h('span', {class: 'muted'}, ' wheel to zoom, drag to pan')),
    legend(), box);
  const tA = performance.now();
  tl.draw(Math.max(600, box.clientWidth || 1000));
  const tB = performance.now();
  // Built without the general helper: 5,000 rows are the page's biggest cost (text only).
  const cell = (cls, text) => {
    const c = document.createElement('span');
    if (cls) c.className = cls;
    c.textContent = text;
    return c;
  };
  const list = doc.events.map((e) => {
    const r = document.createElement('div');
    r.className = `row lane-row-${e.lane}${linked.has(e.seq) ? ' linked' : ''}`;
    r.setAttribute('role', 'row');
    r.dataset.seq = e.seq;
    r.dataset.kind = e.kind;
    r.dataset.status = e.status;
    const state = cell('', '');
    state.append(cell(`badge state-${e.status}`, e.status));
    r.append(cell('num', String(e.seq)), cell('mono', e.time), cell('kind', e.kind),
      cell('', e.principal), state, cell('payload', pairs(e.payload)));
    return r;
  });
  rows.append(...list);
  rows.addEventListener('click', (ev) => {
    const tr = ev.target.closest('.row[data-seq]');
    if (tr) select(Number(tr.dataset.seq));
  });
  main.append(h('div', {class: 'split'},
    h('section', {class: 'events'}, h('h2', {}, 'Events'),
      h('div', {class: 'scroll', id: 'events', role: 'table', 'aria-label': 'events'},
        h('div', {class: 'row head', role: 'row'}, ['#', 'time', 'event', 'principal', 'state after', 'fields'].map((c) => h('span', {role: 'columnheader'}, c))),
        rows)),
    detail));
  const tC = performance.now();
  await frames(2);
  const t2 = performance.now();
  window.sandboxdTimings = Object.assign(window.sandboxdTimings || {}, {
    timeline: {server_ms: serverTiming['sandboxes/timeline'], fetch_ms: t1 - t0, render_ms: t2 - t1,
      draw_ms: tB - tA, list_ms: tC - tB, layout_ms: t2 - tC, events: doc.events.length},
  });
  main.dataset.rendered = 'timeline';
  const want = Number(r.params.get('seq'));
  if (want && tl.index.has(want)) await select(want, false);
}
