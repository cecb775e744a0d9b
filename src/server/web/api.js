// api.js: calls to q36 serve with the API key, and the SSE reader.
// The key lives in localStorage ("q36.key") and goes out as a Bearer
// header on every data call; a 401 calls the handler main.js sets (it asks
// for the key) and throws AuthError.

const KEY = 'q36.key';

export function getKey() { return localStorage.getItem(KEY) || ''; }
export function setKey(k) { if (k) localStorage.setItem(KEY, k); else localStorage.removeItem(KEY); }

export class AuthError extends Error {}

let onAuth = () => {};
export function setAuthHandler(fn) { onAuth = fn; }

// fetch(path) with the key; a non-2xx answer throws with the server's message.
export async function api(path, opts = {}) {
  const headers = Object.assign({}, opts.headers);
  const k = getKey();
  if (k) headers.Authorization = 'Bearer ' + k;
  let body = opts.body;
  if (body !== undefined && typeof body !== 'string') {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(body);
  }
  const r = await fetch(path, Object.assign({}, opts, { headers, body }));
  if (r.status === 401) {
    onAuth();
    throw new AuthError('this server needs its API key');
  }
  if (!r.ok) {
    let msg = r.statusText;
    try {
      const j = await r.json();
      msg = (j.error && j.error.message) || JSON.stringify(j);
    } catch (_) { /* not JSON: the status text */ }
    throw new Error(`${r.status}: ${msg}`);
  }
  return r;
}

// The data objects of a server-sent event stream, until "[DONE]" or the end.
export async function* sse(response) {
  const reader = response.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev.split('\n').filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (!data) continue;                  // a keep-alive comment
      if (data === '[DONE]') return;
      yield JSON.parse(data);
    }
  }
}
