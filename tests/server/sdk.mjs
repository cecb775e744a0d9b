// sdk.mjs: drives a running `q36 serve` with the official openai and
// @anthropic-ai/sdk clients (pinned in package-lock.json) and plain fetch,
// and prints one line per case: "ok NAME" or "FAIL NAME: why".
// The default model has random weights: cases check structure and protocol,
// never the text.
// Usage: node sdk.mjs BASE_URL API_KEY MODEL N_CTX
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const [base, key, model, nCtxArg] = process.argv.slice(2);
const nCtx = Number(nCtxArg);
const oa = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const an = new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 });
let failed = 0;
const ok = (n) => console.log(`ok ${n}`);
const fail = (n, why) => { failed++; console.log(`FAIL ${n}: ${String(why).replace(/\n/g, " ").slice(0, 400)}`); };
async function kase(name, fn) {
  try { const r = await fn(); if (r === true || r === undefined) ok(name); else fail(name, r); }
  catch (e) { fail(name, e?.stack || e); }
}
const user = (t) => [{ role: "user", content: t }];
const weather = {
  type: "function",
  function: { name: "get_weather", description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] } },
};

// ---- OpenAI ------------------------------------------------------------------------------
await kase("openai_chat", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Hello"), max_tokens: 8, seed: 1 });
  const c = r.choices[0];
  if (r.object !== "chat.completion" || c.message.role !== "assistant") return JSON.stringify(r);
  if (!["length", "stop"].includes(c.finish_reason)) return `finish_reason ${c.finish_reason}`;
  if (r.usage.completion_tokens < 1 || r.usage.total_tokens !== r.usage.prompt_tokens + r.usage.completion_tokens)
    return `usage ${JSON.stringify(r.usage)}`;
});

await kase("openai_chat_seed_reproduces", async () => {
  const req = { model, messages: user("Say something"), max_tokens: 12, seed: 7, temperature: 1.0 };
  const a = await oa.chat.completions.create(req), b = await oa.chat.completions.create(req);
  const t = (r) => JSON.stringify([r.choices[0].message.content, r.choices[0].message.reasoning_content]);
  return t(a) === t(b) || `${t(a)} vs ${t(b)}`;
});

await kase("openai_stream_usage", async () => {
  const s = await oa.chat.completions.create({ model, messages: user("Hi"), max_tokens: 10, stream: true, ignore_eos: true,
    stream_options: { include_usage: true } });
  let chunks = 0, usage = null, finish = null, role = null;
  for await (const ch of s) {
    chunks++;
    if (ch.usage) usage = ch.usage;
    if (ch.choices[0]?.delta?.role) role = ch.choices[0].delta.role;
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
  }
  if (role !== "assistant" || finish !== "length") return `role ${role} finish ${finish}`;
  return (usage && usage.completion_tokens === 10) || `usage ${JSON.stringify(usage)} after ${chunks} chunks`;
});

await kase("openai_stream_helper_final", async () => {
  const s = oa.chat.completions.stream({ model, messages: user("Hi"), max_tokens: 6, ignore_eos: true });
  const f = await s.finalChatCompletion();
  return (f.choices[0].message.role === "assistant" && f.choices[0].finish_reason === "length") || JSON.stringify(f);
});

await kase("openai_thinking_off_gives_content", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Hi"), max_tokens: 6,
    chat_template_kwargs: { enable_thinking: false } });
  const m = r.choices[0].message;
  return (m.reasoning_content === undefined && typeof m.content === "string") || JSON.stringify(m);
});

await kase("openai_reasoning_effort_none", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Hi"), max_tokens: 6, reasoning_effort: "none" });
  return r.choices[0].message.reasoning_content === undefined || JSON.stringify(r.choices[0].message);
});

await kase("openai_named_tool_stream", async () => {
  const s = oa.chat.completions.stream({ model, messages: user("Weather in Paris?"), max_tokens: 16, tools: [weather],
    tool_choice: { type: "function", function: { name: "get_weather" } } });
  const f = await s.finalChatCompletion();
  const c = f.choices[0], call = c.message.tool_calls?.[0];
  if (!call || call.function.name !== "get_weather" || !/^call_/.test(call.id)) return JSON.stringify(c.message);
  JSON.parse(call.function.arguments);
  return c.finish_reason === "tool_calls" || c.finish_reason === "length" || `finish_reason ${c.finish_reason}`;
});

