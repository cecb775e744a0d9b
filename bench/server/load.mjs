// load.mjs: streaming chat clients against a running q36 serve, bounded in
// count and time. Each client loops: one streamed /v1/chat/completions
// request of MAX_TOKENS tokens, read to [DONE]. Prints one progress line
// every 10 s (completed, failed, tokens/s, the server's RSS when its pid is
// given) and a JSON summary at the end, with the time to first token (from
// sending a request to the first chunk with non-empty content or
// reasoning_content: median and 90th percentile, ms). Works against any
// OpenAI-compatible server that sends usage with stream_options.
// Usage: node load.mjs URL CLIENTS SECONDS [MAX_TOKENS] [SERVER_PID] [API_KEY]
const [url, cArg, sArg, mArg = "64", pidArg = "", key = ""] = process.argv.slice(2);
const clients = Math.min(Math.max(Number(cArg) | 0, 1), 256);
const seconds = Math.min(Math.max(Number(sArg) || 0, 1), 3600);
const maxTokens = Math.min(Math.max(Number(mArg) | 0, 1), 4096);
if (!url) { console.error("usage: node load.mjs URL CLIENTS SECONDS [MAX_TOKENS] [SERVER_PID] [API_KEY]"); process.exit(2); }
import { readFileSync } from "node:fs";
const rss = () => {
  if (!pidArg) return null;
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pidArg}/status`, "utf8"))[1]) * 1024; } catch { return null; }
};
const t0 = Date.now(), end = t0 + seconds * 1000;
let done = 0, failed = 0, tokens = 0, firstError = null;
const ttft = [];
const rssSamples = [];
async function one(i, n) {
  const t1 = Date.now();
  const r = await fetch(`${url}/v1/chat/completions`, { method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ messages: [{ role: "user", content: `Client ${i}, request ${n}: tell me a story.` }],
      max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } }) });
  if (r.status !== 200) throw new Error(`status ${r.status}: ${(await r.text()).slice(0, 200)}`);
  const rd = r.body.getReader(), dec = new TextDecoder();
  let t = "", first = 0;
  for (;;) {
    const { value, done: end } = await rd.read();
    if (end) break;
    t += dec.decode(value, { stream: true });
    if (!first && /"(reasoning_)?content":"[^"]/.test(t)) first = Date.now();
  }
  if (first) ttft.push(first - t1);
  if (!t.trimEnd().endsWith("data: [DONE]")) throw new Error(`stream did not end with [DONE]: ${t.slice(-120)}`);
  const u = /"completion_tokens":(\d+)/.exec(t);
  tokens += u ? Number(u[1]) : 0;
}
async function client(i) {
  for (let n = 0; Date.now() < end; n++) {
    try { await one(i, n); done++; } catch (e) { failed++; firstError ??= String(e); }
  }
}
const timer = setInterval(() => {
  const s = (Date.now() - t0) / 1000, m = rss();
  if (m) rssSamples.push({ t: s, rss: m });
  console.log(`${s.toFixed(0)} s: ${done} done, ${failed} failed, ${(tokens / s).toFixed(1)} tok/s` + (m ? `, rss ${(m / 1048576).toFixed(1)} MiB` : ""));
}, 10000);
const r0 = rss();
await Promise.all([...Array(clients).keys()].map(client));
clearInterval(timer);
const s = (Date.now() - t0) / 1000, r1 = rss();
// RSS growth after warm-up: from the first sample at or after 20% of the run to the end.
const warm = rssSamples.find((x) => x.t >= seconds * 0.2);
ttft.sort((a, b) => a - b);
const pct = (q) => (ttft.length ? ttft[Math.min(ttft.length - 1, Math.floor(q * ttft.length))] : null);
console.log(JSON.stringify({ clients, seconds: Number(s.toFixed(1)), max_tokens: maxTokens, completed: done, failed,
  tokens, tokens_per_s: Number((tokens / s).toFixed(2)), ttft_ms_median: pct(0.5), ttft_ms_p90: pct(0.9), rss_start: r0, rss_after_warmup: warm?.rss ?? null, rss_end: r1,
  rss_growth_after_warmup: warm && r1 ? Number(((r1 - warm.rss) / warm.rss).toFixed(4)) : null, first_error: firstError }));
process.exit(failed ? 1 : 0);
