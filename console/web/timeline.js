// timeline.js — a sandbox's history drawn as SVG by the page's own code: the state bands
// (from the replay fold's state after each event), execs and file changes as spans with
// their outcome, and every event as a mark in its lane; a click on any of them selects that
// event. The axis is time (wheel to zoom, drag to pan) or the sequence of events.

import {s} from './dom.js';
import {utc} from './format.js';

const LEFT = 96, RIGHT = 16, TOP = 8, AXIS = 34, GAP = 6, ROW = 16;
const LANES = [
  {id: 'state', title: 'state'},
  {id: 'lifecycle', title: 'lifecycle'},
  {id: 'exec', title: 'execs'},
  {id: 'file', title: 'files'},
  {id: 'rejected', title: 'rejected'},
  {id: 'other', title: 'other'},
];

function niceStep(spanMs, target) {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4,
    3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5, 12096e5, 2592e6];
  for (const st of steps) if (spanMs / st <= target) return st;
  return steps[steps.length - 1];
}

function tickLabel(t, step) {
  const iso = new Date(t).toISOString();
  if (step >= 864e5) return iso.slice(0, 10);
  if (step >= 6e4) return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  if (step >= 1e3) return iso.slice(11, 19);
  return iso.slice(11, 23);
}

function bandClass(b) {
  const mode = b.pause_mode ? ` band-${b.status}-${b.pause_mode}` : '';
  return `band band-${b.status}${mode}${b.open ? ' open' : ''}`;
}

export class Timeline {
  // doc: the /timeline document; onSelect(seq) when a mark, span or band is clicked.
  constructor(doc, onSelect) {
    this.doc = doc;
    this.onSelect = onSelect;
    this.axis = 'time';
    this.index = new Map(doc.events.map((e, i) => [e.seq, i]));
    this.rowOf = new Map();
    for (const sp of doc.spans) {
      this.rowOf.set(`${sp.lane}:${sp.from_seq}`, sp.row);
      if (sp.to_seq) this.rowOf.set(`${sp.lane}:${sp.to_seq}`, sp.row);
    }
    this.full = [doc.first_ms, doc.last_ms > doc.first_ms ? doc.last_ms : doc.first_ms + 1000];
    this.view = this.full.slice();
    this.selected = null;
    this.linked = new Set();
    this.svg = s('svg', {class: 'timeline', id: 'timeline', role: 'img', 'aria-label': 'timeline of the sandbox\'s events'});
    // One listener for every mark, band and span: each names the event it selects.
    this.svg.addEventListener('click', (ev) => {
      const el = ev.target.closest('[data-pick]');
      if (el && !this.dragged) this.onSelect(Number(el.dataset.pick));
    });
    this.installZoom();
  }

  lanesLayout() {
    const rows = {exec: Math.max(1, this.doc.exec_rows), file: Math.max(1, this.doc.file_rows)};
    let y = TOP;
    const out = {};
    for (const l of LANES) {
      const hgt = l.id === 'state' ? 28 : (rows[l.id] || 1) * ROW + 6;
      out[l.id] = {y, h: hgt};
      y += hgt + GAP;
    }
    return {lanes: out, height: y + AXIS};
  }

  // x of an event (by its time or its index), and of a time.
  xOf(ms, seq) {
    const [v0, v1] = this.view;
    const v = this.axis === 'sequence' ? (this.index.get(seq) ?? 0) : ms;
    return LEFT + ((v - v0) / (v1 - v0)) * this.plotWidth;
  }

  setAxis(axis) {
    this.axis = axis;
    this.full = axis === 'sequence' ? [-0.5, this.doc.events.length - 0.5]
      : [this.doc.first_ms, this.doc.last_ms > this.doc.first_ms ? this.doc.last_ms : this.doc.first_ms + 1000];
    this.view = this.full.slice();
    this.draw();
  }

  resetZoom() {
    this.view = this.full.slice();
    this.draw();
  }

  select(seq) {
    this.selected = seq;
    for (const el of this.svg.querySelectorAll('.selected')) el.classList.remove('selected');
    for (const el of this.svg.querySelectorAll(`[data-seq="${seq}"]`)) el.classList.add('selected');
    this.drawCursor();
  }