await kase("openai_named_tool_whole", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Weather?"), max_tokens: 16, tools: [weather],
    tool_choice: { type: "function", function: { name: "get_weather" } } });
  const call = r.choices[0].message.tool_calls?.[0];
  return (call && call.type === "function" && typeof JSON.parse(call.function.arguments) === "object") ||
    JSON.stringify(r.choices[0]);
});

await kase("openai_tool_history_and_mid_system", async () => {
  const r = await oa.chat.completions.create({ model, max_tokens: 4, tools: [weather], messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Oslo?" },
    { role: "assistant", content: null, reasoning: "Need the tool.",
      tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } }] },
    { role: "tool", tool_call_id: "call_1", content: "cold" },
    { role: "developer", content: "Answer in one word." },
    { role: "user", content: [{ type: "text", text: "So?" }] },
  ] });
  return r.choices.length === 1 || JSON.stringify(r);
});

await kase("openai_logprobs", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Hi"), max_tokens: 4, logprobs: true, top_logprobs: 3 });
  const lp = r.choices[0].logprobs?.content;
  if (!lp || lp.length !== 4) return JSON.stringify(r.choices[0].logprobs);
  return lp.every((t) => t.logprob <= 0 && t.top_logprobs.length === 3 && t.top_logprobs[0].logprob >= t.top_logprobs[2].logprob) ||
    JSON.stringify(lp[0]);
});

await kase("openai_stop_string", async () => {
  const r = await oa.chat.completions.create({ model, messages: user("Hi"), max_tokens: 40, stop: ["e", "a"],
    chat_template_kwargs: { enable_thinking: false } });
  const m = r.choices[0].message.content;
  return (!/[ea]/.test(m)) || `content '${m}' holds a stop string`;
});

await kase("openai_completions", async () => {
  const r = await oa.completions.create({ model, prompt: "The capital of France is", max_tokens: 5, ignore_eos: true });
  return (r.object === "text_completion" && typeof r.choices[0].text === "string" && r.usage.completion_tokens === 5) ||
    JSON.stringify(r);
});

await kase("openai_completions_stream", async () => {
  const s = await oa.completions.create({ model, prompt: "Once", max_tokens: 5, stream: true, ignore_eos: true });
  let n = 0, fin = null;
  for await (const ch of s) { n++; if (ch.choices[0]?.finish_reason) fin = ch.choices[0].finish_reason; }
  return (fin === "length" && n >= 2) || `${n} chunks, finish ${fin}`;
});

await kase("openai_models", async () => {
  const l = await oa.models.list();
  return l.data.some((m) => m.id === model) || JSON.stringify(l.data);
});

// Exact mode: a slot's output does not depend on what shares the step with it.
await kase("slot_output_independent_of_batch", async () => {
  const req = { model, messages: user("Same request"), max_tokens: 24, seed: 5, temperature: 1.0, logprobs: true,
    top_logprobs: 2, chat_template_kwargs: { enable_thinking: false } };
  const sig = (r) => JSON.stringify([r.choices[0].message.content, r.choices[0].logprobs.content.map((t) => [t.id, t.logprob])]);
  const alone = sig(await oa.chat.completions.create(req));
  const others = [1, 2, 3].map((i) => oa.chat.completions.create({ model, messages: user(`Other ${i} `.repeat(i * 20)),
    max_tokens: 40, seed: i }));
  const together = sig(await oa.chat.completions.create(req));
  await Promise.all(others);
  return alone === together || "the same request gave other tokens or log-probabilities beside other slots";
});

// ---- Responses (the subset Codex-style clients send) -------------------------------------------
await kase("responses_create", async () => {
  const r = await oa.responses.create({ model, input: "Hello", max_output_tokens: 8, instructions: "Be brief." });
  if (r.object !== "response" || !r.id.startsWith("resp_")) return JSON.stringify(r);
  // (sampled with a random seed: the model may end its reply within the 8)
  return (((r.status === "incomplete" && r.usage.output_tokens === 8) ||
           (r.status === "completed" && r.usage.output_tokens <= 8)) && r.output.length >= 1) || JSON.stringify(r);
});

