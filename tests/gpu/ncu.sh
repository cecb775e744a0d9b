#!/usr/bin/env bash
# Nsight Compute on q36's CUDA decode, on the GPU machine: each kernel of
# one decode token timed alone (Q36_CUDA_GRAPHS=0, --clock-control none;
# caches flushed between kernels, so cold and serialized: where the time
# goes, not the graph's timeline), summed per kernel by ncu_sum.py, on the
# synthetic 0.8B and Qwen3.6-35B-A3B files; then the detailed sections
# (speed of light, memory, occupancy, warp stalls, launch) of the 35B's
# first matvec launches: what holds the matvecs below the bandwidth.
# NCU_ENV adds q36 switches (e.g. NCU_ENV="Q36_CUDA_MV8=0"). Output to
# NCU_OUT (default $LOG/ncu.txt), raw CSVs beside it.
# Usage: tests/gpu/ncu.sh [BIN_DIR]
set -u
bin=${1:-build}
q36=$bin/q36
log=${LOG:-/tmp/q36-gpu}
mkdir -p "$log/models"
out=${NCU_OUT:-$log/ncu.txt}
. "$(dirname "$0")/lib.sh"     # run
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
[ -n "$ncu" ] || { echo "ncu.sh: no ncu on this machine" | tee -a "$out"; exit 1; }
{
    echo "# q36 ncu, $(date -u +%FT%TZ), commit $(cat "$bin/commit.txt" 2>/dev/null || echo unknown)"
    echo "# switches: ${NCU_ENV:-(defaults)}"
} | tee -a "$out"
m08=$log/models/0.8b-q4km.gguf
m35=$log/models/35b-a3b-q4km.gguf
[ -f "$m08" ] || run 120 "$q36" synth --arch qwen35 --preset 0.8b --type q4_K_M -o "$m08"
[ -f "$m35" ] || run 200 "$q36" synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o "$m35"
# a decode token is ~262 (0.8B) / ~560 (35B) kernels: skip the prompt and
# the first tokens, then take about one token
for spec in "$m08 800 300" "$m35 1500 700"; do
    set -- $spec
    csv=$log/ncu-$(basename "$1" .gguf).csv
    run 300 env Q36_CUDA_GRAPHS=0 ${NCU_ENV:-} "$ncu" --clock-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --launch-skip "$2" \
        --launch-count "$3" "$q36" bench -m "$1" -ngl 99 -p 0 -n 8 -r 1 >"$csv" 2>&1 ||
        true
    run 30 python3 "$(dirname "$0")/ncu_sum.py" "$csv"
done
run 300 env Q36_CUDA_GRAPHS=0 ${NCU_ENV:-} "$ncu" --clock-control none --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
    --section LaunchStats -k regex:k_matvec --launch-skip 200 --launch-count 6 \
    "$q36" bench -m "$m35" -ngl 99 -p 0 -n 4 -r 1
