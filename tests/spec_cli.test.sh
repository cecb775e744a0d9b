#!/usr/bin/env bash
# spec_cli.test.sh: `q36 run --spec-type draft-mtp` prints the same ids as
# plain decoding (greedy, sampled with a seed, with the replay rollback, and
# greedy with q8_0 K/V caches) on the default model;
# `q36 bench --spec-type draft-mtp` reports the same tokens; the draft
# vocabulary's default follows the CPU's greedy head screen; a model
# without an MTP block, a bad --spec-type or --draft-max, a batch too small
# for the drafts, and `q36 chat --spec-type draft-mtp` are refused (the
# error named on the last line). Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
M=$BUILD/default.gguf
if [ ! -f "$M" ]; then
    fail spec_cli.setup "$M is missing (make $M)"; exit 1
fi
P=bench/results/2026-12-01-trained-model/code-prompt.txt
for args in "--temp 0|greedy" "--temp 0.8 --seed 7|sampled" "--temp 0 --draft-rollback replay|replay" \
            "--temp 0 -ctk q8_0 -ctv q8_0|greedy_kv_q8"; do
    flags=${args%%|*}; name=${args#*|}
    a=$("$Q36" run -m "$M" -f "$P" -n 96 $flags --print-ids 2>/dev/null)
    b=$("$Q36" run -m "$M" -f "$P" -n 96 $flags --print-ids --spec-type draft-mtp --draft-vocab 16384 2>"$tmp/err")
    if [ -n "$a" ] && [ "$a" = "$b" ] && grep -q "draft-mtp: .* verify passes" "$tmp/err"; then
        ok "spec_cli.run_same_ids_$name"
    else
        fail "spec_cli.run_same_ids_$name" "plain '${a:0:80}' drafted '${b:0:80}' $(tail -n 1 "$tmp/err")"
    fi
done
"$Q36" bench -m "$M" --spec-type draft-mtp -f "$P" -n 48 -r 1 -t 1 --draft-vocab 16384 >"$tmp/b" 2>&1
if grep -q "^| draft-mtp | .* | yes |$" "$tmp/b" && grep -q "^acceptance by draft position" "$tmp/b"; then
    ok spec_cli.bench
else
    fail spec_cli.bench "$(head -c 400 "$tmp/b")"
fi
# the draft vocabulary's default: the whole head (151,680 ids) where a CPU's
# int8 screen makes one greedy row cheap (AVX-512 VNNI, no lower path
# forced), else 8,192 ids; --draft-vocab 0 asks for the whole head anywhere
dv_bench() {
    env ${1:+"$@"} "$Q36" bench -m "$M" --spec-type draft-mtp -f "$P" -n 8 -r 1 -t 1 ${DV:+--draft-vocab $DV} 2>&1 |
        grep -o "draft vocabulary [0-9]*" | grep -o "[0-9]*$"
}
want=8192
if grep -q avx512_vnni /proc/cpuinfo; then
    case ${Q36_QUANT_PATH_MAX:-avx512vnni} in avx512vnni) want=151680 ;; esac   # make check-avx2 caps it
fi
got=$(dv_bench)
if [ "$got" = "$want" ]; then ok spec_cli.draft_vocab_default
else fail spec_cli.draft_vocab_default "want $want here, got '$got'"; fi
got=$(dv_bench Q36_QUANT_PATH_MAX=avx2)
if [ "$got" = 8192 ]; then ok spec_cli.draft_vocab_default_avx2
else fail spec_cli.draft_vocab_default_avx2 "want 8192 under Q36_QUANT_PATH_MAX=avx2, got '$got'"; fi
got=$(DV=0 dv_bench Q36_QUANT_PATH_MAX=avx2)
if [ "$got" = 151680 ]; then ok spec_cli.draft_vocab_all
else fail spec_cli.draft_vocab_all "want 151680 with --draft-vocab 0, got '$got'"; fi
"$Q36" synth --arch qwen35 --preset tiny --seed 5 -o "$tmp/nomtp.gguf" >/dev/null 2>&1
# refused NAME PATTERN CMD...: exit 1, the last stderr line matching PATTERN
# (q36 run prints its loading lines first)
refused() {
    local name=$1 pat=$2; shift 2
    "$@" >/dev/null 2>"$tmp/err"; local rc=$?
    if [ "$rc" -eq 1 ] && tail -n 1 "$tmp/err" | grep -q "$pat"; then ok "$name"
    else fail "$name" "exit $rc: $(tail -n 1 "$tmp/err")"; fi
}
refused spec_cli.refuse_no_mtp "has no MTP block" "$Q36" run -m "$tmp/nomtp.gguf" --ids "1 2 3" -n 4 --spec-type draft-mtp
expect spec_cli.refuse_bad_type 2 "$Q36" run -m "$M" --ids "1 2 3" -n 4 --spec-type ngram
expect spec_cli.refuse_draft_max 2 "$Q36" run -m "$M" --ids "1 2 3" -n 4 --spec-type draft-mtp --draft-max 0
refused spec_cli.refuse_small_batch "need passes of 5 rows" "$Q36" run -m "$M" --ids "1 2 3" -n 4 --spec-type draft-mtp -b 4
expect spec_cli.refuse_chat 2 "$Q36" chat -m "$M" --spec-type draft-mtp
