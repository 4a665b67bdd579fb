// The Node page: what the node's Prometheus endpoint says, for a person — the projections'
// lag per log partition, the log's end offsets, sandboxes by state, the actors and timers —
// with the runtimes the node holds (and why the others cannot run here). It asks again every
// five seconds while it is shown.

import {get} from '../api.js';
import {clear, errorBox, fieldTable, h} from '../dom.js';

const POLL_MS = 5000;

function family(doc, name) {
  return doc.metrics.find((f) => f.name === name) || {samples: []};
}

function render1(doc) {
  const byState = family(doc, 'sandboxd_sandboxes').samples.filter((x) => x.value > 0);
  const total = byState.reduce((a, x) => a + x.value, 0) || 1;
  const states = h('table', {class: 'list', id: 'node-states'},
    h('thead', {}, h('tr', {}, h('th', {}, 'State'), h('th', {}, 'Sandboxes'), h('th', {}, ''))),
    h('tbody', {}, byState.map((x) => h('tr', {dataset: {state: x.labels.state}},
      h('td', {}, h('span', {class: `badge state-${x.labels.state}`}, x.labels.state)),
      h('td', {class: 'num'}, String(x.value)),
      h('td', {}, h('meter', {min: 0, max: total, value: x.value}))))));
  const parts = h('table', {class: 'list', id: 'node-partitions'},
    h('thead', {}, h('tr', {}, ['Projection', 'Partition', 'Log end offset', 'Applied to', 'Lag (events)', 'Lag (s)'].map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, doc.projections.map((x) => h('tr', {class: x.lag_events > 0 ? 'behind' : null, dataset: {partition: x.partition}},
      h('td', {}, x.projection), h('td', {class: 'num'}, String(x.partition)), h('td', {class: 'num'}, String(x.end_offset)),
      h('td', {class: 'num'}, String(x.offset)), h('td', {class: 'num'}, String(x.lag_events)), h('td', {class: 'num'}, x.lag_seconds.toFixed(3))))));
  const runtimes = h('table', {class: 'list', id: 'node-runtimes'},
    h('thead', {}, h('tr', {}, ['Runtime', 'Held', 'Note'].map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, doc.runtimes.map((x) => h('tr', {class: x.held ? 'held' : 'absent'},
      h('td', {}, x.name), h('td', {}, x.held ? (x.default ? 'yes (default)' : 'yes') : 'no'), h('td', {}, x.unavailable || '')))));
  const other = doc.metrics.filter((f) => !['sandboxd_sandboxes', 'sandboxd_projection_lag_records', 'sandboxd_log_end_offset'].includes(f.name));
  const metrics = h('table', {class: 'list', id: 'node-metrics'},
    h('thead', {}, h('tr', {}, ['Metric', 'Labels', 'Value'].map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, other.flatMap((f) => f.samples.map((x) => h('tr', {},
      h('td', {class: 'mono', title: f.help}, f.name),
      h('td', {}, Object.entries(x.labels).map(([k, v]) => `${k}=${v}`).join(' ')),
      h('td', {class: 'num'}, x.value !== undefined ? String(x.value) : `${x.count} (sum ${Number(x.sum).toFixed(3)})`))))));
  return [
    fieldTable({'data directory': doc.node.data_dir, 'event log': doc.node.log, PostgreSQL: doc.node.postgres,
      'actors (active / dormant)': `${doc.node.actors_active} / ${doc.node.actors_dormant}`, timers: doc.node.timers}, {id: 'node-facts'}),
    h('h2', {}, 'Projections by log partition'),
    doc.projections_error ? errorBox(doc.projections_error) : parts,
    h('h2', {}, 'Sandboxes by state'), states,
    h('h2', {}, 'Runtimes'), runtimes,
    h('details', {}, h('summary', {}, 'Every other figure of /metrics'), metrics),
  ];
}

export async function render(main) {
  const body = h('div', {id: 'node-body'});
  main.append(h('h1', {}, 'Node'), body);
  let stopped = false;
  let timer = null;
  async function load() {
    try {
      const doc = await get('node');
      if (!stopped) clear(body).append(...render1(doc), h('p', {class: 'muted'}, `updated ${new Date().toISOString().slice(11, 19)}Z`));
    } catch (e) {
      if (!stopped) clear(body).append(errorBox(e));
    }
  }
  await load();
  main.dataset.rendered = 'node';
  const tick = async () => {
    if (stopped) return;
    if (document.visibilityState === 'visible') await load();
    if (!stopped) timer = setTimeout(tick, POLL_MS);
  };
  timer = setTimeout(tick, POLL_MS);
  return () => { stopped = true; clearTimeout(timer); };
}
