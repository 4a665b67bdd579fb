// The Billing page: a tenant's bill for a period (the billing read model, as `sandboxctl
// bill` shows it: one line per sandbox, exact micro-dollars, the total the sum of the rounded
// lines), a chart of compute and storage per day, each line linking to its sandbox and to the
// events its intervals come from, and the CSV `sandboxctl bill --csv` writes.

import {get, url} from '../api.js';
import {link, sandboxLink} from '../app.js';
import {dailyChart} from '../chart.js';
import {errorBox, h} from '../dom.js';
import {usd, usdMicros} from '../format.js';

function form(params, ctx) {
  const tenant = h('input', {type: 'text', name: 'tenant', id: 'bill-tenant', value: params.get('tenant') || ctx.who.tenant, 'aria-label': 'tenant'});
  const from = h('input', {type: 'text', name: 'from', id: 'bill-from', value: params.get('from') || '', placeholder: 'first of the month', 'aria-label': 'from'});
  const to = h('input', {type: 'text', name: 'to', id: 'bill-to', value: params.get('to') || '', placeholder: 'now', 'aria-label': 'to'});
  return h('form', {class: 'filters', id: 'bill-form', on: {submit: (ev) => {
    ev.preventDefault();
    location.hash = link('billing', {tenant: tenant.value.trim(), from: from.value.trim(), to: to.value.trim(), sandbox: params.get('sandbox') || ''});
  }}},
  h('label', {}, 'Tenant ', tenant), h('label', {}, 'From ', from), h('label', {}, 'To ', to),
  h('button', {type: 'submit'}, 'Show'),
  h('span', {class: 'muted'}, ' RFC 3339, a date, now or -30d; widened to whole hours'));
}

export async function render(main, r, ctx) {
  const p = r.params;
  main.append(h('h1', {}, 'Billing'), form(p, ctx));
  const q = {tenant: p.get('tenant') || ctx.who.tenant, from: p.get('from') || '', to: p.get('to') || ''};
  let doc;
  try {
    doc = await get('bill', q);
  } catch (e) {
    main.append(errorBox(e));
    return;
  }
  const bill = doc.bill;
  const focus = p.get('sandbox') || '';
  const lines = bill.lines.map((l) => h('tr', {dataset: {sandbox: l.sandbox_id}, class: l.sandbox_id === focus ? 'focus' : null},
    h('td', {}, h('a', {href: sandboxLink(l.sandbox_id), class: 'mono'}, l.sandbox_id)),
    h('td', {class: 'num'}, (l.compute_gib_seconds / 3600).toFixed(6)),
    h('td', {class: 'num'}, (l.storage_gib_seconds / (3600 * 730)).toFixed(6)),
    h('td', {class: 'num'}, usd(l.compute_usd)),
    h('td', {class: 'num'}, usd(l.storage_usd)),
    h('td', {class: 'num'}, usd(l.total_usd)),
    h('td', {class: 'events'}, l.events.map((id) => {
      const seq = id.slice(id.lastIndexOf(':') + 1);
      return h('a', {href: sandboxLink(l.sandbox_id, {seq, events: l.events.join(',')}), class: 'event-link'}, `#${seq}`);
    }))));
  const csv = url('bill.csv', {tenant: q.tenant, from: bill.from, to: bill.to});
  main.append(
    h('section', {class: 'summary'},
      h('p', {}, 'Bill of tenant ', h('strong', {id: 'bill-of'}, bill.tenant), ` from ${bill.from} to ${bill.to}`),
      h('p', {class: 'total'}, 'Total ', h('strong', {id: 'bill-total'}, usd(bill.total_usd)),
        h('span', {class: 'muted'}, ` compute ${usdMicros(bill.total_compute_micros)} · storage ${usdMicros(bill.total_storage_micros)}`)),
      h('p', {}, h('a', {href: csv, download: `bill-${bill.tenant}.csv`, id: 'bill-csv'}, 'Download CSV'))),
    h('h2', {}, 'Per day'),
    h('p', {class: 'legend'}, h('span', {class: 'key chart-key-compute'}, 'compute'), h('span', {class: 'key chart-key-storage'}, 'storage')),
    dailyChart(doc.by_day.lines),
    h('h2', {}, 'Per sandbox'),
    h('table', {class: 'list', id: 'bill-lines'},
      h('thead', {}, h('tr', {}, ['Sandbox', 'Compute GiB-h', 'Storage GiB-month', 'Compute', 'Storage', 'Amount', 'Events'].map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, lines.length ? lines : h('tr', {}, h('td', {colspan: 7, class: 'empty'}, 'No usage in this period.')))));
}
