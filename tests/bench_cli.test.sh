#!/usr/bin/env bash
# bench_cli.test.sh: the contract of `q36 bench` (ARCHITECTURE.md): the
# markdown table, the JSON records and their llama-bench field names, the
# llama.cpp baseline with its ratios, and the exits: 2 on bad usage, 1 on a
# user error with one line. On a tiny synthetic model with tiny p/n/r: it
# never asserts a speed.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
# the oracle's library folder (make check-avx2 gives one whose only CPU variant is haswell)
LIB=${Q36_ORACLE_LIB:-tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
M=$tmp/m.gguf
if ! "$Q36" synth --arch qwen35 --preset tiny --seed 7 -o "$M" >"$tmp/log" 2>&1; then
    fail bench_cli.setup "q36 synth: $(tail -n 1 "$tmp/log")"; exit 1
fi
B=(-m "$M" -p 4 -n 2 -r 2 -t 2)

# markdown (the default): one row per test, pp and tg at each depth
if "$Q36" bench "${B[@]}" -d 0,3 >"$tmp/md" 2>"$tmp/err" &&
   grep -q '^| .* | *pp4 *|' "$tmp/md" && grep -q 'tg2 @ d3' "$tmp/md" &&
   [ "$(sed '/^decode traffic/,$d' "$tmp/md" | grep -c '^| [^-]')" = 5 ] &&
   grep -q "q36 bench: q36 " "$tmp/md"; then
    ok bench_cli.md
else fail bench_cli.md "$(head -c 400 "$tmp/md") $(head -c 200 "$tmp/err")"; fi

# JSON: an array of records with llama-bench's field names and ours
fields='model_filename model_type model_size model_n_params n_batch n_ubatch n_threads type_k type_v
n_prompt n_gen n_depth avg_ns stddev_ns avg_ts stddev_ts samples_ts samples_ns build_commit cpu_info
test_time engine median_ts min_ts max_ts cpu_features n_cpus model_types q36_commit'
check_json='
const fs = require("fs");
const [file, want, fields, base] = process.argv.slice(1);
const a = JSON.parse(fs.readFileSync(file, "utf8"));
if (!Array.isArray(a) || a.length != +want) throw new Error("records: " + a.length + ", want " + want);
for (const r of a) {
    for (const f of fields.split(/\s+/).filter(Boolean))
        if (!(f in r)) throw new Error("no field " + f + " in " + r.engine + " record");
    if (r.samples_ts.length != 2 || !(r.avg_ts > 0)) throw new Error("samples " + r.samples_ts);
    if ((r.n_prompt > 0) == (r.n_gen > 0)) throw new Error("pp xor tg: " + r.n_prompt + "/" + r.n_gen);
    if (base == "1" && r.engine == "q36" && !(r.ratio_to_llama_cpp > 0)) throw new Error("no ratio");
}
if (base == "1" && a.filter(r => r.engine == "llama.cpp").length * 2 != a.length)
    throw new Error("not one llama.cpp record per q36 record");'
if "$Q36" bench "${B[@]}" -d 0,3 -o json >"$tmp/j" 2>"$tmp/err" &&
   node -e "$check_json" "$tmp/j" 4 "$fields" 0 2>"$tmp/nerr"; then ok bench_cli.json
else fail bench_cli.json "$(head -c 300 "$tmp/nerr") $(head -c 200 "$tmp/err")"; fi

if "$Q36" bench "${B[@]}" -o jsonl >"$tmp/jl" 2>"$tmp/err" && [ "$(wc -l <"$tmp/jl")" = 2 ] &&
   node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")) JSON.parse(l)' \
       "$tmp/jl" 2>"$tmp/nerr"; then ok bench_cli.jsonl
else fail bench_cli.jsonl "$(head -c 300 "$tmp/nerr") $(head -c 200 "$tmp/err")"; fi

# --bandwidth and the decode traffic: the bytes of a decode step recomputed
# here from `q36 info --tensors` (trunk tensors once, experts by used/E,
# one embedding row unless the head is tied, no MTP), K/V from the memory
# plan's bytes per token times the mean attended positions
MM=$tmp/mm.gguf
traffic_case() { # name, model, depth
    local name=$1 m=$2 d=$3
    if ! "$Q36" info -m "$m" --tensors >"$tmp/inf" 2>&1; then fail "$name" "q36 info failed"; return; fi
    local nl tied used E kvpt want
    nl=$(sed -n 's/^architecture [a-z0-9]*: \([0-9]*\) trunk layers.*/\1/p' "$tmp/inf")
    grep -q 'tied head' "$tmp/inf" && tied=1 || tied=0
    used=$(awk '$1 == "n_expert_used" { print $2 }' "$tmp/inf"); E=$(awk '$1 == "n_expert" { print $2 }' "$tmp/inf")
    kvpt=$(sed -n 's/.*K\/V cache.*(\([0-9]*\) B\/token.*/\1/p' "$tmp/inf")
    want=$(awk -v nl="$nl" -v tied="$tied" -v used="${used:-0}" -v E="${E:-0}" '
        $1 ~ /^[0-9]+$/ && NF >= 5 {
            name = $2; b = $NF
            if (name ~ /^blk\./) { split(name, p, "."); if (p[2] + 0 >= nl) next }
            if (name == "token_embd.weight" && !tied) b = b / ($(NF - 1) + 0)   # ne1: "384]"
            if (name ~ /_exps\./ && E > 0) b = b * used / E
            w += b
        } END { printf "%.3f", w }' "$tmp/inf")
    if "$Q36" bench -m "$m" -p 0 -n 4 -r 1 -t 2 -d "$d" --bandwidth -o json >"$tmp/tj" 2>"$tmp/err" &&
       node -e '
const [file, want, kvpt, d] = process.argv.slice(1);
const r = JSON.parse(require("fs").readFileSync(file, "utf8"))[0];
const near = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));
if (!near(r.decode_weight_bytes, +want)) throw new Error("weights " + r.decode_weight_bytes + ", want " + want);
if (!near(r.decode_kv_bytes, kvpt * (+d + 2.5))) throw new Error("kv " + r.decode_kv_bytes + ", want " + kvpt * (+d + 2.5));
if (!(r.decode_state_bytes > 0)) throw new Error("no state bytes");
if (!near(r.decode_bytes_per_token, r.decode_weight_bytes + r.decode_kv_bytes + r.decode_state_bytes))
    throw new Error("total is not the sum of its parts");
if (!near(r.decode_gbps, r.decode_bytes_per_token * r.median_ts / 1e9)) throw new Error("decode_gbps");
if (!(r.mem_read_gbps > 0 && r.mem_read_gbps_min <= r.mem_read_gbps && r.mem_read_gbps <= r.mem_read_gbps_max))
    throw new Error("mem_read_gbps " + r.mem_read_gbps);' "$tmp/tj" "$want" "$kvpt" "$d" 2>"$tmp/nerr"; then
        ok "$name"
    else fail "$name" "$(head -c 300 "$tmp/nerr") $(head -c 200 "$tmp/err")"; fi
}
if "$Q36" synth --arch qwen35moe --preset tiny --mtp on --tied off --seed 3 -o "$MM" >"$tmp/log" 2>&1; then
    traffic_case bench_cli.traffic_dense "$M" 0
    traffic_case bench_cli.traffic_moe_mtp "$MM" 5
