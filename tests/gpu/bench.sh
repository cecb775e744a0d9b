#!/usr/bin/env bash
# Decode and prompt speed of the CUDA backend on the GPU machine: q36 bench
# -ngl 99 on the synthetic 0.8B dense file (Q4_K_M mix), on the trained
# default model, and (BENCH_35B=1, the default) on the synthetic
# Qwen3.6-35B-A3B geometry. Decode op by op (Q36_CUDA_GRAPHS=0
# Q36_CUDA_FASTMV=0 Q36_CUDA_FUSED=0) and as the backend's default (CUDA
# graphs, 16-byte Q4_K matvecs, fused ops); prompts (pp512, pp4096 in one
# pass) in exact mode and in fast mode (--fast: the chunked delta rule,
# f16 tensor-core and grouped expert products, tiled attention). With
# LLAMA_LIB set (a CUDA build's lib/, e.g. ../shared/llama-cuda unpacked),
# the default decode and the fast prompt runs add --baseline llama.cpp on
# the same file; BENCH_DEEP=1 adds decode at depth 32768 on the 35B file
# (also with Q36_CUDA_ATTNGQA=1);
# BENCH_QUICK=1 runs only the comparisons beside llama.cpp (decode and fast
# pp4096 on both files, with BENCH_DEEP=1 the 35B decode at depth 32768),
# exact mode's cost (decode; pp512 batch-invariant and with
# Q36_CUDA_EXACTINV=0), and GPU MTP on the trained model (full head; a
# draft vocabulary of 16384 ids at --draft-max 3 to 7).
# BENCH_AB=1 runs decode on both files beside llama.cpp, then with each
# decode switch that is not settled flipped on its own (Q36_CUDA_MV8=0, the
# later fused entries =0, Q36_CUDA_FUSED=0).
# q36 bench -ngl prints the launches and the board energy (NVML) per
# decode token. Raw output goes to LOG (default /tmp/q36-gpu) with the
# commands, the machine and the commit; bench/results/<date>-cuda*/ keeps
# what a run printed.
#
# Usage: tests/gpu/bench.sh [BIN_DIR] [TRAINED.gguf]
set -u
bin=${1:-build}
trained=${2:-}
q36=$bin/q36
log=${LOG:-/tmp/q36-gpu}
mkdir -p "$log/models"
out=${BENCH_OUT:-$log/bench.txt}
. "$(dirname "$0")/lib.sh"     # run
{
    echo "# q36 CUDA bench, $(date -u +%FT%TZ)"
    echo "# commit: $(cat "$bin/commit.txt" 2>/dev/null || echo unknown)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    echo "# cpu: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
} | tee -a "$out"

# each prompt path's op against the default one at prompt shapes (512 rows)
tbc=$bin/tests/gpu/test_backend_cuda
[ -x "$tbc" ] || tbc=$bin/test_backend_cuda
[ -x "$tbc" ] && [ "${BENCH_QUICK:-0}" != 1 ] && run 300 "$tbc" --bench-prompt
m08=$log/models/0.8b-q4km.gguf
m35=$log/models/35b-a3b-q4km.gguf
[ -f "$m08" ] || run 120 "$q36" synth --arch qwen35 --preset 0.8b --type q4_K_M -o "$m08"
OFF="Q36_CUDA_GRAPHS=0 Q36_CUDA_FASTMV=0 Q36_CUDA_FUSED=0"
base=()
[ -n "${LLAMA_LIB:-}" ] && base=(--baseline llama.cpp --llama-lib "$LLAMA_LIB")
if [ "${BENCH_AB:-0}" = 1 ]; then       # the decode switches, one off at a time
    [ -f "$m35" ] || run 150 "$q36" synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o "$m35"
    for m in "$m08" "$m35"; do
        run 200 "$q36" bench -m "$m" -ngl 99 -p 0 -n 64 -r 3 "${base[@]}"
        for sw in Q36_CUDA_MV8=0 Q36_CUDA_FSWIGLU=0 Q36_CUDA_FDN=0 \
                  Q36_CUDA_FATTNPRO=0 Q36_CUDA_FUSED=0; do
            run 100 env "$sw" "$q36" bench -m "$m" -ngl 99 -p 0 -n 64 -r 3
        done
    done
    exit 0
