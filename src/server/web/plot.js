// plot.js: a step plot of (time, value) points on a canvas, the last
// `span` seconds up to `now`, with a y axis rounded up to 1, 2 or 5 x 10^k.
// Colours come from the page's CSS variables, so dark mode follows.

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

export function drawPlot(canvas, points, now, span) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (!w || !h) return;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const css = getComputedStyle(document.documentElement);
  const fg = css.getPropertyValue('--muted').trim() || '#888';
  const grid = css.getPropertyValue('--line').trim() || '#ddd';
  const accent = css.getPropertyValue('--accent').trim() || '#36c';
  const left = 44, right = 8, top = 8, bottom = 20;
  const pw = w - left - right, ph = h - top - bottom;
  const vis = points.filter((p) => p.t >= now - span);
  const ymax = niceMax(Math.max(0, ...vis.map((p) => p.v)));
  const x = (t) => left + pw * (1 - (now - t) / span);
  const y = (v) => top + ph * (1 - v / ymax);

  g.font = '11px system-ui, sans-serif';
  g.fillStyle = fg;
  g.strokeStyle = grid;
  g.lineWidth = 1;
  g.textAlign = 'right';
  g.textBaseline = 'middle';
  for (let i = 0; i <= 5; i++) {
    const v = (ymax * i) / 5;
    g.beginPath();
    g.moveTo(left, Math.round(y(v)) + 0.5);
    g.lineTo(w - right, Math.round(y(v)) + 0.5);
    g.stroke();
    g.fillText(v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1), left - 6, y(v));
  }
  g.textAlign = 'center';
  g.textBaseline = 'top';
  const step = span > 120 ? 60 : span > 40 ? 20 : 10;
  for (let k = 0; k * step <= span; k++) {
    const xx = x(now - k * step);
    const label = !k ? 'now' : step === 60 ? `-${k} min` : `-${k * step} s`;
    g.fillText(label, Math.min(Math.max(xx, left + 16), w - right - 12), h - bottom + 5);
  }
  if (vis.length < 2) return;
  // Steps: each value holds from its sample back to the one before it.
  g.beginPath();
  g.moveTo(x(vis[0].t), y(0));
  let prev = vis[0];
  for (const p of vis.slice(1)) {
    g.lineTo(x(prev.t), y(p.v));
    g.lineTo(x(p.t), y(p.v));
    prev = p;
  }
  g.lineTo(x(prev.t), y(0));
  g.closePath();
  g.globalAlpha = 0.18;
  g.fillStyle = accent;
  g.fill();
  g.globalAlpha = 1;
  g.beginPath();
  prev = vis[0];
  g.moveTo(x(prev.t), y(vis[1].v));
  for (const p of vis.slice(1)) {
    g.lineTo(x(prev.t), y(p.v));
    g.lineTo(x(p.t), y(p.v));
    prev = p;
  }
  g.strokeStyle = accent;
  g.lineWidth = 1.5;
  g.stroke();
}