else fail bench_cli.traffic "q36 synth: $(tail -n 1 "$tmp/log")"; fi
"$Q36" bench "${B[@]}" --bandwidth >"$tmp/bw" 2>&1 && grep -q '^memory read bandwidth: [0-9.]* GB/s' "$tmp/bw" &&
    grep -q '^| tg2  *| *[0-9.]* |' "$tmp/bw" && ok bench_cli.bandwidth_md ||
    fail bench_cli.bandwidth_md "$(head -c 400 "$tmp/bw")"

# only pp, only tg
"$Q36" bench -m "$M" -p 3 -n 0 -r 1 -t 1 >"$tmp/o" 2>&1 && grep -q pp3 "$tmp/o" && ! grep -q ' tg' "$tmp/o" &&
    ok bench_cli.pp_only || fail bench_cli.pp_only "$(head -c 300 "$tmp/o")"

# the llama.cpp baseline: same tests, ratios printed
if [ ! -d "$LIB" ]; then
    fail bench_cli.baseline "$LIB is missing (scripts/setup.sh)"
else
    if "$Q36" bench "${B[@]}" -d 0,3 --baseline llama.cpp >"$tmp/bmd" 2>"$tmp/err" &&
       grep -q 'q36/llama' "$tmp/bmd" &&
       [ "$(grep -cE '^\| (pp4|tg2)[^|]*\|[^|]+\|[^|]+\| +[0-9]+\.[0-9]+ \|$' "$tmp/bmd")" = 4 ] &&
       grep -q '^baseline: llama.cpp ' "$tmp/bmd"; then ok bench_cli.baseline_md
    else fail bench_cli.baseline_md "$(head -c 600 "$tmp/bmd") $(head -c 200 "$tmp/err")"; fi
    if "$Q36" bench "${B[@]}" --baseline llama.cpp --llama-lib "$LIB" -o json >"$tmp/bj" 2>"$tmp/err" &&
       node -e "$check_json" "$tmp/bj" 4 "$fields" 1 2>"$tmp/nerr"; then ok bench_cli.baseline_json
    else fail bench_cli.baseline_json "$(head -c 300 "$tmp/nerr") $(head -c 200 "$tmp/err")"; fi
    # q8_0 K/V caches in both engines (llama.cpp with flash attention auto: it needs it for them)
    if "$Q36" bench "${B[@]}" -ctk q8_0 -ctv q8_0 --baseline llama.cpp --llama-lib "$LIB" -o json >"$tmp/bq" 2>"$tmp/err" &&
       node -e 'const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                if (a.length != 4 || a.some(r => r.type_k != "q8_0" || r.type_v != "q8_0" || !(r.avg_ts > 0)))
                    throw new Error(JSON.stringify(a.map(r => [r.engine, r.type_k, r.type_v, r.avg_ts])));' \
           "$tmp/bq" 2>"$tmp/nerr"; then ok bench_cli.baseline_kv_q8
    else fail bench_cli.baseline_kv_q8 "$(head -c 300 "$tmp/nerr") $(head -c 200 "$tmp/err")"; fi
    # the baseline line names the CPU variant it timed: the one the oracle loads from the same folder
    want=$("$ORACLE" cpu 2>&1)
    if "$Q36" bench "${B[@]}" --baseline llama.cpp --llama-lib "$LIB" >"$tmp/bv" 2>"$tmp/err" &&
       grep -q "^baseline: llama.cpp .*libggml-cpu-$want\.so" "$tmp/bv"; then ok bench_cli.baseline_variant
    else fail bench_cli.baseline_variant "want libggml-cpu-$want.so: $(grep '^baseline' "$tmp/bv") $(head -c 200 "$tmp/err")"; fi
