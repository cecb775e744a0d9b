#!/usr/bin/env bash
# MTP drafting against plain decoding on this CPU, the trained default model, two
# binaries in turn (BASE, NEW): `q36 bench --spec-type draft-mtp` (plain and drafted
# generation in one run, its own ratio; the draft vocabulary each binary's default)
# on two prompts, then `q36 run` (1,000 greedy tokens after "def fib(n):", plain and
# drafted), REPS rounds each, 2 threads; then the AVX2 nibble level's kernel timings
# (test_cpu_head bench, one thread). From the repository root, after make q36
# build/tests/test_cpu_head.
# Usage: bench/results/2026-12-07-cpu-zen3-mtp/run.sh OUT_DIR BASE NEW [REPS (5)]
set -eu
out=${1:?usage: run.sh OUT_DIR BASE NEW [REPS]} base=${2:?} new=${3:?} reps=${4:-5}
mkdir -p "$out"
P=bench/results/2026-12-01-mtp
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "base: $base, new: $new (each bench-*.txt names its binary's commit)"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma' | sort -u | tr '\n' ' ')"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
for r in $(seq "$reps"); do
    for b in "$base" "$new"; do
        for f in prompt-code.txt prompt-model_mtp.txt; do
            o="$out/bench-$(basename "$b")-${f%.txt}-r$r.txt"
            "$b" bench --spec-type draft-mtp -f "$P/$f" -n 256 -r 3 -t 2 >"$o" 2>&1
            echo "round $r $(basename "$b") $f: $(grep -E '^\| draft-mtp' "$o" | awk -F'|' '{print $5}') x, $(grep -o 'draft vocabulary [0-9]*' "$o"), $(grep -o '[0-9.]* of drafts kept' "$o")"
        done
    done
done | tee "$out/bench.txt"
printf 'def fib(n):' >"$out/fib.txt"
for r in $(seq "$reps"); do
    for b in "$base" "$new"; do
        for m in plain mtp; do
            e=(); [ $m = mtp ] && e=(--spec-type draft-mtp)
            "$b" run -m build/default.gguf -f "$out/fib.txt" -n 1000 --temp 0 -t 2 "${e[@]}" \
                >"$out/text-$(basename "$b")-$m.txt" 2>"$out/err.txt"
            echo "round $r $(basename "$b") $m $(grep -o 'generated.*' "$out/err.txt")"
        done
    done
done | tee "$out/run.txt"
for b in "$base" "$new"; do
    cmp -s "$out/text-$(basename "$b")-plain.txt" "$out/text-$(basename "$b")-mtp.txt" &&
        echo "$(basename "$b"): the same text plain and drafted" | tee -a "$out/run.txt"
    for m in plain mtp; do
        grep " $(basename "$b") $m " "$out/run.txt" | sed 's/.*(\([0-9.]*\) tok.*/\1/' | sort -n |
            awk -v n="$(basename "$b") $m" '{v[NR]=$1} END {printf "%s: median %.1f t/s (%d runs, %.1f-%.1f)\n", n, (NR%2?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2), NR, v[1], v[NR]}'
    done
done | tee "$out/run-medians.txt"
./build/tests/test_cpu_head bench | tee "$out/kernel-bench.txt"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