await kase("responses_stream_items", async () => {
  const s = oa.responses.stream({ model, max_output_tokens: 16, tool_choice: { type: "function", name: "get_weather" },
    tools: [{ type: "function", name: "get_weather", parameters: weather.function.parameters },
            { type: "web_search" }],
    input: [
      { type: "message", role: "developer", content: "Use tools." },
      { role: "user", content: [{ type: "input_text", text: "Weather in Oslo?" }] },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Need weather." }] },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: "{\"city\":\"Oslo\"}" },
      { type: "function_call_output", call_id: "call_1", output: "cold" },
      { role: "user", content: "And Rome?" },
    ] });
  const types = [];
  s.on("event", (e) => types.push(e.type));
  const f = await s.finalResponse();
  const call = f.output.find((o) => o.type === "function_call");
  if (!call || call.name !== "get_weather" || !call.call_id.startsWith("call_")) return JSON.stringify(f.output);
  JSON.parse(call.arguments);
  return (types[0] === "response.created" && types.includes("response.output_item.done") &&
    /response\.(completed|incomplete)/.test(types[types.length - 1])) || types.join(",");
});

await kase("error_responses_previous_id", async () => {
  const r = await fetch(`${base}/v1/responses`, { method: "POST", headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify({ input: "x", previous_response_id: "resp_1" }) });
  const j = await r.json();
  return (r.status === 400 && j.error.param === "previous_response_id") || JSON.stringify(j);
});

// ---- Anthropic -----------------------------------------------------------------------------
await kase("anthropic_message", async () => {
  const r = await an.messages.create({ model, max_tokens: 8, messages: user("Hello") });
  if (r.type !== "message" || r.role !== "assistant" || !r.id.startsWith("msg_")) return JSON.stringify(r);
  // No seed: a random sample may end the turn before max_tokens.
  const ended = (r.stop_reason === "max_tokens" && r.usage.output_tokens === 8) ||
    (r.stop_reason === "end_turn" && r.usage.output_tokens <= 8);
  return (ended && r.usage.input_tokens > 0) || JSON.stringify(r);
});

await kase("anthropic_stream_thinking", async () => {
  const s = an.messages.stream({ model, max_tokens: 12, ignore_eos: true, thinking: { type: "enabled", budget_tokens: 1024 },
    system: [{ type: "text", text: "You are terse." }], messages: user("Think, then answer.") });
  const events = [];
  s.on("streamEvent", (e) => events.push(e));
  const f = await s.finalMessage();
  if (f.content[0]?.type !== "thinking") return JSON.stringify(f.content);
  const open = [];
  for (const e of events) {
    if (e.type === "content_block_start") { if (open.length) return "a block opened before the last closed"; open.push(e.index); }
    if (e.type === "content_block_delta" && open[open.length - 1] !== e.index) return "delta to a block that is not open";
    if (e.type === "content_block_stop") { if (open.pop() !== e.index) return "stop of a block that is not open"; }
  }
  const md = events.find((e) => e.type === "message_delta");
  return (md && md.usage.output_tokens === 12 && f.stop_reason === "max_tokens") || JSON.stringify(md);
});

await kase("anthropic_forced_tool_blocks", async () => {
  const s = an.messages.stream({ model, max_tokens: 20, messages: user("Weather in Rome?"),
    tools: [{ name: "get_weather", description: "Weather", input_schema: weather.function.parameters }],
    tool_choice: { type: "tool", name: "get_weather" } });
  const f = await s.finalMessage();
  const t = f.content.find((b) => b.type === "tool_use");
  return (t && t.name === "get_weather" && t.id.startsWith("toolu_") && typeof t.input === "object" &&
    f.content.every((b, i) => i === 0 || b.type !== f.content[i - 1].type || b.type === "tool_use")) || JSON.stringify(f.content);
});