fi

# exits
expect bench_cli.help 0 "$Q36" bench --help
expect bench_cli.usage_flag 2 "$Q36" bench "${B[@]}" --frobnicate
expect bench_cli.usage_p 2 "$Q36" bench -m "$M" -p x
expect bench_cli.usage_r0 2 "$Q36" bench -m "$M" -r 0
expect bench_cli.usage_d 2 "$Q36" bench -m "$M" -d 0,x
expect bench_cli.usage_o 2 "$Q36" bench -m "$M" -o xml
expect bench_cli.usage_ctk 2 "$Q36" bench -m "$M" -ctk q4
expect bench_cli.usage_baseline 2 "$Q36" bench -m "$M" --baseline vllm
expect bench_cli.usage_nothing 2 "$Q36" bench -m "$M" -p 0 -n 0
expect bench_cli.usage_lib_alone 2 "$Q36" bench -m "$M" --llama-lib "$LIB"
expect bench_cli.err_model 1 "$Q36" bench -m "$tmp/none.gguf" -p 2 -n 1 -r 1
expect bench_cli.err_llama_lib 1 "$Q36" bench "${B[@]}" --baseline llama.cpp --llama-lib "$tmp/nolib" &&
    { grep -q "scripts/setup.sh" "$tmp/err" && grep -q "$tmp/nolib" "$tmp/err" && ok bench_cli.err_llama_lib_names ||
      fail bench_cli.err_llama_lib_names "$(cat "$tmp/err")"; }
