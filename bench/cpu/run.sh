#!/usr/bin/env bash
# bench/cpu/run.sh: the CPU speed table of issue 6, in one go: three synthetic
# files of real geometry (made here with q36 synth when absent), and a fourth in
# llama-quantize's Q4_K_M mix (Q4_K; Q6_K head, attn_qkv/attn_v and ffn_down in
# some blocks: the mix most downloads are) unless FILES=3, each timed by
# `q36 bench --baseline llama.cpp` (q36 and the pinned libllama in the same
# process, repetitions interleaved) at depths 0 and 4096, pp512 and tg128, with
# the memory read bandwidth, then one profiled run per file. Everything a
# record needs goes to OUT: the machine, the commit, each command and its raw
# output.
# Usage: bench/cpu/run.sh OUT_DIR [reps (5)] [threads (2)] [depths (0,4096)]
# Env: Q36 (default ./build/q36), MODELS (default build/models), FILES (3 or 4, default 4),
# LLAMA_LIB (a folder of llama.cpp libraries for --llama-lib; bench/cpu/avx2.sh sets it).
set -eu
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/cpu/run.sh OUT_DIR [reps] [threads] [depths]}
reps=${2:-5} threads=${3:-2} depths=${4:-0,4096}
Q36=${Q36:-./build/q36} MODELS=${MODELS:-build/models}
mkdir -p "$out" "$MODELS"

synth() { # file, q36 synth flags...
    local f=$MODELS/$1; shift
    [ -s "$f" ] || "$Q36" synth "$@" -o "$f" >/dev/null
    echo "$f"
}
q4=$(synth q08-q4_K.gguf --preset 0.8b --type q4_K)
q8=$(synth q08-q8_0.gguf --preset 0.8b --type q8_0)
moe=$(synth moe-scaled-q4_K.gguf --arch qwen35moe --preset 35b-a3b --hidden 1024 --layers 16 \
      --experts 64 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K)
files=("$q4" "$q8" "$moe")
[ "${FILES:-4}" = 3 ] || files+=("$(synth q08-q4_K_M.gguf --preset 0.8b --type q4_K_M)")

{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools Makefile || echo ' (with uncommitted changes)')"
    echo "q36 binary: $Q36 (built from $(cat "$(dirname "$Q36")/commit.txt" 2>/dev/null || echo unknown))"
    echo "models:"; sha256sum "${files[@]}"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|avx2|fma|f16c|avx_vnni' | sort -u | tr '\n' ' ')"
    echo "memory:"; free -m
    echo "Q36_QUANT_PATH_MAX: ${Q36_QUANT_PATH_MAX:-(unset)}"
    echo "llama.cpp libraries: ${LLAMA_LIB:-the pinned folder (every CPU variant)}"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"

for m in "${files[@]}"; do
    name=$(basename "$m" .gguf)
    cmd=("$Q36" bench -m "$m" -p 512 -n 128 -d "$depths" -r "$reps" -t "$threads" --baseline llama.cpp
         ${LLAMA_LIB:+--llama-lib "$LLAMA_LIB"} --bandwidth --progress)
    echo "${Q36_QUANT_PATH_MAX:+Q36_QUANT_PATH_MAX=$Q36_QUANT_PATH_MAX }${cmd[*]}" >"$out/$name.cmd"
    echo "load before: $(cat /proc/loadavg)" >"$out/$name.stderr"
    "${cmd[@]}" >"$out/$name.md" 2>>"$out/$name.stderr"
    echo "load after: $(cat /proc/loadavg)" >>"$out/$name.stderr"
done
for m in "${files[@]}"; do
    name=$(basename "$m" .gguf)
    cmd=("$Q36" bench -m "$m" -p 512 -n 64 -d "$depths" -r 1 -t "$threads" --profile)
    echo "${Q36_QUANT_PATH_MAX:+Q36_QUANT_PATH_MAX=$Q36_QUANT_PATH_MAX }${cmd[*]}" >"$out/$name.profile.cmd"
    "${cmd[@]}" >"$out/$name.profile.md" 2>&1
done
echo "done: $out"
