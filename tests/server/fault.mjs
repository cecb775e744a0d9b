// fault.mjs: one slot fails mid-stream (the server runs with
// Q36_SERVER_FAIL_ROW, which makes one evaluated row fail): the stream on
// that slot ends with an error the openai SDK raises, the stream beside it
// completes, and the next request is served. Prints "ok NAME" / "FAIL NAME: why".
// Usage: node fault.mjs BASE_URL
import OpenAI from "openai";

const [base] = process.argv.slice(2);
const oa = new OpenAI({ baseURL: `${base}/v1`, apiKey: "none", maxRetries: 0 });
let failed = 0;
const say = (name, ok, why) => { if (ok) console.log(`ok ${name}`); else { failed++; console.log(`FAIL ${name}: ${why}`); } };
const stream = async (i) => {
  try {
    const s = await oa.chat.completions.create({ messages: [{ role: "user", content: `Stream ${i}` }], max_tokens: 40,
      stream: true, stream_options: { include_usage: true } });
    let used = 0, finish = null;
    for await (const ch of s) {
      if (ch.usage) used = ch.usage.completion_tokens;
      if (ch.choices?.[0]?.finish_reason) finish = ch.choices[0].finish_reason;
    }
    /* done: all 40 tokens, or the model's own end of turn before them
     * (the reply is sampled, its length varies) */
    return (used === 40 && finish === "length") || (used > 0 && used < 40 && finish === "stop")
      ? "done" : `ended after ${used} tokens without an error (finish_reason ${finish})`;
  } catch (e) {
    return e instanceof OpenAI.APIError && /failed on purpose/.test(e.message) ? "error" : `unexpected: ${e}`;
  }
};
const got = await Promise.all([stream(1), stream(2)]);
say("fault_one_slot_fails_alone", got.includes("error") && got.includes("done"), JSON.stringify(got));
try {
  const r = await oa.chat.completions.create({ messages: [{ role: "user", content: "After" }], max_tokens: 5,
    ignore_eos: true });
  say("fault_next_request_served", r.usage.completion_tokens === 5, JSON.stringify(r.usage));
} catch (e) { say("fault_next_request_served", false, String(e)); }
const m = await (await fetch(`${base}/metrics`)).text();
say("fault_counted", /^q36:errors_total [1-9]/m.test(m), m.split("\n").filter((l) => l.startsWith("q36:")).join("; "));
process.exit(failed ? 1 : 0);
