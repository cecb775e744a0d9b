// vs_summary.mjs: the table of a vs_llama.sh load record: per -np, the
// median over repetitions of each server's aggregate tokens/s and median
// time to first token, and the medians of the per-repetition ratios
// q36 / llama-server (a repetition ran both servers back to back).
// Usage: node vs_summary.mjs OUT_DIR
import { readdirSync, readFileSync } from "node:fs";
const dir = process.argv[2];
if (!dir) { console.error("usage: node vs_summary.mjs OUT_DIR"); process.exit(2); }
const runs = {};
for (const f of readdirSync(dir)) {
  const m = /^load-(\d+)-(\d+)-(q36|llama)\.log$/.exec(f);
  if (!m) continue;
  const last = readFileSync(`${dir}/${f}`, "utf8").trim().split("\n").pop();
  let j;
  try { j = JSON.parse(last); } catch { continue; }
  ((runs[m[1]] ??= {})[m[2]] ??= {})[m[3]] = j;
}
const med = (a) => { const s = a.filter((x) => x != null && isFinite(x)).sort((x, y) => x - y); const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : null; };
const f = (x, d = 1) => (x == null ? "-" : x.toFixed(d));
console.log("| -np | reps | q36 tok/s | llama-server tok/s | ratio tok/s (q36/llama) | q36 TTFT ms | llama-server TTFT ms | ratio TTFT (q36/llama) | failed (q36, llama) |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
for (const np of Object.keys(runs).sort((a, b) => a - b)) {
  const reps = Object.values(runs[np]).filter((r) => r.q36 && r.llama);
  const col = (who, k) => reps.map((r) => r[who][k]);
  const ratio = (k) => reps.map((r) => (r.q36[k] != null && r.llama[k] ? r.q36[k] / r.llama[k] : null));
  const sum = (who) => reps.reduce((a, r) => a + r[who].failed, 0);
  console.log(`| ${np} | ${reps.length} | ${f(med(col("q36", "tokens_per_s")))} | ${f(med(col("llama", "tokens_per_s")))} | ` +
    `${f(med(ratio("tokens_per_s")), 2)} (${ratio("tokens_per_s").map((x) => f(x, 2)).join(", ")}) | ` +
    `${f(med(col("q36", "ttft_ms_median")), 0)} | ${f(med(col("llama", "ttft_ms_median")), 0)} | ` +
    `${f(med(ratio("ttft_ms_median")), 2)} (${ratio("ttft_ms_median").map((x) => f(x, 2)).join(", ")}) | ${sum("q36")}, ${sum("llama")} |`);
}
