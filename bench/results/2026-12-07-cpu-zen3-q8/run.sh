#!/usr/bin/env bash
# The Q8_0 row of bench/cpu/run.sh's table alone (its command for that file, the same flags),
# at the commit checked out, into OUT_DIR. From the repository root, after make q36.
# Usage: bench/results/2026-12-07-cpu-zen3-q8/run.sh OUT_DIR [reps (5)]
set -eu
out=${1:?usage: run.sh OUT_DIR [reps]} reps=${2:-5}
mkdir -p "$out"
m=build/models/q08-q8_0.gguf
[ -s "$m" ] || ./build/q36 synth --preset 0.8b --type q8_0 -o "$m" >/dev/null
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "q36 binary: ./build/q36 (built from $(cat build/commit.txt 2>/dev/null || echo unknown))"
    echo "model:"; sha256sum "$m"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma|f16c|avx_vnni' | sort -u | tr '\n' ' ')"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
cmd=(./build/q36 bench -m "$m" -p 512 -n 128 -d 0,4096 -r "$reps" -t 2 --baseline llama.cpp --bandwidth --progress)
echo "${cmd[*]}" >"$out/q08-q8_0.cmd"
"${cmd[@]}" >"$out/q08-q8_0.md" 2>"$out/q08-q8_0.stderr"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
