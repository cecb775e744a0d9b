// batch.mjs: continuous batching and the prefix cache, end to end, in exact
// mode. Two servers of the same model: COLD (no prefix cache, -np 8) and
// CACHED (a prefix cache small enough to thin and evict, checkpoints every few
// tokens, several slots). Prints "ok NAME" / "FAIL NAME: why".
//  - a greedy reply is the same alone and among 7 concurrent streams (COLD);
//  - a greedy reply is the same chosen from ids on the engine and from logits;
//  - greedy replies served from the cache (restored prefix + the rest) are
//    bit-identical (text, token ids, log-probabilities) to the same requests
//    served cold, over random edit points in a shared conversation, sent
//    several at a time, with thinning and evictions along the way.
// Usage: node batch.mjs COLD_URL CACHED_URL SEED  (env BATCH_TAG: a prefix of
// every case name, for a second pair of servers, e.g. with q8_0 K/V caches)
const [cold, cached, seedArg] = process.argv.slice(2);
const tag = process.env.BATCH_TAG ? `${process.env.BATCH_TAG}_` : "";
let failed = 0;
const ok = (n) => console.log(`ok ${tag}${n}`);
const fail = (n, why) => { failed++; console.log(`FAIL ${tag}${n}: ${String(why).replace(/\n/g, " ").slice(0, 600)}`); };
async function kase(name, fn) {
  try { const r = await fn(); if (r === true || r === undefined) ok(name); else fail(name, r); }
  catch (e) { fail(name, e?.stack || e); }
}
let seed = Number(seedArg) || 1;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const pick = (a) => a[Math.floor(rand() * a.length)];

async function chat(base, body) {
  const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ temperature: 0, logprobs: true, top_logprobs: 1, ...body }) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(j)}`);
  return j;
}
const sig = (r) => JSON.stringify([r.choices[0].message.content, r.choices[0].message.reasoning_content,
  r.choices[0].logprobs.content.map((t) => [t.token, t.logprob])]);
async function metric(base, name) {
  const m = (await (await fetch(`${base}/metrics`)).text()).match(new RegExp(`^${name} (\\S+)`, "m"));
  return m ? Number(m[1]) : NaN;
}

// ---- continuous batching -------------------------------------------------------------------------
await kase("greedy_reply_alone_equals_among_7_streams", async () => {
  const req = { messages: [{ role: "user", content: "One greedy request, the same twice." }], max_tokens: 32,
    chat_template_kwargs: { enable_thinking: false } };
  const alone = sig(await chat(cold, req));
  // 7 streams with prompts of different lengths: prompt chunks and decode rows
  // of other slots share the passes of the request under test.
  const streams = [...Array(7)].map(async (_, i) => {
    const r = await fetch(`${cold}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: `Stream ${i} `.repeat(3 + 17 * i) }], max_tokens: 40 + 4 * i,
        stream: true, seed: i, temperature: 1.0 }) });
    const t = await r.text();
    return t.includes("[DONE]") ? 0 : 1;
  });
  await new Promise((res) => setTimeout(res, 100));
  const together = sig(await chat(cold, req));
  const bad = (await Promise.all(streams)).reduce((a, b) => a + b, 0);
  if (bad) return `${bad} of the 7 streams did not complete`;
  return alone === together || `alone ${alone.slice(0, 200)} vs together ${together.slice(0, 200)}`;
});

