// replay.mjs: replays a scripted agent conversation against a running
// q36 serve and reports, per turn, the prompt tokens the server re-read
// (prompt - cached) beside the tokens that changed: the prompt's tokens past
// its longest common prefix with any sequence the server evaluated before
// (an earlier prompt followed by the tokens generated for it, but its last
// one, which is sampled and never evaluated). The goal: re-read <= changed
// + 64 at every turn.
//
// The script (deterministic for a seed): conversation A, 14 turns, and B,
// 6 turns interleaved with A's from A's 4th turn on, share a system prompt
// and tool list (~1,000 tokens). A turn sends the conversation so far plus
// a new user message or a tool result of 200-4,000 tokens; the reply
// (greedy, thinking on, preserve_thinking default) goes back into the
// history as returned (content and reasoning_content). A's system prompt is
// edited at its 8th turn (a line in its middle changes), one of A's earlier
// tool results is trimmed at its 12th turn, and every request carries a new
// billing stamp (x-anthropic-billing-header ... cch=) that the server
// drops.
//
// Prints one line per turn and a JSON summary. Bounded: 20 requests.
// Usage: node replay.mjs URL [SEED=1] [MAX_TOKENS=24]
const [url, seedArg = "1", mtArg = "24"] = process.argv.slice(2);
if (!url) { console.error("usage: node replay.mjs URL [SEED] [MAX_TOKENS]"); process.exit(2); }
const maxTokens = Math.min(Math.max(Number(mtArg) | 0, 1), 256);
let seed = Number(seedArg) || 1;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const pick = (a) => a[Math.floor(rand() * a.length)];
const H = { "content-type": "application/json" };
const post = async (path, body) => {
  const r = await fetch(`${url}${path}`, { method: "POST", headers: H, body: JSON.stringify(body) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(j).slice(0, 300)}`);
  return j;
};

// ---- the script's text ---------------------------------------------------------------------------
const idents = "self value result items config path data index count buffer request response client server token cache state model layer batch slot queue error".split(" ");
const kw = "def return if else for in while import from class with as try except raise yield lambda not and or None True False".split(" ");
const codeLine = () => {
  const n = 3 + Math.floor(rand() * 8), w = [];
  for (let i = 0; i < n; i++) w.push(rand() < 0.4 ? pick(kw) : pick(idents) + (rand() < 0.3 ? `_${Math.floor(rand() * 99)}` : ""));
  return "    ".repeat(Math.floor(rand() * 3)) + w.join(" ") + pick([":", "", "()", " = 0", ","]);
};
// About `tokens` tokens of code-like text (the default model's tokenizer
// gives ~1.6 tokens per word here; the exact count comes from the server).
const code = (tokens) => { const l = []; let n = 0; while (n < tokens) { const s = codeLine(); l.push(s); n += s.split(" ").length * 1.6 + 1; } return l.join("\n"); };
const systemLines = [...Array(40)].map((_, i) => `Rule ${i + 1}: ${[...Array(8 + Math.floor(rand() * 8))].map(() => pick(idents)).join(" ")}.`);
const system = (edited) => ["You are a coding agent working in a repository.",
  ...systemLines.slice(0, 20), edited ? "Rule 21: the repository uses tabs, not spaces." : systemLines[20], ...systemLines.slice(21)].join("\n");
const stamp = () => `x-anthropic-billing-header: cc_version=2.1.${Math.floor(rand() * 9)}; cc_entrypoint=cli; cch=${Math.floor(rand() * 1e5).toString(16)};`;
const tools = ["read_file", "write_file", "run_tests", "grep", "list_dir"].map((name) => ({ type: "function",
  function: { name, description: `${name.replace("_", " ")}: ${[...Array(12)].map(() => pick(idents)).join(" ")}`,
    parameters: { type: "object", properties: { path: { type: "string" }, pattern: { type: "string" } }, required: ["path"] } } }));

// ---- the replay ----------------------------------------------------------------------------------
const conv = { A: { sysEdited: false, msgs: [], turn: 0 }, B: { sysEdited: false, msgs: [], turn: 0 } };
const order = ["A", "A", "A", "A", "B", "A", "B", "A", "A", "B", "A", "B", "A", "A", "B", "A", "A", "B", "A", "A"];
const seen = [];                  // token sequences the server has evaluated
const lcp = (a, b) => { let i = 0; while (i < a.length && i < b.length && a[i] === b[i]) i++; return i; };
const rows = [];
const t0 = Date.now();
for (let k = 0; k < order.length; k++) {
  const c = conv[order[k]];
  c.turn++;
  let note = "";
  if (c.turn === 1) {
    c.msgs.push({ role: "user", content: `Fix the failing test in ${pick(idents)}.py.` });
  } else {
    // the last reply is followed by a tool result or a user message
    const big = 200 + Math.floor(rand() * 3800);
    if (rand() < 0.75) c.msgs.push({ role: "user", content: `Tool result (${pick(["read_file", "grep", "run_tests"])}):\n${code(big)}` });
    else c.msgs.push({ role: "user", content: `Now also handle ${pick(idents)} in ${pick(idents)}.py. ${code(60)}` });
  }
  if (order[k] === "A" && c.turn === 8) { c.sysEdited = true; note = "system prompt edited"; }
  if (order[k] === "A" && c.turn === 12) {
    const i = c.msgs.findIndex((m, j) => j > 2 && m.role === "user" && m.content.length > 3000);
    if (i >= 0) { c.msgs[i] = { ...c.msgs[i], content: c.msgs[i].content.slice(0, 400) + "\n[... trimmed ...]" }; note = `tool result ${i} trimmed`; }
  }
  const messages = [{ role: "system", content: `${stamp()}\n${system(c.sysEdited)}` }, ...c.msgs];
  const body = { messages, tools, max_tokens: maxTokens, temperature: 0, logprobs: true };
  // the prompt's tokens as the server makes them: the template, then the tokenizer
  const text = (await post("/apply-template", body)).prompt;
  const ids = (await post("/tokenize", { content: text })).tokens;
  let changed = ids.length;
  for (const s of seen) changed = Math.min(changed, ids.length - lcp(s, ids));
  changed = Math.max(changed, 1);      // the last token is always evaluated
  const t1 = Date.now();
  const r = await post("/v1/chat/completions", body);
  const ms = Date.now() - t1;
  const m = r.choices[0].message;
  c.msgs.push({ role: "assistant", content: m.content ?? "", ...(m.reasoning_content ? { reasoning_content: m.reasoning_content } : {}) });
  const gen = (r.choices[0].logprobs?.content ?? []).map((t) => t.id);
  seen.push([...ids, ...gen.slice(0, -1)]);
  const n = r.usage.prompt_tokens, cached = r.usage.prompt_tokens_details.cached_tokens, reread = n - cached;
  if (n !== ids.length) note += ` (the server's prompt has ${n} tokens, /tokenize gave ${ids.length})`;
  const row = { turn: k + 1, conv: order[k], prompt: n, changed, reread, cached, ok: reread <= changed + 64, ms, note: note.trim() };
  rows.push(row);
  console.log(`turn ${String(row.turn).padStart(2)} ${row.conv}: prompt ${String(n).padStart(6)}  changed ${String(changed).padStart(6)}  ` +
    `re-read ${String(reread).padStart(6)}  cached ${String(cached).padStart(6)}  ${row.ok ? "ok  " : "OVER"} ${(ms / 1000).toFixed(1).padStart(6)} s  ${row.note}`);
}
const sum = (f) => rows.reduce((a, r) => a + f(r), 0);
const summary = { turns: rows.length, prompt_tokens: sum((r) => r.prompt), prefill_tokens: sum((r) => r.reread),
  changed_tokens: sum((r) => r.changed), cached_tokens: sum((r) => r.cached), over_goal: rows.filter((r) => !r.ok).map((r) => r.turn),
  request_seconds: sum((r) => r.ms) / 1000, wall_seconds: (Date.now() - t0) / 1000 };
console.log(JSON.stringify(summary));
process.exit(summary.over_goal.length ? 1 : 0);
