// spec.mjs: q36 serve --spec-type draft-mtp end to end: every slot drafts
// and is verified in the same passes as the others, and the replies are the
// plain server's, token for token. Three servers of the default model:
// PLAIN (no drafts), MTP (--spec-type draft-mtp) and LOW (draft-mtp with a
// draft head of one id, whose drafts (almost) never hit). Prints "ok NAME" /
// "FAIL NAME: why".
//  - 4 concurrent greedy code completions (one with a long prompt that is
//    read in chunks while the others verify drafts) equal PLAIN's: text,
//    token ids, log-probabilities; the drafts were really used (accepted);
//  - 4 concurrent sampled completions (temperature 0.8, a seed each): the
//    same tokens as PLAIN's (the sampler sees the same rows in the same
//    order, so the output distribution is the plain one for any seed);
//  - a request again, its prompt restored from the prefix cache: the same;
//  - 4 replies cut by the context's end: the same tokens and finish;
//  - LOW: a slot whose drafts miss stops drafting (adaptive k: few drafts,
//    paused steps) and its reply is still PLAIN's;
//  - ignore_eos greedy replies chosen as ids on the engine (end-of-generation
//    ids skipped) equal the host's choice from the logits, PLAIN and MTP.
// With LOW_URL "-" the LOW case is left out (a random-weight model: its
// drafts miss anyway); SPEC_TAG prefixes the case names, SPEC_MIN_ACCEPTED
// (default 50) is the drafts the greedy case must have seen kept (SPEC_GUARD=1:
// the MTP server runs its guard, else Q36_SERVER_MTP_GUARD=0),
// SPEC_MIN_RATE (default 0) the part of its drafts; SPEC_PAD=1: the MTP
// server pads its drafting slots' MTP rows (Q36_SERVER_MTP_PAD=1), and
// the greedy case must have seen padded rows.
// Usage: node spec.mjs PLAIN_URL MTP_URL LOW_URL|-
const [plain, mtp, low] = process.argv.slice(2);
const tag = process.env.SPEC_TAG ? `${process.env.SPEC_TAG}_` : "";
const minAccepted = Number(process.env.SPEC_MIN_ACCEPTED ?? 50);
const minRate = Number(process.env.SPEC_MIN_RATE ?? 0);
const padded = process.env.SPEC_PAD === "1";
let failed = 0;
const ok = (n) => console.log(`ok ${n}`);
const fail = (n, why) => { failed++; console.log(`FAIL ${n}: ${String(why).replace(/\n/g, " ").slice(0, 600)}`); };
async function kase(name, fn) {
  name = tag + name;
  try { const r = await fn(); if (r === true || r === undefined) ok(name); else fail(name, r); }
  catch (e) { fail(name, e?.stack || e); }
}

async function complete(base, body) {
  const r = await fetch(`${base}/v1/completions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ temperature: 0, logprobs: true, top_logprobs: 1, ignore_eos: true, ...body }) });
  const j = await r.json();
  if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(j)}`);
  return j;
}
const sig = (r) => JSON.stringify([r.choices[0].text, r.choices[0].logprobs.content.map((t) => [t.id, t.logprob])]);
const spec = async (base) => (await (await fetch(`${base}/slots`)).json()).map((s) => s.speculative);
const sum = (a, f) => a.reduce((x, s) => x + f(s), 0);

const code = [
  "import os\nimport sys\n\n\ndef main(argv):\n    ",
  "class Stack:\n    \"\"\"A stack of items.\"\"\"\n\n    def __init__(self):\n",
  "def fib(n):\n    if n < 2:\n        return n\n",
  // long: read in several chunks (-ub) while the others decode
  "#!/usr/bin/env python3\n\"\"\"Utilities for paths.\"\"\"\n" +
    [...Array(24)].map((_, i) => `def helper_${i}(path, mode=${i}):\n    return os.path.join(path, str(mode))\n\n`).join(""),
];

// 4 at once; the long prompt a little later, so that it is read beside the
// verify rows of the others.
async function four(base, extra) {
  return Promise.all(code.map(async (p, i) => {
    if (i === 3) await new Promise((res) => setTimeout(res, 150));
    return complete(base, { prompt: p, max_tokens: 80 + 8 * i, ...extra(i) });
  }));
}