// A greedy request without log-probabilities takes its choices as ids chosen
// by the engine (sched_row.best: the argmax on the backend, one id a row);
// with them, from the logits on the host: the same reply either way.
await kase("greedy_ids_from_engine_equal_greedy_from_logits", async () => {
  const req = { messages: [{ role: "user", content: "Greedy from ids, greedy from logits." }], max_tokens: 48,
    chat_template_kwargs: { enable_thinking: false } };
  const fromLogits = await chat(cold, req);
  const r = await fetch(`${cold}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ temperature: 0, ...req }) });
  const fromIds = await r.json();
  if (r.status !== 200) return `${r.status} ${JSON.stringify(fromIds)}`;
  const key = (j) => JSON.stringify([j.choices[0].message.content, j.choices[0].message.reasoning_content,
    j.choices[0].finish_reason, j.usage.completion_tokens]);
  return key(fromLogits) === key(fromIds) || `from logits ${key(fromLogits).slice(0, 200)} vs from ids ${key(fromIds).slice(0, 200)}`;
});

// Sampled with top_k and no log-probabilities, a row's best logits come back
// instead of the row (q36_engine_eval_hid_topk): four such requests at once
// (top_k 20, top_k 40 with top_p and min_p, top_k 5 with ignore_eos, top_k
// 64) give the replies the same requests give one at a time with
// log-probabilities, which take whole rows; the server counted top-k rows.
await kase("sampled_from_top_k_equal_sampled_from_logits", async () => {
  const base = (i) => ({ messages: [{ role: "user", content: `Sample me, request ${i}.` }], max_tokens: 40,
    chat_template_kwargs: { enable_thinking: false }, temperature: 0.9, seed: 100 + i,
    ...[{ top_k: 20 }, { top_k: 40, top_p: 0.9, min_p: 0.02 }, { top_k: 5, ignore_eos: true }, { top_k: 64 }][i] });
  const key = (j) => JSON.stringify([j.choices[0].message.content, j.choices[0].finish_reason, j.usage.completion_tokens]);
  const top0 = await metric(cold, "q36:output_rows_topk_total");
  const fromTop = await Promise.all([0, 1, 2, 3].map(async (i) => {
    const r = await fetch(`${cold}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify(base(i)) });
    const j = await r.json();
    if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(j)}`);
    return j;
  }));
  const top1 = await metric(cold, "q36:output_rows_topk_total");
  const bad = [];
  for (let i = 0; i < 4; i++) {
    const fromRows = await chat(cold, base(i));
    if (key(fromRows) !== key(fromTop[i])) bad.push(`request ${i}: ${key(fromTop[i]).slice(0, 160)} vs ${key(fromRows).slice(0, 160)}`);
  }
  const top2 = await metric(cold, "q36:output_rows_topk_total");
  if (bad.length) return bad.join("; ");
  return (top1 - top0 >= 100 && top2 === top1) || `top-k rows: ${top1 - top0} for the four, ${top2 - top1} with log-probabilities`;
});

// ---- the prefix cache ----------------------------------------------------------------------------
const words = "the of and to in is that for it as with was on be by this are from or have an they which one you were all we her she there would their will when who him been has more if no out so up said what its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people".split(" ");
const para = (n) => [...Array(n)].map(() => pick(words)).join(" ");
const system = `You are a coding agent. Rules: ${para(120)}.`;
const turns = [];
for (let i = 0; i < 6; i++) turns.push({ role: "user", content: `Task ${i}: ${para(15 + Math.floor(rand() * 40))}` },
  { role: "assistant", content: `Done ${i}: ${para(10 + Math.floor(rand() * 20))}` });

// A request: the conversation up to a random turn, with one random edit (a
// word inserted in a random message, the system prompt included) or none.
function request() {
  const upto = 1 + 2 * Math.floor(rand() * 6);
  const msgs = [{ role: "system", content: system }, ...turns.slice(0, upto).map((m) => ({ ...m }))];
  const r = rand();
  if (r < 0.75) {
    const m = msgs[Math.floor(rand() * msgs.length)];
    const w = m.content.split(" ");
    w.splice(Math.floor(rand() * (w.length + 1)), 0, pick(words).toUpperCase());
    m.content = w.join(" ");
  }
  return { messages: msgs, max_tokens: 12, chat_template_kwargs: { enable_thinking: false } };
}

await kase("prefix_cache_replies_equal_cold", async () => {
  const reqs = [...Array(16)].map(request);
  const bad = [];
  let reused = 0;
  for (let g = 0; g < reqs.length; g += 4) {          // 4 at a time: several slots
    const group = reqs.slice(g, g + 4);
    const hot = await Promise.all(group.map((q) => chat(cached, q)));
    const cool = await Promise.all(group.map((q) => chat(cold, q)));
    for (let i = 0; i < group.length; i++) {
      reused += hot[i].usage.prompt_tokens_details.cached_tokens;
      if (cool[i].usage.prompt_tokens_details.cached_tokens !== 0) bad.push(`request ${g + i}: the cold server reused tokens`);
      if (sig(hot[i]) !== sig(cool[i]))
        bad.push(`request ${g + i} (${hot[i].usage.prompt_tokens_details.cached_tokens} of ${hot[i].usage.prompt_tokens} cached): ` +
          `${sig(hot[i]).slice(0, 120)} vs cold ${sig(cool[i]).slice(0, 120)}`);
    }
  }
  if (bad.length) return bad.join("; ");
  return reused > 0 || "no request reused a cached prefix";
});

// Room was made (state checkpoints thinned first, then whole branches
// evicted) and the budget held.
await kase("prefix_cache_made_room", async () => {
  const ev = await metric(cached, "q36:prefix_cache_evictions_total"), th = await metric(cached, "q36:prefix_cache_thinned_total");
  const bytes = await metric(cached, "q36:prefix_cache_bytes"), budget = await metric(cached, "q36:prefix_cache_budget_bytes");
  return (ev + th > 0 && bytes <= budget) || `evictions ${ev}, thinned ${th}, ${bytes} bytes of ${budget}`;
});

// The same request again: all but its last token come from the cache.
await kase("prefix_cache_same_request_again", async () => {
  const q = request();
  const a = await chat(cached, q), b = await chat(cached, q);
  const n = b.usage.prompt_tokens, c = b.usage.prompt_tokens_details.cached_tokens;
  if (b.timings?.cache_n !== c || b.timings?.prompt_n !== n - c) return `timings ${JSON.stringify(b.timings)}`;
  return (c === n - 1 && sig(a) === sig(b)) || `${c} of ${n} cached; same reply: ${sig(a) === sig(b)}`;
});

// The next turn of a conversation: the prompt extends the previous one's
// prompt and reply; everything up to the reply's end is reused.
await kase("prefix_cache_next_turn_reuses_reply", async () => {
  const msgs = [{ role: "system", content: `Another agent. ${para(40)}` }, { role: "user", content: para(20) }];
  const a = await chat(cached, { messages: msgs, max_tokens: 10, chat_template_kwargs: { enable_thinking: false } });
  const m = a.choices[0].message;
  msgs.push({ role: "assistant", content: m.content, reasoning_content: m.reasoning_content }, { role: "user", content: para(8) });
  const b = await chat(cached, { messages: msgs, max_tokens: 4, chat_template_kwargs: { enable_thinking: false } });
  const c = b.usage.prompt_tokens_details.cached_tokens;
  const want = a.usage.prompt_tokens + a.usage.completion_tokens - 1;   // the stop token was not evaluated
  return (c >= want - 1) || `${c} cached of ${b.usage.prompt_tokens}; the first turn ended at ${want}`;
});

// Anthropic's usage: input_tokens leaves out the tokens read from the cache.
await kase("prefix_cache_anthropic_usage", async () => {
  const model = (await (await fetch(`${cached}/v1/models`)).json()).data[0].id;
  const body = { model, max_tokens: 4, system: [{ type: "text", text: `x-anthropic-billing-header: cch=${Math.floor(rand() * 1e5)};` },
    { type: "text", text: system }], messages: [{ role: "user", content: "Hello" }] };
  const post = async () => (await fetch(`${cached}/v1/messages`, { method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify(body) })).json();
  await post();
  body.system[0].text = `x-anthropic-billing-header: cch=${Math.floor(rand() * 1e5)};`;   // a new stamp
  const r = await post();
  const u = r.usage;
  return (u.cache_read_input_tokens > 100 && u.input_tokens < 20) || JSON.stringify(u);
});

await kase("prefix_cache_slots_and_metrics", async () => {
  const slots = await (await fetch(`${cached}/slots`)).json();
  const hits = await metric(cached, "q36:prefix_cache_hits_total");
  const ct = await metric(cached, "llamacpp:prompt_tokens_cached_total");
  return (slots.every((s) => "n_cached" in s) && hits > 0 && ct > 0) || `${JSON.stringify(slots)} hits ${hits} cached ${ct}`;
});

process.exit(failed ? 1 : 0);
