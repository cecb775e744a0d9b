#!/usr/bin/env bash
# The AVX2 nibble level's group norms (Q36_CPU_HEADNORM, on by default) against
# the level without them, one binary, the two alternating, REPS rounds: the
# kernel alone (lvl.c, one thread: a pass over the default model's head for 1
# and 4 tokens), `q36 run` of 1,000 greedy tokens after "def fib(n):" plain and
# with MTP drafts, and `q36 bench --spec-type draft-mtp` on the code prompt of
# ../2026-12-01-mtp/ (plain and drafted in one run). Default model, 2 threads.
# From the repository root, after make q36 and (command in README.md) lvl.c's
# build as build/head-norms-lvl.
# Usage: bench/results/2026-12-07-cpu-head-norms/run.sh OUT_DIR [REPS (5)]
set -eu
out=${1:?usage: run.sh OUT_DIR [REPS]} reps=${2:-5}
mkdir -p "$out"
ids=bench/results/2026-12-05-cpu-head-nibble-study/ids.txt
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "binary: $(build/q36 --version 2>&1 | head -1)"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma' | sort -u | tr '\n' ' ')"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
printf 'def fib(n):' >"$out/fib.txt"
for r in $(seq "$reps"); do
    for v in 0 1; do
        echo "round $r norms $v: $(build/head-norms-lvl build/default.gguf $ids $v | tr '\n' ' ')"
    done
done | tee "$out/lvl.txt"
for r in $(seq "$reps"); do
    for v in 0 1; do
        for m in plain mtp; do
            e=(); [ $m = mtp ] && e=(--spec-type draft-mtp)
            Q36_CPU_HEADNORM=$v build/q36 run -m build/default.gguf -f "$out/fib.txt" -n 1000 --temp 0 -t 2 "${e[@]}" \
                >"$out/text-$v-$m.txt" 2>"$out/err.txt"
            echo "round $r norms $v $m $(grep -o 'generated.*' "$out/err.txt")"
        done
    done
done | tee "$out/run.txt"
for r in $(seq "$reps"); do
    for v in 0 1; do
        o="$out/bench-norms$v-r$r.txt"
        Q36_CPU_HEADNORM=$v build/q36 bench --spec-type draft-mtp -f bench/results/2026-12-01-mtp/prompt-code.txt \
            -n 256 -r 3 -t 2 >"$o" 2>&1
        echo "round $r norms $v: $(grep -E '^\| (plain|draft-mtp)' "$o" | awk -F'|' '{printf "%s %s t/s (x%s); ", $2, $3, $5}')"
    done
done | tee "$out/bench.txt"
md5sum "$out"/text-*.txt | tee "$out/texts.md5"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