await kase("spec_greedy_4_slots_equal_plain", async () => {
  const before = await spec(mtp);
  if (before.some((s) => !s)) return `/slots of the MTP server has no 'speculative' object: ${JSON.stringify(before)}`;
  const [a, b] = await Promise.all([four(plain, () => ({})), four(mtp, () => ({}))]);
  const bad = a.map((r, i) => sig(r) === sig(b[i]) ? null : `request ${i}: ${sig(b[i]).slice(0, 160)} vs plain ${sig(r).slice(0, 160)}`).filter(Boolean);
  if (bad.length) return bad.join("; ");
  const after = await spec(mtp);
  const acc = sum(after, (s) => s.accepted) - sum(before, (s) => s.accepted);
  const dr = sum(after, (s) => s.drafted) - sum(before, (s) => s.drafted);
  const busy = after.filter((s, i) => s.rounds > before[i].rounds).length;
  const pad = sum(after, (s) => s.padded_rows) - sum(before, (s) => s.padded_rows);
  console.log(`# greedy: ${dr} drafted, ${acc} accepted on ${busy} slots, ${pad} MTP rows padded; by position ` +
    after[0].accepted_at.map((_, j) => (sum(after, (s) => s.accepted_at[j]) / Math.max(1, sum(after, (s) => s.drafted_at[j]))).toFixed(3)).join(" "));
  // (a fast model may finish a request before the late one arrives, which
  // then reuses its slot: 3 slots at least)
  return (acc >= minAccepted && dr > acc && busy >= 3 && acc >= minRate * dr && (pad > 0) === padded) ||
    `drafts were not used as expected: ${dr} drafted, ${acc} accepted (at least ${minAccepted}, ` +
    `${minRate} of them), ${busy} slots drafted, ${pad} rows padded (${padded ? "some" : "none"} expected)`;
});

// The draft count's mode (sched_spec.h): adaptive (SPEC_ADAPTIVE, default
// 1), or k_max in every round but pauses (Q36_SERVER_MTP_ADAPTIVE=0 on the
// server), after the greedy requests above.
await kase("spec_draft_count_mode", async () => {
  const want = (process.env.SPEC_ADAPTIVE ?? "1") === "1";
  const sl = await spec(mtp);
  const bad = sl.filter((s) => s.draft_adaptive !== want || (!want && s.next_k !== 0 && s.next_k !== s.draft_max));
  return !bad.length || `want adaptive ${want}: ${JSON.stringify(bad)}`;
});

await kase("spec_sampled_4_slots_equal_plain", async () => {
  const extra = (i) => ({ temperature: 0.8, seed: 1000 + i });
  const [a, b] = await Promise.all([four(plain, extra), four(mtp, extra)]);
  const bad = a.map((r, i) => sig(r) === sig(b[i]) ? null : `request ${i}: ${sig(b[i]).slice(0, 160)} vs plain ${sig(r).slice(0, 160)}`).filter(Boolean);
  return bad.length ? bad.join("; ") : true;
});

await kase("spec_prefix_cache_restored_equals_plain", async () => {
  const q = { prompt: code[1] + "    # a restored prompt\n", max_tokens: 48 };
  const a = await complete(plain, q);
  await complete(mtp, q);
  const b = await complete(mtp, q);
  const c = b.usage.prompt_tokens_details.cached_tokens;
  if (c < 10) return `only ${c} prompt tokens came from the cache`;
  return sig(a) === sig(b) || `${sig(b).slice(0, 200)} vs plain ${sig(a).slice(0, 200)}`;
});

// Replies cut by a full context (a round's drafts near the end are fewer):
// prompts of n_ctx - 40 .. - 37 tokens, 4 at once, 200 tokens asked for.
await kase("spec_context_full_equals_plain", async () => {
  const nctx = (await (await fetch(`${mtp}/slots`)).json())[0].n_ctx;
  const ids = (await (await fetch(`${mtp}/tokenize`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: code[3] }) })).json()).tokens;
  const rep = (n) => [...Array(n)].map((_, i) => ids[i % ids.length]);
  const q = (i) => ({ prompt: rep(nctx - 40 + i), max_tokens: 200 });
  const [a, b] = await Promise.all([Promise.all([0, 1, 2, 3].map((i) => complete(plain, q(i)))),
    Promise.all([0, 1, 2, 3].map((i) => complete(mtp, q(i))))]);
  const bad = a.map((r, i) => (sig(r) === sig(b[i]) && r.choices[0].finish_reason === b[i].choices[0].finish_reason &&
    r.usage.completion_tokens === b[i].usage.completion_tokens) ? null :
    `request ${i}: ${b[i].usage.completion_tokens} tokens (${b[i].choices[0].finish_reason}) vs plain ` +
    `${r.usage.completion_tokens} (${r.choices[0].finish_reason})`).filter(Boolean);
  if (bad.length) return bad.join("; ");
  return a.every((r) => r.usage.completion_tokens < 200) || "the context did not cut the replies";
});

