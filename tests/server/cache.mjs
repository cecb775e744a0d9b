// cache.mjs: the prefix cache as a client sees it, on a server started with
// the default cache flags (tests/server.test.sh): an edit re-reads at most
// the changed tokens + 64 (the default checkpoint spacing), and the tokens
// read from the cache are reported in streams too: Anthropic's
// message_start and message_delta usage (cache_read_input_tokens, and
// input_tokens without them), OpenAI's usage chunk
// (prompt_tokens_details.cached_tokens), read through the official SDKs.
// Prints "ok NAME" / "FAIL NAME: why".
// Usage: node cache.mjs BASE_URL API_KEY MODEL
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [base, key, model] = process.argv.slice(2);
const oa = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const an = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
let failed = 0;
const ok = (n) => console.log(`ok ${n}`);
const fail = (n, why) => { failed++; console.log(`FAIL ${n}: ${String(why).replace(/\n/g, " ").slice(0, 400)}`); };
async function kase(name, fn) {
  try { const r = await fn(); if (r === true || r === undefined) ok(name); else fail(name, r); }
  catch (e) { fail(name, e?.stack || e); }
}
let seed = 99;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const vocab = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango".split(" ");
const words = (n) => [...Array(n)].map(() => vocab[Math.floor(rand() * vocab.length)]);
const post = async (path, body) => {
  const r = await fetch(`${base}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`);
  return r.json();
};
const ids = async (messages) => (await post("/tokenize", { content: (await post("/apply-template", { messages })).prompt })).tokens;
const lcp = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };

// A prompt of ~300 tokens, then the same with one word changed ~180 tokens
// before its end: the re-read tokens are at most changed + 64, with the
// default flags (the checkpoint spacing of 512 re-read up to 511 more).
await kase("prefix_cache_default_edit_rereads_at_most_changed_plus_64", async () => {
  const w = words(170);
  const msgs = (x) => [{ role: "system", content: "Keep the list." }, { role: "user", content: x.join(" ") }];
  const a = await oa.chat.completions.create({ model, messages: msgs(w), max_tokens: 2, temperature: 0 });
  const idsA = await ids(msgs(w));
  const w2 = w.slice();
  w2[70] = w2[70] === "zulu" ? "yankee" : "zulu";
  const idsB = await ids(msgs(w2));
  const b = await oa.chat.completions.create({ model, messages: msgs(w2), max_tokens: 2, temperature: 0 });
  const changed = idsB.length - lcp(idsA, idsB), reread = b.usage.prompt_tokens - b.usage.prompt_tokens_details.cached_tokens;
  console.log(`# edit: ${reread} re-read for ${changed} changed of ${b.usage.prompt_tokens} tokens`);
  if (a.usage.prompt_tokens < 250 || changed < 150) return `the case did not test an edit: ${a.usage.prompt_tokens} tokens, ${changed} changed`;
  return (reread <= changed + 64 && reread >= changed) || `${reread} re-read for ${changed} changed of ${b.usage.prompt_tokens}`;
});

// The same Anthropic request twice, streamed: the second's message_start
// already counts the cached tokens (it is sent once the request has its
// slot), and message_delta gives the same numbers.
await kase("anthropic_stream_usage_reports_cache_reads", async () => {
  const body = { model, max_tokens: 3, system: `Stream cache test. ${words(60).join(" ")}`,
    messages: [{ role: "user", content: words(20).join(" ") }] };
  const n = (await an.messages.countTokens({ model, system: body.system, messages: body.messages })).input_tokens;
  const usages = async () => {
    const s = an.messages.stream(body);
    let start = null, delta = null;
    for await (const ev of s) {
      // copies: the SDK's accumulator updates the message_start snapshot later
      if (ev.type === "message_start") start = JSON.parse(JSON.stringify(ev.message.usage));
      if (ev.type === "message_delta") delta = JSON.parse(JSON.stringify(ev.usage));
    }
    return { start, delta };
  };
  await usages();
  const { start, delta } = await usages();
  if (!start || !delta) return `no usage: ${JSON.stringify({ start, delta })}`;
  if (!(start.cache_read_input_tokens > 50) || start.input_tokens + start.cache_read_input_tokens !== n)
    return `message_start usage ${JSON.stringify(start)} for a prompt of ${n}`;
  return (delta.cache_read_input_tokens === start.cache_read_input_tokens && delta.input_tokens === start.input_tokens &&
    delta.output_tokens >= 1) || `message_delta usage ${JSON.stringify(delta)}, message_start ${JSON.stringify(start)}`;
});

await kase("openai_stream_usage_reports_cached_tokens", async () => {
  const req = { model, messages: [{ role: "system", content: `Usage chunk test. ${words(60).join(" ")}` }, { role: "user", content: "Go." }],
    max_tokens: 3, stream: true, stream_options: { include_usage: true } };
  const last = async () => { let u = null; for await (const ch of await oa.chat.completions.create(req)) if (ch.usage) u = ch.usage; return u; };
  await last();
  const u = await last();
  return (u && u.prompt_tokens_details?.cached_tokens === u.prompt_tokens - 1) || `usage ${JSON.stringify(u)}`;
});

process.exit(failed ? 1 : 0);
