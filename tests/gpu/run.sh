#!/usr/bin/env bash
# The GPU test script: runs where a CUDA device is (not part of tests/run.sh:
# CI has no GPU). Every op of the CUDA backend against the CPU backend, then
# whole models (synthetic files of both architectures and odd geometries,
# and the trained default model when given): prompt logits, 64 greedy
# tokens, slots batched together, CUDA against CPU; then the device flags:
# the GPU memory plan, a context too large for the device refused up front;
# then q36 serve -ngl 99 on the trained model (serve_gpu.py).
# The ops and the whole models run twice: op by op (NEW=0:
# Q36_CUDA_GRAPHS=0 Q36_CUDA_FASTMV=0 Q36_CUDA_FUSED=0 Q36_CUDA_PDL=0
# Q36_CUDA_ATTNGQA=0 Q36_CUDA_MVMIXED=0) and as the
# backend's default (NEW=1: decode steps recorded and replayed as CUDA
# graphs, the 16-byte Q4_K matvecs, the fused add+norm, DeltaNet conv+SiLU
# and gated norm, MoE combine kernels).
# Each model run also compares graphs on and off directly, and the op run
# checks each switch's own cases either way.
# Then whole models once more with the GPU in fast mode (its prompt paths:
# the chunked delta rule, f16 tensor-core and grouped expert products,
# tiled attention).
# Ends with "N passed, N failed".
# TEST_PARTS (default all: "ops0 models0 ops1 models1 fast rest") runs only
# the named parts (opsN, modelsN: the op cases and the model runs of round
# NEW=N; fast: the fast-mode model runs; rest: MTP, the device flags and q36
# serve), so that the script can be split over device calls of at most 10
# minutes on one warm machine; with TEST_PARTS set, test files already
# made in LOG/models by an earlier part are used again.
#
# Usage: tests/gpu/run.sh [BIN_DIR] [TRAINED.gguf]
#   BIN_DIR holds q36 and test_backend_cuda (default: build, build/tests/gpu);
#   LOG (default /tmp/q36-gpu) receives the logs and the synthetic models.
set -u
bin=${1:-}
trained=${2:-}
q36=${bin:+$bin/q36}; q36=${q36:-build/q36}
tbc=${bin:+$bin/test_backend_cuda}; tbc=${tbc:-build/tests/gpu/test_backend_cuda}
log=${LOG:-/tmp/q36-gpu}
. "$(dirname "$0")/lib.sh"     # new_env
mkdir -p "$log/models"
passed=0 failed=0
count() {   # count FILE: adds its ok/FAIL lines
    local p f
    p=$(grep -c '^ok ' "$1"); f=$(grep -c '^FAIL ' "$1")
    passed=$((passed + p)); failed=$((failed + f))
}
ok() { echo "ok $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv || true

# ---- synthetic models: both architectures, the device weight types, odd
# geometries (head dims 64/128/256, 1-3 KV heads, experts top-1/3/8)
models=()
parts=" ${TEST_PARTS:-ops0 models0 ops1 models1 fast rest} "
want() { [[ $parts == *" $1 "* ]]; }
synth() {   # synth NAME ARGS...
    local name=$1; shift
    if [ -n "${TEST_PARTS:-}" ] && [ -f "$log/models/$name.gguf" ]; then
        models+=("$log/models/$name.gguf")
    elif "$q36" synth "$@" -o "$log/models/$name.gguf" >"$log/models/$name.log" 2>&1; then
        models+=("$log/models/$name.gguf")
    else
        fail "synth.$name" "$(tail -n 3 "$log/models/$name.log")"
    fi
}
each_test_model synth
[ -n "$trained" ] && [ -f "$trained" ] && models+=("$trained")

# ---- the ops, then each model in a process of its own, against the CPU
one() {     # one NAME ARGS...: a run of test_backend_cuda into $log/NAME.log
    local name=$1; shift
    timeout "${limit:-150}" env $(new_env "${NEW:-0}") "$tbc" "$@" >"$log/$name.log" 2>&1
    local rc=$?
    grep -E '^(ok|FAIL|#) ' "$log/$name.log"
    count "$log/$name.log"
    if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$log/$name.log"; then
        fail "test_backend_cuda.$name" "exited $rc: $(tail -n 5 "$log/$name.log")"
    fi
}
for NEW in 0 1; do
    sfx=$([ "$NEW" = 1 ] && echo -new)
    echo "# Q36_CUDA_GRAPHS, FASTMV, FUSED, PDL, ATTNGQA, MVMIXED, EXACTINV all $NEW"
    # the op cases: the switched prompt paths' cases (contexts of their own,
    # host references in double) take minutes, not seconds
    want "ops$NEW" && limit=600 one "ops$sfx"
    want "models$NEW" || continue
    for m in "${models[@]}"; do
        one "model-$(basename "$m" .gguf)$sfx" --no-ops "$m"
    done
done
if ! want fast && ! want rest; then
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
fi
# fast mode on the GPU, its prompt paths at their defaults (all on: the
# chunked delta rule, cuda_chunk.h; f16 tensor-core products, cuda_gemm.cu;
# grouped expert products on f16 tensor cores, cuda_moe.h; tiled prompt
# attention, cuda_fattn.h), against the CPU in exact mode: the same checks
# within fast mode's bound (test_backend_cuda.c: FAST_FLOOR), case names
# cuda.model.fast.*. (The op cases above ran each path in a context of its
# own.)
unset Q36_CUDA_CHUNKED Q36_CUDA_GEMM16 Q36_CUDA_MOEGEMM Q36_CUDA_FATTN
want fast && for m in "${models[@]}"; do
    one "model-fast-$(basename "$m" .gguf)" --no-ops --fast "$m"
done

# fast mode as it runs by default (every decode switch on: graphs, fused
# ops, mixed groups, int8 products, sides, kept int8 rows; the
# *_same_bits cases compare each switch, e.g. Q36_CUDA_Q8KEEP=1 and =2
# (the default), with 0 bit for bit), then the switches
# away from their defaults (their op cases ran above), on the Q4_K models
# and the trained one: Q36_CUDA_MV8=0 (fast mode's decode products on f32
# activations), Q36_CUDA_MMQ=0 (batches' Q4_K and Q6_K products on the dp4a
# kernels, not the tensor cores), Q36_CUDA_CHUNKPREP=2 (the chunked delta rule's prep in f32,
# blocked, cuda_chunk_pb.h), Q36_CUDA_CHUNKBV=0 Q36_CUDA_CHUNKPREP=1
# Q36_CUDA_CHUNKOUTM=0 (its three kernels' products through WMMA, the
# defaults before 2026-12-06, not as mma.sync steps), Q36_CUDA_CHUNKBV=32
# (its state kernel 32 value columns a block, not the default 16,
# cuda_chunk_wide.cu); on the two Q4_K MoE
# files Q36_CUDA_MOEWQ=1 (their experts in their blocks, cuda_moe_wq.cu,
# every prompt batch grouped) and Q36_CUDA_MMQGRP=2 (expert products of
# batches from 2 tokens grouped by expert on the tensor cores, k_mmq_grp;
# from 32 by default); on moe-q4km Q36_CUDA_FATTNWG=0
# (prompt attention through mma.sync, not Hopper's warpgroup products,
# cuda_fattn_wg.cu). Batch-invariant exact
# mode (Q36_CUDA_EXACTINV, on by default) is the NEW=1 pass above, whose
# exact_batch_invariant cases assert that a row's logits are the same bits
# alone and batched; the NEW=0 pass reports the difference without it.
want fast && for m in "${models[@]}"; do
    case $(basename "$m") in
    dense-q4km.gguf|moe-q4k-top8.gguf|moe-q4km.gguf|trained.gguf)
        NEW=1 one "model-fastnew-$(basename "$m" .gguf)" --no-ops --fast "$m"
        NEW=1 Q36_CUDA_MV8=0 one "model-nomv8-$(basename "$m" .gguf)" --no-ops --fast "$m"
        NEW=1 Q36_CUDA_MMQ=0 one "model-nommq-$(basename "$m" .gguf)" --no-ops --fast "$m"
        NEW=1 Q36_CUDA_CHUNKPREP=2 one "model-chunkpb-$(basename "$m" .gguf)" --no-ops --fast "$m"
        NEW=1 Q36_CUDA_CHUNKBV=0 Q36_CUDA_CHUNKPREP=1 Q36_CUDA_CHUNKOUTM=0 one "model-chunkwmma-$(basename "$m" .gguf)" --no-ops --fast "$m"
        NEW=1 Q36_CUDA_CHUNKBV=32 one "model-chunkbv32-$(basename "$m" .gguf)" --no-ops --fast "$m"
        case $(basename "$m") in
        moe-q4k-top8.gguf|moe-q4km.gguf)
            NEW=1 Q36_CUDA_MOEWQ=1 Q36_CUDA_MOEGEMM=3 Q36_CUDA_MOEROWS=0 one "model-moewq-$(basename "$m" .gguf)" --no-ops --fast "$m"
            NEW=1 Q36_CUDA_MMQGRP=2 one "model-mmqgrp-$(basename "$m" .gguf)" --no-ops --fast "$m" ;;
        esac
        case $(basename "$m") in
        moe-q4km.gguf)
            NEW=1 Q36_CUDA_FATTNWG=0 one "model-nofattnwg-$(basename "$m" .gguf)" --no-ops --fast "$m" ;;
        esac ;;
    esac