await kase("anthropic_tool_result_history", async () => {
  const r = await an.messages.create({ model, max_tokens: 4, tools: [{ name: "get_weather", input_schema: weather.function.parameters }],
    messages: [
      { role: "user", content: "Weather in Rome?" },
      { role: "assistant", content: [{ type: "thinking", thinking: "Use the tool.", signature: "x" },
        { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Rome" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] },
        { type: "text", text: "Thanks" }] },
      { role: "system", content: "Mid-conversation system text." },
    ] });
  return r.type === "message" || JSON.stringify(r);
});

await kase("anthropic_count_tokens", async () => {
  const r = await an.messages.countTokens({ model, messages: user("Hello there") });
  return (Number.isInteger(r.input_tokens) && r.input_tokens > 3) || JSON.stringify(r);
});

await kase("anthropic_beta_query", async () => {
  const r = await fetch(`${base}/v1/messages?beta=true`, { method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ model, max_tokens: 2, messages: user("x") }) });
  return r.status === 200 || `status ${r.status}`;
});

// ---- the utility routes -------------------------------------------------------------------------
const post = async (path, body) => (await fetch(base + path, { method: "POST", headers: { "x-api-key": key },
  body: JSON.stringify(body) })).json();
await kase("tokenize_detokenize_roundtrip", async () => {
  const t = await post("/tokenize", { content: "Hello <|im_start|> world" });
  const d = await post("/detokenize", { tokens: t.tokens });
  return d.content === "Hello <|im_start|> world" || JSON.stringify([t, d]);
});
await kase("tokenize_pieces", async () => {
  const t = await post("/tokenize", { content: "Hi there", with_pieces: true });
  return (t.tokens.length === 2 && t.tokens[1].piece === " there" && Number.isInteger(t.tokens[0].id)) || JSON.stringify(t);
});
const history = [{ role: "user", content: "Q1" }, { role: "assistant", content: "A1", reasoning_content: "R1" },
  { role: "system", content: "Late system text." }, { role: "user", content: "Q2" }];
await kase("apply_template_merges_system", async () => {
  const t = (await post("/apply-template", { messages: history })).prompt;
  return (t.startsWith("<|im_start|>system\nLate system text.<|im_end|>") &&
    t.endsWith("<|im_start|>assistant\n<think>\n")) || JSON.stringify(t);
});
// preserve_thinking is on by default: past reasoning stays, so a turn's prompt
// extends the previous turn's tokens and the prefix cache holds.
await kase("apply_template_preserve_thinking_default", async () => {
  const t = (await post("/apply-template", { messages: history })).prompt;
  return t.includes("<think>\nR1\n</think>\n\nA1") || JSON.stringify(t);
});
await kase("apply_template_drop_thinking", async () => {
  const t = (await post("/apply-template", { messages: history, chat_template_kwargs: { preserve_thinking: false } })).prompt;
  return !t.includes("R1") || JSON.stringify(t);
});
// A volatile billing stamp at the start of the system prompt is dropped.
await kase("apply_template_drops_billing_stamp", async () => {
  const t = (await post("/apply-template", { messages: [
    { role: "system", content: "x-anthropic-billing-header: cc_version=2.1.3; cc_entrypoint=cli; cch=a1b2c;\nYou are terse." },
    { role: "user", content: "Hi" }] })).prompt;
  return t.startsWith("<|im_start|>system\nYou are terse.<|im_end|>") || JSON.stringify(t);
});

// ---- errors, while a stream on another slot keeps going -------------------------------------
const long = await fetch(`${base}/v1/chat/completions`, { method: "POST",
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  // seed 1: a sample that runs the 400 tokens (exact mode: the same beside any other slot)
  body: JSON.stringify({ model, messages: user("Go on"), max_tokens: 400, stream: true, seed: 1,
    stream_options: { include_usage: true } }) });
const longText = long.text();

