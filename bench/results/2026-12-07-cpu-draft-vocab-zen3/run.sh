#!/usr/bin/env bash
# The draft vocabulary's size on a CPU without AVX-512 VNNI (this Zen 3): `q36
# bench --spec-type draft-mtp` (plain and drafted generation in one run, its
# own ratio) with --draft-vocab 4096, 8192 and 16384 (the default on such CPUs)
# in turn (VOCABS, to take others), on the code and the prose prompt of
# ../2026-12-01-mtp/, REPS rounds, 2 threads, the trained default model. From
# the repository root, after make q36.
# Usage: [VOCABS="4096 8192 16384"] bench/results/2026-12-07-cpu-draft-vocab-zen3/run.sh OUT_DIR [REPS (5)]
set -eu
out=${1:?usage: run.sh OUT_DIR [REPS]} reps=${2:-5} vocabs=${VOCABS:-4096 8192 16384}
mkdir -p "$out"
P=bench/results/2026-12-01-mtp
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma' | sort -u | tr '\n' ' ')"
    echo "vocabs: $vocabs, rounds: $reps"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
for r in $(seq "$reps"); do
    for v in $vocabs; do
        for f in prompt-code.txt prompt-model_mtp.txt; do
            o="$out/bench-dv$v-${f%.txt}-r$r.txt"
            build/q36 bench --spec-type draft-mtp --draft-vocab $v -f "$P/$f" -n 256 -r 3 -t 2 >"$o" 2>&1
            echo "round $r dv $v $f: $(grep -E '^\| (plain|draft-mtp)' "$o" | awk -F'|' '{printf "%s %s; ", $2, $3}') x$(grep -E '^\| draft-mtp' "$o" | awk -F'|' '{print $5}'), $(grep -o '[0-9.]* of drafts kept' "$o"), $(grep -o 'draft [0-9.]*, verify [0-9.]*' "$o")"
        done
    done
done | tee "$out/bench.txt"
for v in $vocabs; do
    for f in prompt-code prompt-model_mtp; do
        grep " dv $v $f" "$out/bench.txt" | sed 's/.* x *\([0-9.]*\) *,.*/\1/' | sort -n |
            awk -v n="dv $v $f" '{v[NR]=$1} END {printf "%s: ratio median %.3f (%d rounds, %.3f-%.3f)\n", n, (NR%2?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2), NR, v[1], v[NR]}'
    done
done | tee "$out/medians.txt"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