done
# q8_0 K/V caches (--kv-q8: both sides' sessions and engines on them;
# cuda_attn_q8.cu) in exact and in fast mode, on files of head dims 256
# (dense-q4km's preset, moe-q4km), 128 (dense-q6k) and 256 with one KV
# head (dense-q8hd256), and the trained model: case names .kvq8
want fast && for m in "${models[@]}"; do
    case $(basename "$m") in
    dense-q4km.gguf|dense-q6k.gguf|dense-q8hd256.gguf|moe-q4km.gguf|trained.gguf)
        NEW=1 one "model-kvq8-$(basename "$m" .gguf)" --no-ops --kv-q8 "$m"
        NEW=1 one "model-fastkvq8-$(basename "$m" .gguf)" --no-ops --fast --kv-q8 "$m" ;;
    esac
done

# ---- MTP on the GPU: q36 bench --spec-type draft-mtp -ngl 99 on the
# trained model in exact mode (the verify passes, the DeltaNet rollback and
# the MTP block on the device): the greedy tokens with drafts must be the
# tokens without ("same tokens | yes")
if ! want rest; then
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
    exit
fi
if [ -n "$trained" ] && [ -f "$trained" ]; then
    timeout 200 "$q36" bench --spec-type draft-mtp -m "$trained" -ngl 99 --exact -p 64 -n 96 -r 1 \
        >"$log/spec.log" 2>&1
    if grep -qE '^\| draft-mtp .*\| yes \|$' "$log/spec.log"; then
        ok cuda.spec_mtp_greedy_same
    else
        fail cuda.spec_mtp_greedy_same "$(tail -n 6 "$log/spec.log")"
    fi
    sed -n '/acceptance/,$p' "$log/spec.log" | head -n 12
