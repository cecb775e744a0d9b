// spec.mjs: aggregate decode speed of q36 serve with and without MTP
// drafts, alternated in one run. Each repetition sends, to each server in
// turn, the same N concurrent greedy completions (one prompt file each,
// ignore_eos, MAX_TOKENS tokens), and times them from the first request
// sent to the last reply: aggregate tokens/s = the replies' tokens / that
// time (the prompts' reading included, the same on every server); decode
// tokens/s = the replies' tokens / the longest reply's decode time (the
// server's timings.predicted_ms, first token to last). The
// drafts' acceptance by draft position comes from /slots ("speculative")
// before and after. Every reply is checked against the first server's (the
// same text; no log-probabilities are asked for, as a code-completion client
// would not, and they cost a softmax over the vocabulary per token). Prints one JSON line per run, then a summary: per server
// the median tokens/s and its ratio to the first server's in the same
// repetition (median of the ratios).
// With LABEL=URL,PID the server's CPU time (user + system, /proc/PID/stat)
// over the run is read too: tokens per CPU second is steadier than wall time
// on a machine that other work shares (-t 1: one engine thread).
// Usage: node spec.mjs REPS MAX_TOKENS LABEL=URL[,PID]... -- PROMPT_FILE...
import { readFileSync } from "node:fs";
const args = process.argv.slice(2);
const reps = Number(args[0]), maxTokens = Number(args[1]);
const sep = args.indexOf("--");
const servers = args.slice(2, sep).map((a) => {
  const i = a.indexOf("="), [url, pid] = a.slice(i + 1).split(",");
  return { label: a.slice(0, i), url, pid };
});
const hz = 100;   // USER_HZ: clock ticks of /proc/PID/stat on Linux
const cpu = (pid) => {
  if (!pid) return null;
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(f[11]) + Number(f[12])) / hz;     // utime + stime (fields 14, 15)
};
const prompts = args.slice(sep + 1).map((f) => readFileSync(f, "utf8"));
if (!reps || !maxTokens || sep < 0 || !servers.length || !prompts.length) {
  console.error("usage: node spec.mjs REPS MAX_TOKENS LABEL=URL... -- PROMPT_FILE...");
  process.exit(2);
}
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const slots = async (url) => (await (await fetch(`${url}/slots`)).json()).map((s) => s.speculative).filter(Boolean);

async function complete(url, prompt) {
  const r = await fetch(`${url}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true }) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`${url}: ${r.status} ${JSON.stringify(j).slice(0, 300)}`);
  return j;
}

async function run(s) {
  const before = await slots(s.url);
  const c0 = cpu(s.pid), t0 = performance.now();
  const rs = await Promise.all(prompts.map((p) => complete(s.url, p)));
  const dt = (performance.now() - t0) / 1000, c1 = cpu(s.pid);
  const after = await slots(s.url);
  const tokens = rs.reduce((a, r) => a + r.usage.completion_tokens, 0);
  // the decode phase: from each reply's first token to its end (the server's
  // timings); the longest of them bounds the time all decoded together
  const dec = Math.max(...rs.map((r) => r.timings.predicted_ms)) / 1000;
  const out = { label: s.label, seconds: Number(dt.toFixed(3)), tokens, tokens_per_s: Number((tokens / dt).toFixed(2)),
    decode_tokens_per_s: Number((tokens / dec).toFixed(2)), prompt_tokens: rs.map((r) => r.usage.prompt_tokens) };
  if (c0 !== null) {
    out.cpu_seconds = Number((c1 - c0).toFixed(2));
    out.tokens_per_cpu_s = Number((tokens / (c1 - c0)).toFixed(2));
  }
  if (after.length) {
    const d = (f) => after.reduce((a, x, i) => a + f(x) - f(before[i]), 0);
    const k = after[0].drafted_at.length;
    out.rounds = d((x) => x.rounds);
    out.drafted = d((x) => x.drafted);
    out.accepted = d((x) => x.accepted);
    out.paused_steps = d((x) => x.paused_steps);
    out.drafted_at = [...Array(k).keys()].map((j) => d((x) => x.drafted_at[j]));
    out.accepted_at = [...Array(k).keys()].map((j) => d((x) => x.accepted_at[j]));
    out.acceptance_at = out.drafted_at.map((n, j) => n ? Number((out.accepted_at[j] / n).toFixed(3)) : null);
    out.tokens_per_verify_row = out.rounds ? Number(((out.accepted + out.rounds) / out.rounds).toFixed(2)) : null;
  }
  return { out, ids: rs.map((r) => r.choices[0].text) };
}

const runs = [];
let ref = null, mismatches = 0;
for (let r = 0; r < reps; r++) {
  const row = {};
  for (const s of servers) {
    const { out, ids } = await run(s);
    ref ??= ids;
    out.rep = r;
    out.same_tokens = ids.every((x, i) => x === ref[i]);
    if (!out.same_tokens) mismatches++;
    console.log(JSON.stringify(out));
    row[s.label] = out;
  }
  runs.push(row);
}
const base = servers[0].label;
const summary = servers.map((s) => {
  const tps = runs.map((r) => r[s.label].tokens_per_s), dps = runs.map((r) => r[s.label].decode_tokens_per_s);
  const ratio = runs.map((r) => r[s.label].tokens_per_s / r[base].tokens_per_s);
  const dratio = runs.map((r) => r[s.label].decode_tokens_per_s / r[base].decode_tokens_per_s);
  const o = { label: s.label, median_tokens_per_s: median(tps), min: Math.min(...tps), max: Math.max(...tps),
    median_ratio_to_first: Number(median(ratio).toFixed(3)), ratios: ratio.map((x) => Number(x.toFixed(3))),
    median_decode_tokens_per_s: median(dps), median_decode_ratio_to_first: Number(median(dratio).toFixed(3)),
    decode_ratios: dratio.map((x) => Number(x.toFixed(3))) };
  if (runs[0][s.label].tokens_per_cpu_s) {
    const cr = runs.map((r) => r[s.label].tokens_per_cpu_s / r[base].tokens_per_cpu_s);
    o.median_tokens_per_cpu_s = median(runs.map((r) => r[s.label].tokens_per_cpu_s));
    o.median_cpu_ratio_to_first = Number(median(cr).toFixed(3));
    o.cpu_ratios = cr.map((x) => Number(x.toFixed(3)));
  }
  const all = runs.map((r) => r[s.label]);
  if (all[0].drafted_at) {
    const k = all[0].drafted_at.length;
    const dr = [...Array(k).keys()].map((j) => all.reduce((a, x) => a + x.drafted_at[j], 0));
    const ac = [...Array(k).keys()].map((j) => all.reduce((a, x) => a + x.accepted_at[j], 0));
    o.acceptance_at = dr.map((n, j) => n ? Number((ac[j] / n).toFixed(3)) : null);
    o.acceptance = Number((ac.reduce((a, b) => a + b, 0) / Math.max(1, dr.reduce((a, b) => a + b, 0))).toFixed(3));
    const rounds = all.reduce((a, x) => a + x.rounds, 0);
    o.tokens_per_verify_row = Number(((ac.reduce((a, b) => a + b, 0) + rounds) / Math.max(1, rounds)).toFixed(2));
  }
  return o;
});
console.log(JSON.stringify({ summary, reps, max_tokens: maxTokens, prompts: prompts.length, mismatches }));
process.exit(mismatches ? 1 : 0);