  link(seqs) {
    this.linked = new Set(seqs);
    this.draw();
  }

  drawCursor() {
    const old = this.svg.querySelector('.cursor');
    if (old) old.remove();
    if (this.selected === null) return;
    const e = this.doc.events[this.index.get(this.selected)];
    if (!e) return;
    const x = this.xOf(e.t_ms, e.seq);
    this.svg.append(s('line', {class: 'cursor', x1: x, x2: x, y1: TOP, y2: this.height - AXIS + 4}));
  }

  draw(width) {
    if (width) this.width = width;
    this.width = this.width || 1000;
    this.plotWidth = Math.max(100, this.width - LEFT - RIGHT);
    const {lanes, height} = this.lanesLayout();
    this.height = height;
    const svg = this.svg;
    svg.replaceChildren();
    svg.setAttribute('viewBox', `0 0 ${this.width} ${height}`);
    svg.setAttribute('width', this.width);
    svg.setAttribute('height', height);
    const clip = s('clipPath', {id: 'plot'}, s('rect', {x: LEFT, y: 0, width: this.plotWidth, height}));
    svg.append(s('defs', {}, clip));

    for (const l of LANES) {
      const L = lanes[l.id];
      svg.append(s('rect', {class: `lane lane-${l.id}`, x: LEFT, y: L.y, width: this.plotWidth, height: L.h}),
        s('text', {class: 'lane-title', x: LEFT - 8, y: L.y + L.h / 2 + 4, 'text-anchor': 'end'}, l.title));
    }
    const plot = s('g', {'clip-path': 'url(#plot)'});
    svg.append(plot);
    const seqX = (seq, fallbackMs) => {
      const e = this.doc.events[this.index.get(seq)];
      return this.xOf(e ? e.t_ms : fallbackMs, seq);
    };

    // State bands.
    const SL = lanes.state;
    for (const b of this.doc.bands) {
      const x0 = seqX(b.from_seq, b.from_ms);
      const x1 = b.to_seq ? seqX(b.to_seq, b.to_ms) : this.xOf(b.to_ms, this.doc.events[this.doc.events.length - 1].seq) + (b.open ? 12 : 0);
      const w = Math.max(2, x1 - x0);
      const label = b.pause_mode ? `${b.status} (${b.pause_mode})` : b.status;
      const g = s('g', {class: bandClass(b), dataset: {status: b.status, mode: b.pause_mode, fromSeq: b.from_seq, toSeq: b.to_seq, pick: b.from_seq}},
        s('rect', {x: x0, y: SL.y, width: w, height: SL.h}),
        s('title', {}, `${label}: from event ${b.from_seq} (${utc(b.from_ms)})${b.to_seq ? ` to event ${b.to_seq} (${utc(b.to_ms)})` : ', still'}`));
      if (w > 8 * label.length) g.append(s('text', {x: x0 + 4, y: SL.y + SL.h / 2 + 4}, label));
      plot.append(g);
    }

    // Spans.
    for (const sp of this.doc.spans) {
      const L = lanes[sp.lane];
      const x0 = seqX(sp.from_seq, sp.from_ms);
      const x1 = sp.to_seq ? seqX(sp.to_seq, sp.to_ms) : x0 + 12;
      const w = Math.max(3, x1 - x0);
      const y = L.y + 3 + sp.row * ROW;
      const cls = `span span-${sp.lane} ${sp.open ? 'open' : sp.ok ? 'ok' : 'bad'}`;
      const g = s('g', {class: cls, dataset: {id: sp.id, fromSeq: sp.from_seq, toSeq: sp.to_seq, outcome: sp.outcome, pick: sp.to_seq || sp.from_seq}},
        s('rect', {x: x0, y, width: w, height: ROW - 4, rx: 2}),
        s('title', {}, `${sp.label} — ${sp.outcome} (events ${sp.from_seq}${sp.to_seq ? `–${sp.to_seq}` : ', still running'})`));
      if (w > 60) g.append(s('text', {x: x0 + 3, y: y + ROW - 7}, `${sp.label.slice(0, Math.floor(w / 7) - 8)} · ${sp.outcome}`));
      plot.append(g);
    }

    // Every event's mark.
    const marks = s('g', {class: 'marks'});
    for (const e of this.doc.events) {
      const L = lanes[e.lane];
      const x = this.xOf(e.t_ms, e.seq);
      if (x < LEFT - 4 || x > LEFT + this.plotWidth + 4) continue;
      const row = this.rowOf.get(`${e.lane}:${e.seq}`);
      const y = row === undefined ? L.y + L.h / 2 - 6 : L.y + 3 + row * ROW - 1;
      const hgt = row === undefined ? 12 : ROW - 2;
      const cls = `mark kind-${e.kind}${this.linked.has(e.seq) ? ' linked' : ''}${this.selected === e.seq ? ' selected' : ''}`;
      marks.append(s('rect', {class: cls, x: x - 2.5, y, width: 5, height: hgt, dataset: {seq: e.seq, kind: e.kind, pick: e.seq}},
        s('title', {}, `event ${e.seq} · ${e.kind} · ${e.time}`)));
    }
    plot.append(marks);

    // The axis.
    const axisY = height - AXIS + 6;
    const ax = s('g', {class: 'axis'});
    ax.append(s('line', {x1: LEFT, x2: LEFT + this.plotWidth, y1: axisY, y2: axisY}));
    const [v0, v1] = this.view;
    if (this.axis === 'time') {
      const step = niceStep(v1 - v0, 8);
      for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
        const x = this.xOf(t);
        ax.append(s('line', {x1: x, x2: x, y1: axisY, y2: axisY + 4}), s('text', {x, y: axisY + 16, 'text-anchor': 'middle'}, tickLabel(t, step)));
      }
    } else {
      const step = Math.max(1, Math.ceil((v1 - v0) / 10));
      for (let i = Math.max(0, Math.ceil(v0)); i <= v1 && i < this.doc.events.length; i += step) {
        const e = this.doc.events[i];
        const x = this.xOf(e.t_ms, e.seq);
        ax.append(s('line', {x1: x, x2: x, y1: axisY, y2: axisY + 4}), s('text', {x, y: axisY + 16, 'text-anchor': 'middle'}, `#${e.seq}`));
      }
    }
    svg.append(ax);
    this.drawCursor();
  }

  installZoom() {
    let drag = null;
    let queued = false;
    const redraw = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; this.draw(); });
    };
    const at = (ev) => {
      const r = this.svg.getBoundingClientRect();
      return ((ev.clientX - r.left) / r.width) * this.width;
    };
    this.svg.addEventListener('wheel', (ev) => {
      ev.preventDefault();
      const [v0, v1] = this.view;
      const f = Math.min(1, Math.max(0, (at(ev) - LEFT) / this.plotWidth));
      const pivot = v0 + f * (v1 - v0);
      const k = ev.deltaY < 0 ? 0.8 : 1.25;
      const span = Math.min(this.full[1] - this.full[0], Math.max(this.axis === 'time' ? 1 : 2, (v1 - v0) * k));
      let n0 = pivot - f * span;
      n0 = Math.max(this.full[0], Math.min(n0, this.full[1] - span));
      this.view = [n0, n0 + span];
      redraw();
    }, {passive: false});
    this.svg.addEventListener('mousedown', (ev) => { drag = {x: at(ev), view: this.view.slice()}; this.dragged = false; });
    window.addEventListener('mouseup', () => { drag = null; });
    this.svg.addEventListener('mousemove', (ev) => {
      if (!drag || !(ev.buttons & 1)) return;
      const dx = at(ev) - drag.x;
      if (Math.abs(dx) < 3) return;
      this.dragged = true;
      const [v0, v1] = drag.view;
      const shift = (-dx / this.plotWidth) * (v1 - v0);
      const span = v1 - v0;
      const n0 = Math.max(this.full[0], Math.min(v0 + shift, this.full[1] - span));
      this.view = [n0, n0 + span];
      redraw();
    });
  }
}
