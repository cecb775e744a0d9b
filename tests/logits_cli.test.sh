#!/usr/bin/env bash
# logits_cli.test.sh: the contract of `q36 logits` (ARCHITECTURE.md): output
# shape and the "positions n_vocab" line, --all vs last row, --split and
# --greedy, and its exits: 2 on bad usage, 1 on a user error with one line.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
Q36=${Q36:-./q36}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok()   { echo "ok logits_cli.$1"; }
fail() { echo "FAIL logits_cli.$1: $2"; }
M=$tmp/m.gguf
if ! "$Q36" synth --arch qwen35 --preset tiny --seed 5 -o "$M" >"$tmp/log" 2>&1; then
    fail setup "q36 synth: $(tail -n 1 "$tmp/log")"; exit 1
fi
V=$("$Q36" info -m "$M" | awk '$1 == "n_vocab" { print $2 }')

out=$("$Q36" logits -m "$M" --ids "1 2 3 4 5" -o "$tmp/all.f32" --all)
sz=$(stat -c %s "$tmp/all.f32")
[ "$out" = "5 $V" ] && [ "$sz" = $((5 * V * 4)) ] && ok all || fail all "stdout '$out', $sz bytes"

out=$("$Q36" logits -m "$M" --ids "1,2,3,4,5" -o "$tmp/last.f32")
tail -c $((V * 4)) "$tmp/all.f32" >"$tmp/tail.f32"
[ "$out" = "1 $V" ] && cmp -s "$tmp/last.f32" "$tmp/tail.f32" && ok last_equals_all_row || fail last_equals_all_row "stdout '$out'"

printf '1\n2 3\n4,5\n' >"$tmp/ids"
"$Q36" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/f.f32" --all -t 2 --split 2 >/dev/null &&
    cmp -s "$tmp/f.f32" "$tmp/all.f32" && ok ids_file_split_threads || fail ids_file_split_threads "differs"

g=$("$Q36" logits -m "$M" --ids "1 2 3" -o "$tmp/g.f32" --greedy 4)
sz=$(stat -c %s "$tmp/g.f32")
[[ "$g" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]] && [ "$sz" = $((4 * V * 4)) ] && ok greedy || fail greedy "'$g' $sz bytes"

expect() {   # name status args...
    local name=$1 want=$2; shift 2
    "$Q36" logits "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
    local lines; lines=$(wc -l <"$tmp/e")
    if [ "$rc" = "$want" ] && [ "$lines" -ge 1 ]; then ok "$name"; else fail "$name" "exit $rc (want $want): $(head -c 300 "$tmp/e")"; fi
}
expect usage_no_ids 2 -m "$M" -o "$tmp/x"
expect usage_both_ids 2 -m "$M" --ids 1 --ids-file "$tmp/ids" -o "$tmp/x"
expect usage_no_out 2 -m "$M" --ids 1
expect usage_bad_ids 2 -m "$M" --ids "1 x" -o "$tmp/x"
expect usage_bad_ctk 2 -m "$M" --ids 1 -o "$tmp/x" -ctk q4
expect err_token_range 1 -m "$M" --ids "1 $V" -o "$tmp/x"
expect err_context 1 -m "$M" --ids "1 2 3" -c 2 -o "$tmp/x"
expect err_model 1 -m "$tmp/none.gguf" --ids 1 -o "$tmp/x"
# q8_0 K/V: K and V together, a head size 32 divides, the CPU backend
expect err_kv_q8_mixed 1 -m "$M" --ids 1 -o "$tmp/x" -ctk q8_0 -ctv f16
expect err_kv_q8_gpu 1 -m "$M" --ids 1 -o "$tmp/x" -ctk q8_0 -ctv q8_0 -ngl 99
if "$Q36" synth --arch qwen35 --preset tiny --head-dim 80 -o "$tmp/h80.gguf" >/dev/null 2>&1; then
    expect err_kv_q8_head_size 1 -m "$tmp/h80.gguf" --ids 1 -o "$tmp/x" -ctk q8_0 -ctv q8_0
    grep -q "key_length is 80" "$tmp/e" && ok err_kv_q8_names_key || fail err_kv_q8_names_key "$(head -c 300 "$tmp/e")"
else
    fail err_kv_q8_head_size "q36 synth --head-dim 80 failed"
fi
if "$Q36" logits -m "$M" --ids "1 2 3 4 5" -o "$tmp/k8.f32" --all -ctk q8_0 -ctv q8_0 >/dev/null &&
   "$Q36" logits -m "$M" --ids "1 2 3 4 5" -o "$tmp/k8s.f32" --all -ctk q8_0 -ctv q8_0 --split 1 -t 5 >/dev/null &&
   cmp -s "$tmp/k8.f32" "$tmp/k8s.f32" && ! cmp -s "$tmp/k8.f32" "$tmp/all.f32"; then ok kv_q8_split_same
else fail kv_q8_split_same "q8_0 K/V logits differ with --split 1 -t 5 (heads of a group split over threads), or equal the f16 ones"; fi
if "$Q36" logits -m "$M" --ids "1 $V" -o "$tmp/x" 2>&1 | grep -q "vocabulary"; then ok err_names_vocab
else fail err_names_vocab "message does not name the vocabulary"; fi
