#!/usr/bin/env bash
# The nibble level of the greedy head's screen on and off (Q36_CPU_HEADNIB=0),
# alternating, on the trained default model: q36 run greedy (1,000 tokens
# after "def fib(n):", 2 threads), REPS rounds; then the test program's
# kernel timings (test_cpu_head bench: one thread, random 151,680 x 256
# head). From the repository root, after make q36 build/tests/test_cpu_head.
# With Q36_QUANT_PATH_MAX=avx2 in the environment: as on a CPU without
# AVX-512 (the level's AVX2 kernel and exact products of the kept groups).
# Usage: bench/results/2026-12-06-cpu-head-nibble/run.sh OUT_DIR [REPS (7)]
set -eu
out=${1:?usage: run.sh OUT_DIR [REPS]} reps=${2:-7}
mkdir -p "$out"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma' | sort -u | tr '\n' ' ')"
    echo "Q36_QUANT_PATH_MAX: ${Q36_QUANT_PATH_MAX:-(unset)}"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
for r in $(seq "$reps"); do
    for v in default 0; do
        e=(); [ "$v" = 0 ] && e=(Q36_CPU_HEADNIB=0)
        env "${e[@]}" ./build/q36 run -m build/default.gguf -p "def fib(n):" -n 1000 --temp 0 -t 2 \
            >"$out/text-$v.txt" 2>"$out/err.txt"
        echo "round $r HEADNIB=$v $(grep -o 'generated.*' "$out/err.txt")"
    done
done | tee "$out/run.txt"
cmp -s "$out/text-default.txt" "$out/text-0.txt" && echo "same text both ways" | tee -a "$out/run.txt"
./build/tests/test_cpu_head bench | tee "$out/kernel-bench.txt"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