const big = "word ".repeat(nCtx * 2);
const H = { authorization: `Bearer ${key}`, "content-type": "application/json" };
const cases = [
  // name, path, body (string or object), status, type, flavour, param, headers
  ["not_json", "/v1/chat/completions", "{\"messages\": [", 400, "invalid_request_error", "openai"],
  ["trailing_bytes", "/v1/chat/completions", "{\"messages\": []} x", 400, "invalid_request_error", "openai"],
  ["body_is_array", "/v1/chat/completions", "[1,2]", 400, "invalid_request_error", "openai"],
  ["empty_body", "/v1/chat/completions", "", 400, "invalid_request_error", "openai"],
  ["no_messages", "/v1/chat/completions", { model }, 400, "invalid_request_error", "openai", "messages"],
  ["messages_not_array", "/v1/chat/completions", { messages: "hi" }, 400, "invalid_request_error", "openai", "messages"],
  ["empty_messages", "/v1/chat/completions", { messages: [] }, 400, "invalid_request_error", "openai", "messages"],
  ["content_number", "/v1/chat/completions", { messages: [{ role: "user", content: 5 }] }, 400, "invalid_request_error", "openai", "messages[0].content"],
  ["bad_role", "/v1/chat/completions", { messages: [{ role: "robot", content: "x" }] }, 400, "invalid_request_error", "openai", "messages[0]"],
  ["temperature_string", "/v1/chat/completions", { messages: user("x"), temperature: "hot" }, 400, "invalid_request_error", "openai", "temperature"],
  ["temperature_range", "/v1/chat/completions", { messages: user("x"), temperature: 1e9 }, 400, "invalid_request_error", "openai", "temperature"],
  ["max_tokens_fraction", "/v1/chat/completions", { messages: user("x"), max_tokens: 2.5 }, 400, "invalid_request_error", "openai", "max_tokens"],
  ["top_logprobs_alone", "/v1/chat/completions", { messages: user("x"), top_logprobs: 2 }, 400, "invalid_request_error", "openai", "top_logprobs"],
  ["n_two", "/v1/chat/completions", { messages: user("x"), n: 2 }, 400, "invalid_request_error", "openai", "n"],
  ["unknown_model", "/v1/chat/completions", { model: "gpt-9", messages: user("x") }, 404, "not_found_error", "openai", "model"],
  ["json_schema", "/v1/chat/completions", { messages: user("x"), response_format: { type: "json_schema", json_schema: { schema: {} } } }, 400, "invalid_request_error", "openai", "response_format"],
  ["named_tool_missing", "/v1/chat/completions", { messages: user("x"), tools: [weather], tool_choice: { type: "function", function: { name: "nope" } } }, 400, "invalid_request_error", "openai"],
  ["image_part", "/v1/chat/completions", { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] }] }, 400, "invalid_request_error", "openai", "messages[0].content[0]"],
  ["stop_not_strings", "/v1/chat/completions", { messages: user("x"), stop: [1] }, 400, "invalid_request_error", "openai", "stop"],
  ["prompt_over_context", "/v1/chat/completions", { messages: user(big) }, 400, "exceed_context_size_error", "openai"],
  ["completions_no_prompt", "/v1/completions", {}, 400, "invalid_request_error", "openai", "prompt"],
  ["completions_bad_id", "/v1/completions", { prompt: [1, -3] }, 400, "invalid_request_error", "openai", "prompt"],
  ["detokenize_bad_id", "/detokenize", { tokens: [99999999] }, 400, "invalid_request_error", "openai", "tokens"],
  ["tokenize_no_content", "/tokenize", {}, 400, "invalid_request_error", "openai", "content"],
  ["unknown_route", "/v1/nothing", {}, 404, "not_found_error", "openai"],
  ["wrong_method", "/v1/models", {}, 405, "invalid_request_error", "openai"],
  ["no_key", "/v1/chat/completions", { messages: user("x") }, 401, "authentication_error", "openai", undefined, { "content-type": "application/json" }],
  ["wrong_key", "/v1/chat/completions", { messages: user("x") }, 401, "authentication_error", "openai", undefined, { authorization: "Bearer nope" }],
  ["anthropic_no_max_tokens", "/v1/messages", { messages: user("x") }, 400, "invalid_request_error", "anthropic"],
  ["anthropic_image", "/v1/messages", { max_tokens: 4, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "" } }] }] }, 400, "invalid_request_error", "anthropic"],
  ["anthropic_bad_block", "/v1/messages", { max_tokens: 4, messages: [{ role: "user", content: [{ type: "tool_use", id: "x", name: "y", input: {} }] }] }, 400, "invalid_request_error", "anthropic"],
  ["anthropic_too_long", "/v1/messages", { max_tokens: 4, messages: user(big) }, 413, "request_too_large", "anthropic"],
  ["anthropic_no_key", "/v1/messages", { max_tokens: 4, messages: user("x") }, 401, "authentication_error", "anthropic", undefined, {}],
  ["anthropic_thinking_type", "/v1/messages", { max_tokens: 4, messages: user("x"), thinking: { type: "maybe" } }, 400, "invalid_request_error", "anthropic"],
  ["count_tokens_bad", "/v1/messages/count_tokens", { messages: "x" }, 400, "invalid_request_error", "anthropic"],
];
for (const [name, path, body, status, type, flavour, param, headers] of cases) {
  await kase(`error_${name}`, async () => {
    const method = name === "wrong_method" ? "POST" : path === "/v1/models" ? "GET" : "POST";
    const r = await fetch(base + path, { method, headers: headers ?? H, body: typeof body === "string" ? body : JSON.stringify(body) });
    const j = await r.json();
    if (r.status !== status) return `status ${r.status}, expected ${status}: ${JSON.stringify(j)}`;
    if (flavour === "anthropic") {
      if (j.type !== "error" || j.error?.type !== type || typeof j.error?.message !== "string") return JSON.stringify(j);
    } else {
      if (j.error?.type !== type || j.error?.code !== status || typeof j.error?.message !== "string") return JSON.stringify(j);
      if (param && j.error.param !== param) return `param ${j.error.param}, expected ${param}`;
    }
    if (name.endsWith("over_context") && !(j.error.n_prompt_tokens > nCtx && j.error.n_ctx === nCtx)) return JSON.stringify(j);
    if (name === "anthropic_too_long" && !/prompt is too long: \d+ tokens > \d+ maximum/.test(j.error.message)) return j.error.message;
  });
}
await kase("error_body_too_large", async () => {
  const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: H, body: "x".repeat(2 << 20) });
  return r.status === 413 || `status ${r.status}`;
});
await kase("health_needs_no_key", async () => {
  const r = await fetch(`${base}/health`);
  return (r.status === 200 && (await r.json()).status === "ok") || `status ${r.status}`;
});
await kase("stream_survives_errors", async () => {
  const t = await longText;
  const n = Number((/"completion_tokens":(\d+)/.exec(t) || [])[1]);
  return (long.status === 200 && t.trimEnd().endsWith("data: [DONE]") && n > 100) || `status ${long.status}, ${n} tokens, end '${t.slice(-60)}'`;
});

