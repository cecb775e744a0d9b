// render.mjs: renders conversations with @huggingface/jinja (the reference
// for q36's C chat renderer, tests/test_tok_chat.c).
// Usage: node render.mjs TEMPLATE_FILE CONVERSATIONS_JSON
// Prints one JSON object: { name: rendered text } or { name: { error: msg } }.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { Environment, Interpreter, parse, tokenize } =
    require("../../oracle/node_modules/@huggingface/jinja/dist/index.cjs");

// @huggingface/jinja 0.5.1 has no `sequence` test, which the Qwen3.5/3.6
// template uses for tool-call arguments; it is added here with Jinja's
// meaning (anything with a length and item access: lists, strings, dicts).
// Every scope gets its own copy of the tests table, so the lookup itself is
// extended: a Map that holds the `mapping` test answers `sequence` too.
const sequenceTest = (v) => v.type === "ArrayValue" || v.type === "StringValue" || v.type === "ObjectValue";
const mapGet = Map.prototype.get;
Map.prototype.get = function (k) {
    const r = mapGet.call(this, k);
    return r === undefined && k === "sequence" && mapGet.call(this, "mapping") ? sequenceTest : r;
};
// It also lacks the `safe` filter (identity here: nothing is escaped) and the
// `string` filter on numbers and booleans; those two are rewritten in the
// template text to expressions HF jinja evaluates as Python's Jinja2 does
// (str(True) is "True"). Otherwise this is Template.render: same lexer
// options, same globals.
function pythonize(t) {
    return t.replace(/\|\s*tojson\s*\|\s*safe/g, "| tojson")
            .replace(/([A-Za-z_][A-Za-z_0-9.]*)\s*\|\s*string\b/g,
                     "('True' if $1 is true else ('False' if $1 is false else ($1 ~ '')))");
}
function render(program, items) {
    const env = new Environment();
    env.set("false", false); env.set("true", true); env.set("none", null);
    env.set("True", true); env.set("False", false); env.set("None", null);
    env.set("raise_exception", (args) => { throw new Error(args); });
    for (const [k, v] of Object.entries(items)) env.set(k, v);
    return new Interpreter(env).run(program).value;
}

const [tplPath, convPath] = process.argv.slice(2);
const program = parse(tokenize(pythonize(readFileSync(tplPath, "utf8")), { lstrip_blocks: true, trim_blocks: true }));
const convs = JSON.parse(readFileSync(convPath, "utf8"));
const out = {};
for (const c of convs) {
    const ctx = { messages: c.messages, add_generation_prompt: !!c.add_generation_prompt,
                  bos_token: "", eos_token: "<|im_end|>" };
    if (c.tools) ctx.tools = c.tools;
    if (c.enable_thinking !== undefined) ctx.enable_thinking = c.enable_thinking;
    try {
        out[c.name] = render(program, ctx);
    } catch (e) {
        out[c.name] = { error: String(e.message || e) };
    }
}
process.stdout.write(JSON.stringify(out));