fi

# ---- the device flags: q36 logits -ngl 99 against the CPU on one file, the
# GPU memory plan, and a context that cannot fit refused before loading
m=${models[0]:-}
if [ -n "$m" ]; then
    ids="1 2 3 4 5 6 7 8 9 10 11 12"
    if "$q36" logits -m "$m" --ids "$ids" -o "$log/cpu.f32" -t 0 >/dev/null 2>"$log/cli.err" &&
       "$q36" logits -m "$m" --ids "$ids" -o "$log/gpu.f32" -ngl 99 >/dev/null 2>>"$log/cli.err"; then
        ok cli.logits_ngl99_runs
    else
        fail cli.logits_ngl99_runs "$(tail -n 2 "$log/cli.err")"
    fi
    "$q36" info -m "$m" -ngl 99 -c 4096 >"$log/info.txt" 2>&1
    if grep -q 'GPU memory plan on CUDA0' "$log/info.txt" && grep -q 'fits' "$log/info.txt"; then
        ok cli.info_gpu_plan
    else
        fail cli.info_gpu_plan "$(tail -n 3 "$log/info.txt")"
    fi
    sed -n '/GPU memory plan/,$p' "$log/info.txt"
    # 4 layers of 64 KV heads of 256: 256 KiB of f16 K/V a token, 4 TiB at 16M
    "$q36" synth --arch qwen35 --heads 64 --kv-heads 64 --head-dim 256 --attn-interval 1 \
        -o "$log/models/bigkv.gguf" >/dev/null 2>&1
    if "$q36" logits -m "$log/models/bigkv.gguf" --ids "1 2" -o "$log/x.f32" -c 16777216 -ngl 99 \
        >/dev/null 2>"$log/big.err"; then
        fail cli.refuses_what_does_not_fit "a 16M-token context was accepted"
    elif grep -q 'MiB are free' "$log/big.err"; then
        ok cli.refuses_what_does_not_fit
        cat "$log/big.err"
    else
        fail cli.refuses_what_does_not_fit "$(cat "$log/big.err")"
    fi
fi
# ---- q36 serve with the model on the GPU (tests/gpu/serve_gpu.py): chat,
# the prefix cache's checkpoints on the device, four slots, a bad request
# in the GPU's default mode (fast), in exact mode (--exact), and in exact
# mode with MTP drafts on every slot
if [ -n "$trained" ] && [ -f "$trained" ]; then
    for mode in "" exact exact-mtp; do
        MODE=$mode timeout 300 python3 "$(dirname "$0")/serve_gpu.py" "$q36" "$trained" >"$log/serve$mode.log" 2>&1
        grep -E '^(ok|FAIL|#) ' "$log/serve$mode.log"
        count "$log/serve$mode.log"
        grep -q '^ok serve_gpu.*starts' "$log/serve$mode.log" ||
            fail "serve_gpu.${mode:+$mode.}runs" "$(tail -n 5 "$log/serve$mode.log")"
    done
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
