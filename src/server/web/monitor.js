// monitor.js: the monitor view. While it is shown it reads GET /monitor
// once a second and draws the model, the memory plan, the totals, every
// slot, and decode and prefill tokens/s over the last five minutes (or
// since the page opened, when that is less). The
// rates come from the differences of the server's counters between two
// reads, so a gap while the view was hidden shows as the average over it.

import { api, AuthError } from './api.js';
import { drawPlot } from './plot.js';

const $ = (id) => document.getElementById(id);
const SPAN = 300;               // seconds of history drawn
const PERIOD = 1000;            // ms between reads

let timer = null;
let last = null;                // the previous snapshot's counters
const decode = [], prefill = [];

const fmtBytes = (b) => {
  if (b == null) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return `${b.toFixed(i ? 1 : 0)} ${u[i]}`;
};
const fmtCount = (n) => (n == null ? '–' : n >= 1e9 ? `${(n / 1e9).toFixed(2)} G` : n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : String(n));
const fmtRate = (v) => (v == null ? '–' : v.toFixed(1));
const fmtTime = (s) => (s == null ? '–' : s < 60 ? `${s.toFixed(1)} s` : s < 3600 ? `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s` : `${(s / 3600).toFixed(1)} h`);

function fill(dl, rows) {
  const id = typeof dl === 'string' ? $(dl) : dl;
  id.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    id.append(dt, dd);
  }
}

// Prefix-cache hits and size, MTP acceptance, GPU power and J/token: the
// server sends null for each until q36 measures it (see monitor.c); then
// its fields are shown as they come. No number is shown that the server
// did not send.
function optional(dl, obj, why) {
  if (obj == null) {
    fill(dl, [['status', 'not available'], ['why', why]]);
    $(dl).closest('.card').classList.add('unavailable');
    return;
  }
  $(dl).closest('.card').classList.remove('unavailable');
  fill(dl, Object.entries(obj).map(([k, v]) => [k.replace(/_/g, ' '), typeof v === 'number' ? String(+v.toFixed(3)) : String(v)]));
}

function draw(r) {
  const m = r.model, s = r.server, mem = r.memory, t = r.totals;
  fill('mon-model', [
    ['file', m.id], ['architecture', m.arch], ['parameters', fmtCount(m.n_params)],
    ['size', fmtBytes(m.n_bytes)], ['layers', `${m.n_layer} (${m.n_attn_layers} attention)`],
    ['width', m.n_embd], ['experts', m.n_expert ? `${m.n_expert_used} of ${m.n_expert}` : 'dense'],
    ['MTP blocks', m.n_nextn], ['training context', m.n_ctx_train],
  ]);
  fill('mon-server', [
    ['slots', s.n_slots], ['context per slot', s.n_ctx], ['backend', s.backend],
    ['threads', s.n_threads || 'all'], ['API key', s.api_key ? 'required' : 'none'], ['uptime', fmtTime(r.uptime)],
  ]);
  fill('mon-memory', mem.error ? [['error', mem.error]] : [
    ['weights (mapped)', fmtBytes(mem.weights)], ['K/V per slot', fmtBytes(mem.kv_per_slot)],
    ['K/V per token', fmtBytes(mem.kv_per_token)], ['recurrent per slot', fmtBytes(mem.recurrent_per_slot)],
    ['scratch per slot', fmtBytes(mem.scratch_per_slot)], [`all ${s.n_slots} slots`, fmtBytes(mem.slots_total)],
  ]);
  fill('mon-totals', [
    ['requests', t.requests], ['running', t.processing], ['waiting', t.deferred],
    ['prompt tokens', fmtCount(t.prompt_tokens)], ['generated tokens', fmtCount(t.tokens_predicted)],
    ['errors', t.errors], ['cancelled', t.cancelled],
  ]);
  const tb = $('mon-slots').tBodies[0];
  tb.replaceChildren();
  for (const sl of r.slots) {
    const tr = document.createElement('tr');
    tr.dataset.state = sl.state;
    const cells = [sl.id, sl.state, sl.id_task >= 0 ? sl.id_task : '–', sl.n_prompt ?? '–', sl.n_gen ?? '–',
      fmtRate(sl.prefill_tps), fmtRate(sl.decode_tps), sl.seconds != null ? fmtTime(sl.seconds) : '–'];
    cells.forEach((v, i) => {
      const td = document.createElement('td');
      if (i === 1) {
        const b = document.createElement('span');
        b.className = `badge ${sl.state}`;
        b.textContent = v;
        td.append(b);
      } else {
        td.textContent = v;
      }
      tr.append(td);
    });
    tb.append(tr);
  }
  optional('mon-prefix', r.prefix_cache, 'the prefix cache is off (--cache-ram 0)');
  optional('mon-mtp', r.mtp, 'speculative decoding is off (q36 serve --spec-type draft-mtp)');
  optional('mon-gpu', r.gpu, r.server.backend === 'cpu' ? 'no GPU backend (CPU)' : 'not reported');

  // Rates between this read and the last; counters are kept monotonic
  // (a request that ends between the server's two reads can dip once).
  const gen = Math.max(t.tokens_predicted, last ? last.gen : 0);
  const pr = Math.max(t.prompt_tokens, last ? last.prompt : 0);
  if (last && r.time > last.time) {
    const dt = r.time - last.time;
    decode.push({ t: r.time, v: (gen - last.gen) / dt });
    prefill.push({ t: r.time, v: (pr - last.prompt) / dt });
    while (decode.length && decode[0].t < r.time - SPAN - PERIOD / 1000) decode.shift();
    while (prefill.length && prefill[0].t < r.time - SPAN - PERIOD / 1000) prefill.shift();
  }
  last = { time: r.time, gen, prompt: pr };
  drawPlots();
}

function drawPlots() {
  if (!last) return;
  // The window grows from the first read to SPAN, so a fresh page's
  // first seconds fill the plot rather than its right edge.
  const span = Math.min(SPAN, Math.max(30, last.time - (decode.length ? decode[0].t : last.time) + 2));
  drawPlot($('plot-decode'), decode, last.time, span);
  drawPlot($('plot-prefill'), prefill, last.time, span);
  const now = (a) => (a.length ? `now ${a[a.length - 1].v.toFixed(1)}` : '');
  $('plot-decode-now').textContent = now(decode);
  $('plot-prefill-now').textContent = now(prefill);
}

async function tick() {
  try {
    const r = await (await api('/monitor')).json();
    draw(r);
    $('mon-status').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $('mon-status').textContent = e instanceof AuthError ? 'needs the API key' : `cannot read /monitor: ${e.message}`;
    if (e instanceof AuthError) { stopMonitor(); return; }
  }
  if (timer !== null) timer = setTimeout(tick, PERIOD);
}

export function startMonitor() {
  if (timer !== null) return;
  timer = 0;
  tick();
}

export function stopMonitor() {
  if (timer) clearTimeout(timer);
  timer = null;
}

window.addEventListener('resize', drawPlots);
