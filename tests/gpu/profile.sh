#!/usr/bin/env bash
# Where the GPU's time goes: q36 bench --profile -ngl 99 (cuda_prof.cu: the
# device time of each kernel launch, op by op) on the synthetic 0.8B dense
# and Qwen3.6-35B-A3B files: one decode profile at depth 0 (and at depth
# 32768 on the 35B file with PROFILE_DEEP=1), one pp4096 prompt profile in
# fast mode. Writes the commands and the tables to PROFILE_OUT (default
# $LOG/profile.txt); synthesizes the files into $LOG/models when missing.
# Usage: tests/gpu/profile.sh [BIN_DIR]
set -u
bin=${1:-build}
q36=$bin/q36
log=${LOG:-/tmp/q36-gpu}
mkdir -p "$log/models"
out=${PROFILE_OUT:-$log/profile.txt}
. "$(dirname "$0")/lib.sh"     # run
{
    echo "# q36 CUDA profile, $(date -u +%FT%TZ)"
    echo "# commit: $(cat "$bin/commit.txt" 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
} | tee -a "$out"
m08=$log/models/0.8b-q4km.gguf
m35=$log/models/35b-a3b-q4km.gguf
[ -f "$m08" ] || run 120 "$q36" synth --arch qwen35 --preset 0.8b --type q4_K_M -o "$m08"
[ -f "$m35" ] || run 200 "$q36" synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o "$m35"
for m in "$m08" "$m35"; do
    run 200 "$q36" bench -m "$m" -ngl 99 -p 0 -n 32 -r 1 --profile
    run 200 "$q36" bench -m "$m" -ngl 99 -p 4096 -n 0 -r 1 -b 4096 -ub 4096 --fast --profile
done
[ "${PROFILE_DEEP:-0}" = 1 ] &&
    run 300 "$q36" bench -m "$m35" -ngl 99 -p 0 -n 32 -d 32768 -r 1 -b 4096 -ub 4096 --fast --profile
