// cachedir.mjs: one greedy request to a server started with --cache-dir
// (tests/server.test.sh runs it against a server, stops it, and runs it
// again against a restarted one). PHASE "first": the reply's signature
// (text and token log-probabilities) goes to FILE. PHASE "again": the
// prompt must come from the cache but its last token (the checkpoints the
// first server wrote) and the reply must equal FILE's. PHASE "cold":
// nothing may come from the cache (a refused file). Prints "ok NAME" /
// "FAIL NAME: why".
// Usage: node cachedir.mjs URL PHASE FILE
import { readFileSync, writeFileSync } from "node:fs";
const [url, phase, file] = process.argv.slice(2);
const body = { messages: [{ role: "system", content: `Persisted prefix. ${"lorem ipsum dolor sit amet ".repeat(40)}` },
  { role: "user", content: "Continue." }], max_tokens: 8, temperature: 0, logprobs: true };
const r = await (await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
  body: JSON.stringify(body) })).json();
const sig = JSON.stringify([r.choices?.[0]?.message, r.choices?.[0]?.logprobs?.content?.map((t) => [t.id, t.logprob])]);
const n = r.usage?.prompt_tokens, c = r.usage?.prompt_tokens_details?.cached_tokens;
const say = (name, good, why) => console.log(good ? `ok ${name}` : `FAIL ${name}: ${why}`);
if (phase === "first") {
  writeFileSync(file, sig);
  say("cache_dir_first_request", n > 100 && c === 0, JSON.stringify(r.usage ?? r));
} else if (phase === "again") {
  say("cache_dir_restart_reuses_checkpoints", n > 100 && c === n - 1, JSON.stringify(r.usage ?? r));
  say("cache_dir_restored_reply_equals_cold", sig === readFileSync(file, "utf8"), `${sig.slice(0, 200)} vs ${readFileSync(file, "utf8").slice(0, 200)}`);
} else {
  say(`cache_dir_${phase}_serves_cold`, n > 100 && c === 0, JSON.stringify(r.usage ?? r));
}
