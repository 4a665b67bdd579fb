// format.js — how the console writes times, durations, sizes and money. Times are UTC, as
// sandboxctl prints them; amounts are the daemon's exact decimal strings, never re-rounded.

export function utc(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '—';
  return new Date(ms).toISOString().replace('T', ' ').replace(/\.000Z$/, 'Z');
}

export function utcDay(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

export function duration(ms) {
  const neg = ms < 0;
  let s = Math.abs(ms) / 1000;
  let out;
  if (s < 1) out = `${Math.round(s * 1000)}ms`;
  else if (s < 60) out = `${s.toFixed(s < 10 ? 1 : 0)}s`;
  else {
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const m = Math.floor(s / 60);
    out = d ? `${d}d${hh}h` : hh ? `${hh}h${m}m` : `${m}m${Math.floor(s - m * 60)}s`;
  }
  return neg ? `-${out}` : out;
}

export function age(fromMs, nowMs) {
  const d = nowMs - fromMs;
  return d < 0 ? `in ${duration(-d)}` : `${duration(d)} ago`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n), i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

// "$0.600000" from the daemon's "0.600000".
export function usd(text) {
  return text.startsWith('-') ? `-$${text.slice(1)}` : `$${text}`;
}

// Integer micro-dollars as exact dollars: "$0.600000".
export function usdMicros(m) {
  const neg = m < 0;
  const a = Math.abs(m);
  return `${neg ? '-' : ''}$${Math.trunc(a / 1e6)}.${String(a % 1e6).padStart(6, '0')}`;
}

// Micro-dollars as dollars for axes: "$0.12".
export function usdShort(micros) {
  const d = micros / 1e6;
  return `$${d >= 100 ? d.toFixed(0) : d >= 1 ? d.toFixed(2) : d.toPrecision(2)}`;
}

// RFC 3339 text to milliseconds.
export function ms(rfc3339) {
  return Date.parse(rfc3339);
}

// k=v pairs of a flat object, as sandboxctl's event lines show a payload.
export function pairs(obj) {
  return Object.entries(obj || {}).map(([k, v]) => {
    if (Array.isArray(v)) return `${k}=[${v.join(' ')}]`;
    if (v && typeof v === 'object') return `${k}={${Object.entries(v).map(([a, b]) => `${a}=${b}`).join(',')}}`;
    return `${k}=${v}`;
  }).join(' ');
}
