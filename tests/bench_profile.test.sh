#!/usr/bin/env bash
# bench_profile.test.sh: the contract of `q36 bench --profile` and of the
# session's per-op profile (q36_session_opts.profile): both tables per
# profiled run, op shares that add up to at most the forward time and
# account for most of it, matmuls by weight type, expert matmuls on a MoE
# model, JSON output left clean, and logits bit-identical with and without
# the switch. On tiny synthetic models: it never asserts a speed.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
M=$tmp/m.gguf E=$tmp/e.gguf
if ! "$Q36" synth --arch qwen35 --preset tiny --seed 7 -o "$M" >"$tmp/log" 2>&1 ||
   ! "$Q36" synth --arch qwen35moe --preset tiny --seed 7 -o "$E" >"$tmp/log" 2>&1; then
    fail bench_profile.setup "q36 synth: $(tail -n 1 "$tmp/log")"; exit 1
fi

# shares FILE: per profiled run, the op rows' % column sums to <= 100 (plus
# print rounding) and the "(ops, all)" share is above 50%; prints "runs N"
shares='
BEGIN { FS = "|" }
/^q36 profile: / { run++; sum[run] = 0; n[run] = 0 }
/^\| / && run && NF == 7 && $2 !~ /op family|---|\(/ { v = $5; sub(/%/, "", v); sum[run] += v; n[run]++ }
/^\| \(ops, all\)/ { v = $5; sub(/%/, "", v); acc[run] = v + 0 }
END {
    bad = 0
    for (r = 1; r <= run; r++)
        if (!n[r] || sum[r] > 100.05 || !(acc[r] > 50)) {
            print "run " r ": " n[r] " ops, " sum[r] "%, accounted " acc[r] "%"; bad = 1
        }
    print "runs " run
    exit bad
}'

if "$Q36" bench -m "$M" -p 6 -n 3 -r 1 -t 2 -d 0,2 --profile >"$tmp/md" 2>"$tmp/err" &&
   [ "$(grep -c '^q36 profile: pp6 @ d[02]:' "$tmp/md")" = 2 ] &&
   [ "$(grep -c '^q36 profile: tg3 @ d[02]:' "$tmp/md")" = 2 ] &&
   [ "$(grep -c '^| op family' "$tmp/md")" = 4 ] && [ "$(grep -c '^| layer type' "$tmp/md")" = 4 ] &&
   [ "$(grep -c '^| (unaccounted)' "$tmp/md")" = 4 ] && [ "$(grep -c '^| (forward)' "$tmp/md")" = 4 ] &&
   grep -q '^| deltanet ' "$tmp/md" && grep -q '^| attention ' "$tmp/md" &&
   grep -q '^| ffn/moe ' "$tmp/md" && grep -q '^| head/embedding ' "$tmp/md"; then
    ok bench_profile.tables
else fail bench_profile.tables "$(head -c 600 "$tmp/md") $(head -c 200 "$tmp/err")"; fi

grep -q '^| matmul q8_0 ' "$tmp/md" && ok bench_profile.matmul ||
    fail bench_profile.matmul "no 'matmul q8_0' row"

if out=$(awk "$shares" "$tmp/md") && [ "$(printf '%s\n' "$out" | tail -n 1)" = "runs 4" ]; then
    ok bench_profile.shares
else fail bench_profile.shares "$out"; fi

# without --profile: no profile tables
"$Q36" bench -m "$M" -p 4 -n 2 -r 1 -t 1 >"$tmp/plain" 2>&1 && ! grep -q 'q36 profile' "$tmp/plain" &&
    ok bench_profile.off || fail bench_profile.off "$(head -c 300 "$tmp/plain")"

# MoE: expert matmuls and routing appear
if "$Q36" bench -m "$E" -p 5 -n 2 -r 1 -t 2 --profile >"$tmp/moe" 2>"$tmp/err" &&
   grep -q '^| expert matmul ' "$tmp/moe" && grep -q '^| moe route ' "$tmp/moe" &&
   out=$(awk "$shares" "$tmp/moe"); then
    ok bench_profile.moe
else fail bench_profile.moe "$(head -c 400 "$tmp/moe") $(head -c 200 "$tmp/err") ${out:-}"; fi

# JSON output stays JSON-only on stdout; the tables go to stderr
if "$Q36" bench -m "$M" -p 4 -n 2 -r 1 -t 1 -o jsonl --profile >"$tmp/jl" 2>"$tmp/jerr" &&
   [ "$(wc -l <"$tmp/jl")" = 2 ] && ! grep -q 'q36 profile' "$tmp/jl" &&
   [ "$(grep -c '^| op family' "$tmp/jerr")" = 2 ]; then
    ok bench_profile.json_stderr
else fail bench_profile.json_stderr "$(head -c 300 "$tmp/jl") $(head -c 200 "$tmp/jerr")"; fi

# profiling changes no result: the same bits with and without the switch
ids="3 1 4 1 5 9 2 6 5 3 5"
for m in "$M" "$E"; do
    n=$(basename "$m" .gguf)
    if "$Q36" logits -m "$m" --ids "$ids" -o "$tmp/$n.off.f32" --all -t 2 --split 4 >/dev/null 2>&1 &&
       "$Q36" logits -m "$m" --ids "$ids" -o "$tmp/$n.on.f32" --all -t 2 --split 4 --profile >/dev/null 2>&1 &&
       cmp -s "$tmp/$n.off.f32" "$tmp/$n.on.f32"; then
        ok "bench_profile.logits_$n"
    else fail "bench_profile.logits_$n" "logits differ or a run failed"; fi
done

# --spec-type draft-mtp: the MTP block's passes are timed as forward passes
# of their own, a layer row "mtp block" in the drafting run only, and the
# op shares of both runs add up (the plain run's first greedy step makes
# the CPU head's screen copies, counted as the head's product time)
D=$BUILD/default.gguf
if [ ! -f "$D" ]; then
    fail bench_profile.mtp "$D is missing (make $D)"
elif "$Q36" bench -m "$D" --spec-type draft-mtp -p 24 -n 12 -r 1 -t 2 --draft-vocab 16384 --profile \
        >"$tmp/mtp" 2>"$tmp/err" &&
     [ "$(grep -c '^| mtp block ' "$tmp/mtp")" = 1 ] &&
     awk '/^q36 profile: draft-mtp/ { d = 1 } d && /^\| mtp block / { f = 1 } END { exit !f }' "$tmp/mtp" &&
     out=$(awk "$shares" "$tmp/mtp") && [ "$(printf '%s\n' "$out" | tail -n 1)" = "runs 2" ]; then
    ok bench_profile.mtp
else fail bench_profile.mtp "$(grep -E '^(q36 profile|\| (mtp|\())' "$tmp/mtp" | head -8) $(head -c 200 "$tmp/err") ${out:-}"; fi
