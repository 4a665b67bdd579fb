// api.js — the console's JSON routes (docs/console.md), as promises. A failed call rejects
// with an ApiError holding the project's error code and message, exactly as the daemon said
// them; a call without a live session also tells the app to show the sign-in page.

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

// The server's own time for the last answer of each route ("Server-Timing: app;dur=…").
export const serverTiming = {};
let onSignedOut = () => {};
export function whenSignedOut(fn) { onSignedOut = fn; }

async function answer(res, route) {
  const timing = /app;dur=([0-9.]+)/.exec(res.headers.get('Server-Timing') || '');
  if (timing) serverTiming[route] = parseFloat(timing[1]);
  let doc = null;
  try {
    doc = await res.json();
  } catch (e) {
    throw new ApiError('unavailable', `the console answered HTTP ${res.status} without JSON; reload the page`, res.status);
  }
  if (!res.ok) {
    const err = (doc && doc.error) || {};
    if (res.status === 401) onSignedOut();
    throw new ApiError(err.code || 'internal', err.message || `HTTP ${res.status}`, res.status);
  }
  return doc;
}

// GET /api/<path> with query parameters (arrays repeat the parameter; empty values are left out).
export function url(path, params) {
  const u = new URL(`/api/${path}`, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x !== undefined && x !== null && x !== '') u.searchParams.append(k, String(x));
    }
  }
  return u.pathname + u.search;
}

export async function get(path, params) {
  let res;
  try {
    res = await fetch(url(path, params), {credentials: 'same-origin', headers: {Accept: 'application/json'}});
  } catch (e) {
    throw new ApiError('unavailable', 'sandboxd cannot be reached; check that it runs, then reload', 0);
  }
  return answer(res, path.split('/')[0] === 'sandboxes' && path.includes('/') ? `sandboxes/${path.split('/').pop()}` : path);
}

export async function post(path, body) {
  let res;
  try {
    res = await fetch(`/api/${path}`, {
      method: 'POST', credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', Accept: 'application/json'},
      body: JSON.stringify(body || {}),
    });
  } catch (e) {
    throw new ApiError('unavailable', 'sandboxd cannot be reached; check that it runs, then reload', 0);
  }
  return answer(res, path);
}
