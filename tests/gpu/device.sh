#!/usr/bin/env bash
# tests/gpu/device.sh: on the GPU machine, from the repository root of the
# carried tree: everything one device call does with what tests/gpu/pack.sh
# made. Unpacks the llama.cpp CUDA build when its parts (.dev-p*/) are
# there, unpacks the trained default model, runs tests/gpu/run.sh, then
# tests/gpu/bench.sh (with llama.cpp as the baseline when unpacked). Logs
# and the bench output go to $OUT (or /tmp/q36-out).
# Env: STEPS (default "test bench"; "profile": tests/gpu/profile.sh), BENCH_35B (bench.sh's, default 1). A
# call runs at most 10 minutes: with the switched paths, run.sh's two op
# passes and the model passes can need most of one call, so give STEPS=test
# and STEPS=bench calls of their own (the machine keeps /tmp while warm).
# Usage: bash .cuda-carry/device.sh [CARRY (.cuda-carry)]
set -u
dir=${1:-.cuda-carry}
out=${OUT:-/tmp/q36-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LOG=/tmp/q36-gpu
{ nvidia-smi; echo "commit: $(cat "$dir/commit.txt")"; nproc; } >"$out/env.txt" 2>&1
# the machine keeps /tmp between warm calls but not the carried folders
# of an earlier call: each part call copies its part to /tmp/llama-parts
mkdir -p /tmp/llama-parts
cp .dev-p*/llama-cuda-sm90.tar.xz.part* /tmp/llama-parts/ 2>/dev/null
if [ "$(ls /tmp/llama-parts | wc -l)" -ge 3 ]; then
    mkdir -p /tmp/llama-cuda
    [ -d /tmp/llama-cuda/llama-cuda-sm90/lib ] ||
        cat /tmp/llama-parts/llama-cuda-sm90.tar.xz.part* | xz -d | tar x -C /tmp/llama-cuda
    # libllama finds its libggml* through the loader's path
    [ -d /tmp/llama-cuda/llama-cuda-sm90/lib ] && export LLAMA_LIB=/tmp/llama-cuda/llama-cuda-sm90/lib &&
        export LD_LIBRARY_PATH=$LLAMA_LIB:$LD_LIBRARY_PATH
fi
trained=/tmp/trained.gguf
xz -dc models/q36-tiny-moe.gguf.xz >"$trained"
for s in ${STEPS:-test bench}; do
    case $s in
    test)  bash "$dir/run.sh" "$dir" "$trained" >"$out/gpu-tests.txt" 2>&1
           tail -n 1 "$out/gpu-tests.txt" ;;
    bench) BENCH_OUT=$out/bench.txt bash "$dir/bench.sh" "$dir" "$trained" >/dev/null 2>&1
           tail -n 5 "$out/bench.txt" ;;
    profile) PROFILE_OUT=$out/profile.txt bash "$dir/profile.sh" "$dir" >/dev/null 2>&1
           tail -n 5 "$out/profile.txt" ;;
    esac
done