if (low !== "-") await kase("spec_low_acceptance_stops_drafting", async () => {
  const n = 200;
  const q = { prompt: code[0], max_tokens: n };
  const before = await spec(low);
  const [a, b] = await Promise.all([complete(plain, q), complete(low, q)]);
  if (sig(a) !== sig(b)) return `${sig(b).slice(0, 200)} vs plain ${sig(a).slice(0, 200)}`;
  const after = await spec(low);
  const dr = sum(after, (s) => s.drafted) - sum(before, (s) => s.drafted);
  const acc = sum(after, (s) => s.accepted) - sum(before, (s) => s.accepted);
  const paused = sum(after, (s) => s.paused_steps) - sum(before, (s) => s.paused_steps);
  console.log(`# low acceptance: ${n} tokens, ${dr} drafted, ${acc} accepted, ${paused} steps without drafts`);
  // k_max 3 would draft ~3 per step; adaptive k drafts a few, then probes
  return (dr > 0 && dr * 5 < n && paused > n / 2) || `${dr} drafted, ${paused} paused steps for ${n} tokens`;
});

// /monitor's MTP card: the drafts of every slot on a drafting server, null
// on a plain one.
// ignore_eos at temperature 0 without log-probabilities: each row's choice
// comes back as one id, made on the engine with the end-of-generation ids
// skipped (q36_engine_argmax_ban; a row whose best id ends the reply is
// chosen again from its logits); with log-probabilities the host chooses
// from the whole row. Chat replies, which this model ends early: the two
// texts are equal, on the plain server and on the drafting one, 2 at once.
await kase("ignore_eos_greedy_ids_equal_host_choice", async () => {
  const chat = async (base, say, lp) => {
    const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: say }], temperature: 0, max_tokens: 64, ignore_eos: true,
                             ...(lp ? { logprobs: true, top_logprobs: 1 } : {}) }) });
    const j = await r.json();
    if (r.status !== 200) throw new Error(`${r.status} ${JSON.stringify(j)}`);
    return JSON.stringify([j.choices[0].message.content, j.choices[0].message.reasoning_content ?? null, j.usage.completion_tokens]);
  };
  const says = ["Hi", "What is 2+2?"];
  const bad = [];
  for (const base of [plain, mtp]) {
    const ids = await Promise.all(says.map((x) => chat(base, x, false)));
    const host = await Promise.all(says.map((x) => chat(base, x, true)));
    ids.forEach((t, i) => { if (t !== host[i]) bad.push(`${base} "${says[i]}": ${t.slice(0, 200)} vs ${host[i].slice(0, 200)}`); });
  }
  return bad.length ? bad.join("; ") : true;
});

await kase("spec_monitor_card", async () => {
  const a = (await (await fetch(`${plain}/monitor`)).json()).mtp;
  const b = (await (await fetch(`${mtp}/monitor`)).json()).mtp;
  const sl = await spec(mtp);
  if (a !== null) return `the plain server reports ${JSON.stringify(a)}`;
  // SPEC_GUARD=1: the server chooses step by step whether to draft
  // (spec_guard.h): after the requests above it has measured both ways
  const guard = process.env.SPEC_GUARD === "1";
  const g = b && (guard ? b.guard === true && b.guard_plain_steps >= 8 && b.guard_drafting_steps >= 8
                        : b.guard === false && b.guard_plain_steps === 0);
  if (b) console.log(`# guard ${b.guard}: ${b.guard_plain_steps} steps without drafts, ${b.guard_drafting_steps} with`);
  return (b && b.type === "draft-mtp" && b.drafted === sum(sl, (s) => s.drafted) && b.accepted === sum(sl, (s) => s.accepted) &&
    b.acceptance_by_position.split(" ").length === sl[0].draft_max && g) || JSON.stringify(b);
});

process.exit(failed ? 1 : 0);