// ---- a client that leaves mid-stream frees its slot ------------------------------------------
await kase("disconnect_frees_slot", async () => {
  const ac = new AbortController();
  const r = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: H, signal: ac.signal,
    body: JSON.stringify({ model, messages: user("Go"), max_tokens: 3000, stream: true }) });
  const rd = r.body.getReader();
  await rd.read();
  ac.abort();
  for (let i = 0; i < 40; i++) {
    await new Promise((res) => setTimeout(res, 50));
    const slots = await (await fetch(`${base}/slots`, { headers: H })).json();
    if (slots.every((s) => !s.is_processing)) return true;
  }
  return "a slot still busy 2 s after the client left";
});

// ---- 16 concurrent streams ---------------------------------------------------------------------
await kase("concurrent_16_streams", async () => {
  const one = async (i) => {
    const s = await oa.chat.completions.create({ model, messages: user(`Stream ${i}`), max_tokens: 24, stream: true, seed: i,
      stream_options: { include_usage: true } });
    let fin = null, used = 0;
    for await (const ch of s) {
      if (ch.choices[0]?.finish_reason) fin = ch.choices[0].finish_reason;
      if (ch.usage) used = ch.usage.completion_tokens;
    }
    return (fin === "length" && used === 24) || (fin === "stop" && used > 0 && used < 24) ? 0 : 1;
  };
  const bad = (await Promise.all([...Array(16).keys()].map(one))).reduce((a, b) => a + b, 0);
  return bad === 0 || `${bad} of 16 streams did not complete`;
});

await kase("metrics_prometheus", async () => {
  const t = await (await fetch(`${base}/metrics`, { headers: H })).text();
  return (/^llamacpp:prompt_tokens_total \d+/m.test(t) && /^llamacpp:tokens_predicted_total \d+/m.test(t) &&
    /^q36:cancelled_total [1-9]/m.test(t)) || t.slice(0, 300);
});

process.exit(failed ? 1 : 0);
