// chart.js — the Billing page's chart, drawn as SVG by the page's own code: compute and
// storage amounts per day as stacked bars, with a dollar axis; each bar's exact amounts are
// in its tooltip.

import {s} from './dom.js';
import {usd, usdShort, utcDay} from './format.js';

const W = 900, H = 260, LEFT = 64, RIGHT = 12, TOP = 12, BOTTOM = 40;

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// lines: the by-day bill's lines (from, compute_micros, storage_micros, *_usd).
export function dailyChart(lines) {
  const svg = s('svg', {class: 'chart', id: 'bill-chart', viewBox: `0 0 ${W} ${H}`, width: W, height: H,
    role: 'img', 'aria-label': 'compute and storage per day'});
  const max = niceMax(Math.max(0, ...lines.map((l) => l.compute_micros + l.storage_micros)));
  const plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
  const y = (v) => TOP + plotH - (v / max) * plotH;
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    svg.append(s('line', {class: 'grid', x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v)}),
      s('text', {class: 'tick', x: LEFT - 6, y: y(v) + 4, 'text-anchor': 'end'}, usdShort(v)));
  }
  const n = Math.max(1, lines.length);
  const bw = plotW / n;
  const labelEvery = Math.ceil(n / 12);
  lines.forEach((l, i) => {
    const x = LEFT + i * bw + bw * 0.15;
    const w = Math.max(1, bw * 0.7);
    const day = utcDay(Date.parse(l.from));
    const g = s('g', {class: 'day', dataset: {day, compute: l.compute_micros, storage: l.storage_micros}},
      s('rect', {class: 'compute', x, width: w, y: y(l.compute_micros), height: Math.max(0, y(0) - y(l.compute_micros))}),
      s('rect', {class: 'storage', x, width: w, y: y(l.compute_micros + l.storage_micros), height: Math.max(0, y(l.compute_micros) - y(l.compute_micros + l.storage_micros))}),
      s('title', {}, `${day}: compute ${usd(l.compute_usd)}, storage ${usd(l.storage_usd)}, total ${usd(l.total_usd)}`));
    svg.append(g);
    if (i % labelEvery === 0) svg.append(s('text', {class: 'tick', x: x + w / 2, y: H - BOTTOM + 16, 'text-anchor': 'middle'}, day.slice(5)));
  });
  svg.append(s('line', {class: 'axis-line', x1: LEFT, x2: W - RIGHT, y1: y(0), y2: y(0)}));
  return svg;
}
