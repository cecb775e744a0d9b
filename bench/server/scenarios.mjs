// scenarios.mjs: the prefix-cache scenarios of issue 17 against a running
// OpenAI-compatible server (q36 serve or llama-server: both answer
// /apply-template, /tokenize and report usage.prompt_tokens_details.
// cached_tokens): per request, the prompt's tokens, the tokens that changed
// (the prompt past its longest common prefix with any sequence the server
// evaluated before: an earlier prompt and the tokens generated for it but
// the last), the tokens the server re-read (prompt - cached) and the excess
// (re-read - changed; the goal is <= 64).
//
// Conversation A: a short system prompt and a user message of ~2,000
// tokens of words. Requests, in order (each reply greedy, MAX_TOKENS
// tokens, returned into the history as given, reasoning included):
//   1 A cold;  2 A extended exactly (its reply and a short user message);
//   3 request 2 with a word edited ~100 tokens before the end;
//   4 request 2 with a word edited ~1,500 words before the end;
//   5 conversation B: the same system prompt, a user message sharing A's
//     first 1,200 words, then other words;
//   6 A comes back: request 2 extended exactly (its reply, a user message).
// Token counts are deterministic for a model and seed; no timing is
// asserted. Prints one line per request and a JSON summary. Bounded: 6
// requests and at most 60 /tokenize calls.
// Usage: node scenarios.mjs URL [SEED=7] [MAX_TOKENS=16]
const [url, seedArg = "7", mtArg = "16"] = process.argv.slice(2);
if (!url) { console.error("usage: node scenarios.mjs URL [SEED] [MAX_TOKENS]"); process.exit(2); }
const maxTokens = Math.min(Math.max(Number(mtArg) | 0, 1), 256);
let seed = Number(seedArg) || 7;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const post = async (path, body) => {
  const r = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const t = await r.text();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${t.slice(0, 300)}`);
  return JSON.parse(t);
};

const vocab = ("the of and to in is that for it as with was on be by this are from at or an have not but which one all " +
  "were when there can more if no out so said what up its about into than them only other new some could time these " +
  "two may then first any like now such our over also did just after where most made between many before through back " +
  "years much way well down should because each people even work part last long great little world own life here how " +
  "state never under while same another place know around however home small found thought went say general high every " +
  "against number system group always something early course using during without program family within large").split(" ");
const words = (n) => [...Array(n)].map(() => vocab[Math.floor(rand() * vocab.length)]);
const render = (w) => { const l = []; for (let i = 0; i < w.length; i += 12) l.push(w.slice(i, i + 12).join(" ")); return l.join("\n") + "\n"; };
const system = "You are a careful assistant. Answer briefly and precisely.";

const tokenize = async (messages) => {
  const text = (await post("/apply-template", { messages })).prompt;
  return (await post("/tokenize", { content: text, add_special: false, parse_special: true })).tokens;
};
const lcp = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };
const seen = [];
const changedOf = (ids) => Math.max(1, seen.reduce((m, s) => Math.min(m, ids.length - lcp(s, ids)), ids.length));

// ~2,000 prompt tokens: the tokens per word measured on this tokenizer first
const probe = words(1000);
const perWord = (await tokenize([{ role: "user", content: render(probe) }])).length / 1000;
const nWords = Math.max(1600, Math.round(2000 / perWord));
const U = words(nWords);
const rows = [];
async function send(label, messages) {
  const ids = await tokenize(messages);
  const changed = changedOf(ids);
  const t1 = Date.now();
  const r = await post("/v1/chat/completions", { messages, max_tokens: maxTokens, temperature: 0, logprobs: true });
  const ms = Date.now() - t1;
  const gen = (r.choices[0].logprobs?.content ?? []).map((t) => t.id);
  seen.push([...ids, ...gen.slice(0, -1)]);
  const n = r.usage.prompt_tokens, cached = r.usage.prompt_tokens_details?.cached_tokens ?? 0, reread = n - cached;
  const row = { request: rows.length + 1, what: label, prompt: n, changed, reread, cached, excess: reread - changed,
    processed: r.timings?.prompt_n ?? null, ms };
  if (n !== ids.length) row.note = `the server's prompt has ${n} tokens, /tokenize gave ${ids.length}`;
  rows.push(row);
  console.log(`${row.request} ${label.padEnd(46)} prompt ${String(n).padStart(5)}  changed ${String(changed).padStart(5)}  ` +
    `re-read ${String(reread).padStart(5)}  excess ${String(row.excess).padStart(5)}  ${(ms / 1000).toFixed(1).padStart(6)} s` +
    (row.note ? `  (${row.note})` : ""));
  const m = r.choices[0].message;
  return { role: "assistant", content: m.content ?? "", ...(m.reasoning_content ? { reasoning_content: m.reasoning_content } : {}) };
}

const S = { role: "system", content: system };
const r1 = await send("A: cold", [S, { role: "user", content: render(U) }]);
const a2 = [S, { role: "user", content: render(U) }, r1, { role: "user", content: "Now summarise the above in one line." }];
const r2 = await send("A: exact extension", a2);
// the edit ~100 tokens before the end of request 2's prompt: the word whose
// edit leaves the fewest changed tokens >= 100 (counted against request 2)
const edited = (i) => { const w = U.slice(); w[i] = w[i] === "system" ? "program" : "system"; return w; };
const a2with = (w) => [S, { role: "user", content: render(w) }, r1, a2[3]];
const ids2 = await tokenize(a2);
let k = 1;
for (let tries = 0; tries < 40 && k < U.length; tries++, k += 4) {
  const ids = await tokenize(a2with(edited(U.length - k)));
  if (ids.length - lcp(ids2, ids) >= 100) break;
}
await send(`A: an edit ~100 tokens before the end (word -${k})`, a2with(edited(U.length - k)));
await send("A: an edit 1,500 words before the end", a2with(edited(U.length - 1500)));
await send("B: shares A's first 1,200 words", [S, { role: "user", content: render([...U.slice(0, 1200), ...words(U.length - 1200)]) }]);
await send("A comes back: request 2 extended exactly", [...a2, r2, { role: "user", content: "And in two lines?" }]);

const sum = (f) => rows.reduce((a, r) => a + f(r), 0);
console.log(JSON.stringify({ words: nWords, tokens_per_word: Number(perWord.toFixed(3)), prompt_tokens: sum((r) => r.prompt),
  reread_tokens: sum((r) => r.reread), changed_tokens: sum((r) => r.changed), rows }));