fi
if [ "${BENCH_QUICK:-0}" = 1 ]; then    # the comparisons beside llama.cpp only
    run 200 "$q36" bench -m "$m08" -ngl 99 --bandwidth -p 0 -n 128 -r 5 "${base[@]}"
    run 200 "$q36" bench -m "$m08" -ngl 99 -p 4096 -n 0 -r 3 -b 4096 -ub 4096 --fast "${base[@]}"
    [ -f "$m35" ] || run 150 "$q36" synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o "$m35"
    run 200 "$q36" bench -m "$m35" -ngl 99 --bandwidth -p 0 -n 64 -r 3 "${base[@]}"
    # what exact mode costs: decode, and pp512 batch-invariant (the
    # default) and not (Q36_CUDA_EXACTINV=0)
    for m in "$m08" "$m35"; do
        run 150 "$q36" bench -m "$m" -ngl 99 -p 0 -n 64 -r 3 --exact
        run 200 "$q36" bench -m "$m" -ngl 99 -p 512 -n 0 -r 2 --exact
        run 200 env Q36_CUDA_EXACTINV=0 "$q36" bench -m "$m" -ngl 99 -p 512 -n 0 -r 2 --exact
    done
    run 300 "$q36" bench -m "$m35" -ngl 99 -p 4096 -n 0 -r 3 -b 4096 -ub 4096 --fast "${base[@]}"
    [ "${BENCH_DEEP:-0}" = 1 ] &&
        run 400 "$q36" bench -m "$m35" -ngl 99 -p 0 -n 64 -d 32768 -r 2 -b 4096 -ub 4096 --fast "${base[@]}"
    # MTP drafts on the GPU, exact mode, on the trained model (a random
    # MTP layer accepts almost nothing); then with a draft vocabulary of
    # 16384 ids (a draft's head 1/9 of the full one's rows), at 3, 4 and 5
    # drafts a round
    if [ -n "$trained" ]; then
        run 200 "$q36" bench --spec-type draft-mtp -m "$trained" -ngl 99 --exact -p 64 -n 256 -r 3
        for dm in 3 4 5 6 7; do
            run 200 "$q36" bench --spec-type draft-mtp -m "$trained" -ngl 99 --exact -p 64 -n 256 -r 3 \
                --draft-vocab 16384 --draft-max $dm
        done
    fi
    exit 0
fi
# decode: op by op, then the default (graphs, 16-byte matvecs, fused ops)
# beside llama.cpp
run 150 env $OFF "$q36" bench -m "$m08" -ngl 99 --bandwidth -p 0 -n 128 -r 3
run 200 "$q36" bench -m "$m08" -ngl 99 --bandwidth -p 0 -n 128 -r 5 "${base[@]}"
# prompts: exact mode, fast mode (chunked delta rule, f16 tensor-core and
# grouped expert products, tiled attention) beside llama.cpp; -ub 4096 so
# that pp4096 is one pass
for p in 512 4096; do
    pp="-m $m08 -ngl 99 -p $p -n 0 -r 3 -b 4096 -ub 4096"
    run 150 "$q36" bench $pp --exact
    run 200 "$q36" bench $pp --fast "${base[@]}"
done
if [ -n "$trained" ]; then
    run 90 env $OFF "$q36" bench -m "$trained" -ngl 99 --bandwidth -p 512 -n 128 -r 3 --exact
    run 90 "$q36" bench -m "$trained" -ngl 99 --bandwidth -p 512 -n 128 -r 3 --fast
fi
if [ "${BENCH_35B:-1}" = 1 ]; then
    [ -f "$m35" ] || run 150 "$q36" synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o "$m35"
    if [ -f "$m35" ]; then
        run 150 env $OFF "$q36" bench -m "$m35" -ngl 99 --bandwidth -p 0 -n 64 -r 2
        run 200 "$q36" bench -m "$m35" -ngl 99 --bandwidth -p 0 -n 64 -r 3 "${base[@]}"
        run 300 "$q36" bench -m "$m35" -ngl 99 -p 512 -n 0 -r 2 --exact
        run 300 "$q36" bench -m "$m35" -ngl 99 -p 4096 -n 0 -r 3 -b 4096 -ub 4096 --fast "${base[@]}"
        run 300 env Q36_CUDA_MOEGEMM=1 "$q36" bench -m "$m35" -ngl 99 -p 4096 -n 0 -r 2 -b 4096 -ub 4096 --fast
        # decode at depth, the grouped attention (Q36_CUDA_ATTNGQA=1) beside
        # the default split
        [ "${BENCH_DEEP:-0}" = 1 ] &&
            run 400 "$q36" bench -m "$m35" -ngl 99 -p 0 -n 64 -d 32768 -r 2 -b 4096 -ub 4096 --fast "${base[@]}" &&
            run 300 env Q36_CUDA_ATTNGQA=1 "$q36" bench -m "$m35" -ngl 99 -p 0 -n 64 -d 32768 -r 2 -b 4096 -ub 4096 --fast
    fi
fi
