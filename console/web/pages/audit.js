// The Audit page: audit rows by time with filters (tenant, sandbox, period), keyset pages,
// and the chain's verification (`sandboxctl audit verify`): intact, or the first bad row shown
// among its chain's neighbours and highlighted, with how many problems there are.

import {get} from '../api.js';
import {link, sandboxLink} from '../app.js';
import {errorBox, h} from '../dom.js';

function auditRow(r, cls) {
  return h('tr', {class: cls || null, dataset: {tenant: r.tenant, partition: r.partition, position: r.position}},
    h('td', {class: 'mono'}, r.time),
    h('td', {}, r.tenant),
    h('td', {class: 'num'}, `${r.partition}/${r.position}`),
    h('td', {}, r.sandbox_id ? h('a', {href: sandboxLink(r.sandbox_id, {seq: r.event_id.slice(r.event_id.lastIndexOf(':') + 1)}), class: 'mono'}, r.sandbox_id) : '—'),
    h('td', {}, r.principal),
    h('td', {}, r.action),
    h('td', {}, h('span', {class: `outcome ${r.outcome === 'accepted' ? 'ok' : 'refused'}`}, r.outcome)),
    h('td', {class: 'detail'}, r.redacted ? h('em', {}, '(redacted)') : r.detail),
    h('td', {class: 'mono hash', title: r.hash}, r.hash.slice(0, 12)));
}

const HEAD = ['Time', 'Tenant', 'Chain', 'Sandbox', 'Principal', 'Action', 'Outcome', 'Detail', 'Hash'];
const thead = () => h('thead', {}, h('tr', {}, HEAD.map((c) => h('th', {scope: 'col'}, c))));

function verdict(v) {
  if (v.ok) {
    return h('section', {class: 'verdict ok', id: 'audit-verdict', dataset: {ok: 'true'}},
      h('h2', {}, 'The audit chain holds'), h('p', {}, `${v.checked_rows} rows checked; every row hashes right and follows the one before it.`));
  }
  const f = v.first_bad;
  const rows = [];
  if (f) {
    let placed = false;
    for (const r of f.rows) {
      if (!placed && r.position > f.position) {
        rows.push(h('tr', {class: 'bad missing', id: 'first-bad-row'}, h('td', {colspan: HEAD.length}, `position ${f.position}: no row (${f.kind})`)));
        placed = true;
      }
      const bad = r.position === f.position;
      if (bad) placed = true;
      const tr = auditRow(r, bad ? 'bad' : null);
      if (bad) tr.id = 'first-bad-row';
      rows.push(tr);
    }
    if (!placed) rows.push(h('tr', {class: 'bad missing', id: 'first-bad-row'}, h('td', {colspan: HEAD.length}, `position ${f.position}: no row (${f.kind})`)));
  }
  return h('section', {class: 'verdict broken', id: 'audit-verdict', dataset: {ok: 'false'}},
    h('h2', {}, 'The audit chain is broken'),
    h('p', {}, `${v.checked_rows} rows checked, ${v.problems.length} problem${v.problems.length === 1 ? '' : 's'}. First bad row: tenant `,
      h('strong', {}, v.problems[0].tenant), `, partition ${v.problems[0].partition}, position ${v.problems[0].position}`,
      v.problems[0].event_id ? ` (event ${v.problems[0].event_id})` : ' (no row)', ': ',
      h('strong', {id: 'first-bad-kind'}, v.problems[0].kind), ` — ${v.problems[0].message}`),
    f ? h('table', {class: 'list', id: 'first-bad'}, thead(), h('tbody', {}, rows)) : null,
    v.problems.length > 1 ? h('details', {}, h('summary', {}, `All ${v.problems.length} problems`),
      h('ul', {}, v.problems.map((p) => h('li', {}, `tenant ${p.tenant}, partition ${p.partition}, position ${p.position}: ${p.kind}: ${p.message}`)))) : null);
}

export async function render(main, r) {
  const p = r.params;
  const q = {tenant: p.get('tenant') || '', sandbox: p.get('sandbox') || '', from: p.get('from') || '', to: p.get('to') || '', page: p.get('page') || ''};
  const inputs = {};
  for (const [k, ph] of [['tenant', 'every tenant'], ['sandbox', 'every sandbox'], ['from', 'e.g. -24h'], ['to', 'now']]) {
    inputs[k] = h('input', {type: 'text', name: k, id: `audit-${k}`, value: q[k], placeholder: ph, 'aria-label': k});
  }
  const verdictBox = h('div', {id: 'verdict-box'}, h('p', {class: 'muted'}, 'Verifying the chain…'));
  const rowsBox = h('div', {id: 'rows-box'});
  main.append(h('h1', {}, 'Audit log'),
    h('form', {class: 'filters', id: 'audit-form', on: {submit: (ev) => {
      ev.preventDefault();
      location.hash = link('audit', Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value.trim()])));
    }}}, Object.entries(inputs).map(([k, i]) => h('label', {}, `${k[0].toUpperCase()}${k.slice(1)} `, i)), h('button', {type: 'submit'}, 'Apply')),
    verdictBox, h('h2', {}, 'Rows'), rowsBox);

  const verify = get('audit/verify', {tenant: q.tenant}).then((v) => verdictBox.replaceChildren(verdict(v)),
    (e) => verdictBox.replaceChildren(errorBox(e)));
  try {
    const page = await get('audit', q);
    const next = page.next_page_token ? h('a', {href: link('audit', Object.assign({}, q, {page: page.next_page_token})), id: 'audit-next'}, 'Next page →') : null;
    rowsBox.replaceChildren(h('table', {class: 'list', id: 'audit-rows'}, thead(),
      h('tbody', {}, page.rows.length ? page.rows.map((x) => auditRow(x)) : h('tr', {}, h('td', {colspan: HEAD.length, class: 'empty'}, 'No row matches.')))),
    h('p', {}, q.page ? h('a', {href: link('audit', Object.assign({}, q, {page: ''}))}, '← First page') : null, ' ', next));
  } catch (e) {
    rowsBox.replaceChildren(errorBox(e));
  }
  await verify;
  main.dataset.rendered = 'audit';
}
