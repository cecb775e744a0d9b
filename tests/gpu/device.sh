#!/usr/bin/env bash
# tests/gpu/device.sh: on the GPU machine, from the repository root of the
# carried tree: everything one device call does with what tests/gpu/pack.sh
# made. Unpacks the llama.cpp CUDA build when its parts (.dev-p*/) are
# there, unpacks the trained default model, runs tests/gpu/run.sh, then
# tests/gpu/bench.sh (with llama.cpp as the baseline when unpacked). Logs
# and the bench output go to $OUT (or /tmp/q36-out), packed into one
# out.tar.xz when there are more than 7 files (lib.sh, pack_out).
# Env: STEPS (default "test bench"; "ops": ops_step; "fast": fast_step; "ncuk": ncuk_step;
# "profile": tests/gpu/profile.sh;
# "serve": tests/gpu/serve_bench.py, see serve_step; "servemtp": servemtp_step; "ncu": tests/gpu/ncu.sh,
# Nsight Compute per-kernel times and the matvecs' sections; "batch":
# batch_step; "prefill": prefill_step; "deep": deep_step; "ncup":
# ncup_step; "ab": ab_step), BENCH_35B (bench.sh's,
# default 1). A call runs at most 10 minutes: with the switched paths,
# run.sh's two op passes and the model passes can need most of one call, so
# give STEPS=test, STEPS=bench and STEPS=serve calls of their own (the
# machine keeps /tmp while warm). On a machine that has not made run.sh's
# test files yet STEPS=test can take more than a call (2026-12-04: cut
# at 600 s in its second round): split it with run.sh's TEST_PARTS, e.g.
# TEST_PARTS="ops0 models0", then "ops1 models1", then "fast rest", one
# call each, back to back.
# Usage: bash .cuda-carry/device.sh [CARRY (.cuda-carry)]
set -u
dir=${1:-.cuda-carry}
. "$(dirname "$0")/lib.sh"     # new_env
out=${OUT:-/tmp/q36-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# pack.sh sends the binaries xz-compressed
for f in "$dir"/q36.xz "$dir"/test_backend_cuda.xz; do
    [ -f "$f" ] && xz -d -f "$f" && chmod +x "${f%.xz}"
done
export LOG=/tmp/q36-gpu
{ nvidia-smi; echo "commit: $(cat "$dir/commit.txt")"; nproc; } >"$out/env.txt" 2>&1
# the machine keeps /tmp between warm calls but not the carried folders
# of an earlier call: each part call copies its part to the parts folder
# below; the build is unpacked once all the parts pack.sh cut
# (llama-parts.txt) are there
mkdir -p /tmp/llama-parts
cp .dev-p*/llama-cuda-sm90.tar.xz.part* /tmp/llama-parts/ 2>/dev/null
nparts=$(cat "$dir/llama-parts.txt" 2>/dev/null || echo 3)
if [ "$(ls /tmp/llama-parts | wc -l)" -ge "$nparts" ]; then
    mkdir -p /tmp/llama-cuda
    [ -d /tmp/llama-cuda/llama-cuda-sm90/lib ] ||
        cat /tmp/llama-parts/llama-cuda-sm90.tar.xz.part* | xz -d | tar x -C /tmp/llama-cuda
    # libllama finds its libggml* through the loader's path
    [ -d /tmp/llama-cuda/llama-cuda-sm90/lib ] && export LLAMA_LIB=/tmp/llama-cuda/llama-cuda-sm90/lib &&
        export LD_LIBRARY_PATH=$LLAMA_LIB:$LD_LIBRARY_PATH
fi
# serve: q36 serve beside llama-server (when unpacked), -np SERVE_NPS
# (default 1,4,16), SERVE_SECS s a point (default 15), more serve_bench.py
# options in SERVE_ARGS (e.g. --no-ignore-eos), on the synthetic
# 35B-A3B file, then the 0.8B one (bench.sh's files, made here when
# missing), in ~6 minutes, at most ~9 (each run has a --budget and a
# timeout); the JSON lines and tables go to $out/serve-bench.txt, the
# servers' logs to $LOG/serve-*.
synth_once() {     # synth_once FILE ARGS...: q36 synth ARGS -o FILE unless FILE is there
    local f=$1; shift
    [ -f "$f" ] && return 0
    # the 35B-A3B file took more than 150 s on the machine of 2026-12-04
    timeout 300 "$dir/q36" synth "$@" -o "$f.part" && mv "$f.part" "$f"
}
# bench.sh's two synthetic files, made here when missing
m35=$LOG/models/35b-a3b-q4km.gguf m08=$LOG/models/0.8b-q4km.gguf
bench_models() {
    mkdir -p "$LOG/models"
    synth_once "$m35" --arch qwen35moe --preset 35b-a3b --type q4_K_M || echo "FAIL synth $m35"
    synth_once "$m08" --arch qwen35 --preset 0.8b --type q4_K_M || echo "FAIL synth $m08"
}
serve_step() {
    local t0=$SECONDS ls=() bin=/tmp/llama-cuda/llama-cuda-sm90/bin/llama-server rc=0
    bench_models
    [ -n "${LLAMA_LIB:-}" ] && [ -x "$bin" ] && ls=(--llama-server "$bin")
    [ ${#ls[@]} = 0 ] && echo "# no llama-server unpacked: q36 alone"
    local opts=(--np "${SERVE_NPS:-1,4,16}" --seconds "${SERVE_SECS:-15}" ${SERVE_ARGS:-})
    local b=$(( 280 - (SECONDS - t0) ))
    [ "$b" -ge 1 ] || b=1     # (--budget 0 would mean no limit)
    timeout $((b + 40)) python3 "$dir/serve_bench.py" "$dir/q36" "$m35" "${ls[@]}" "${opts[@]}" \
        --budget "$b" --log-dir "$LOG/serve-35b" || rc=$?
    timeout 205 python3 "$dir/serve_bench.py" "$dir/q36" "$m08" "${ls[@]}" "${opts[@]}" \
        --budget 165 --log-dir "$LOG/serve-0.8b" || rc=$?
    echo "# serve step: $((SECONDS - t0)) s, last nonzero exit status ${rc}"
}
# servemtp: q36 serve on the trained default model with MTP drafting
# (--spec-type draft-mtp and the words of SPEC_ARGS, default
# "--draft-vocab 16384") beside q36 serve plain, taking turns
# (serve_bench.py --base-q36), -np SERVE_NPS (default 1,4), SERVE_SECS s a
# point (default 15), greedy, --cache-ram 0 on both (a prompt restored from
# the prefix cache gives the MTP block no hidden rows for its part); the
# ratio is MTP's aggregate speed-up in the server.
servemtp_step() {
    local x=() w v
    for w in --spec-type draft-mtp ${SPEC_ARGS:---draft-vocab 16384} --cache-ram 0; do x+=("--q36-arg=$w"); done
    # SERVEMTP_VARIANTS: "VAR=value" words (A=1+B=2 sets both), each a run
    # of its own after the default one (e.g. Q36_SERVER_MTP_GUARD=0, or
    # Q36_CUDA_LOOSE=1 for what the steps still launch one by one, or
    # Q36_SERVER_PROFILE=1 for the engine's op table: op by op, no graphs)
    for v in default ${SERVEMTP_VARIANTS:-}; do
        local set=()
        [ "$v" = default ] || set=(${v//+/ })
        echo "### servemtp variant: $v"
        env "${set[@]}" timeout 400 python3 "$dir/serve_bench.py" "$dir/q36" "$trained" --base-q36 \
            "${x[@]}" --base-q36-arg=--cache-ram --base-q36-arg=0 \
            --np "${SERVE_NPS:-1,4}" --seconds "${SERVE_SECS:-15}" --max-tokens 256 --ctx 2048 --reps "${SERVE_REPS:-2}" \
            --budget 360 --log-dir "$LOG/serve-mtp-$v"
        echo "# servemtp step: exit status $?"
        # a variant with Q36_CUDA_LOOSE=1: each server's table of the launches
        # and copies outside recorded passes (printed at its exit)
        local f
        for f in "$LOG/serve-mtp-$v"/*.err; do
            grep -q 'Q36_CUDA_LOOSE:' "$f" 2>/dev/null || continue
            echo "# $(basename "$f" .err):"
            grep -E '^q36: (Q36_CUDA_LOOSE| {3})' "$f"
        done
        # a variant with Q36_SERVER_PROFILE=1: each server's op table
        for f in "$LOG/serve-mtp-$v"/*.err; do
            grep -q 'q36 serve: profile:' "$f" 2>/dev/null || continue
            echo "# $(basename "$f" .err):"
            grep -E '^q36 serve: profile:' "$f"
        done
    done
}

# batch: test_backend_cuda --bench-batch on bench.sh's synthetic files
# (made here when missing): decode steps of BATCH_T slots at once (default
# 1,16,64), op by op; then once more for each "VAR=value" word of
# BATCH_VARIANTS (e.g. "Q36_CUDA_MOEROWS=0 Q36_CUDA_MVNB=0"; "A=1+B=2"
# sets both), to set a switched path beside the default; BATCH_ONLY=35b
# skips the 0.8B file, BATCH_ONLY=08b the 35B-A3B one (and its synthesis),
# BATCH_ONLY=trained takes the trained default model
# alone (its 4- and 16-row passes: the server's MTP verify rows at -np 1
# and 4, BATCH_T=1,4,16) and synthesizes nothing (the 35B-A3B file took
# more than 150 s on a fresh machine). The slots' ids
# are pseudo-random unless BENCH_IDS=greedy (test_backend_cuda.c,
# bench_batch, says why).
batch_step() {
    local m v ms=("$m08" "$m35")
    case ${BATCH_ONLY:-} in
    trained) ms=("$trained") ;;
    08b) mkdir -p "$LOG/models"
         synth_once "$m08" --arch qwen35 --preset 0.8b --type q4_K_M || echo "FAIL synth $m08"
         ms=("$m08") ;;
    35b) bench_models; ms=("$m35") ;;
    *) bench_models ;;
    esac
    for m in "${ms[@]}"; do
        for v in default ${BATCH_VARIANTS:-}; do
            echo "### $(basename "$m") $v"
            local set=()
            [ "$v" = default ] || set=(${v//+/ })
            env "${set[@]}" BENCH_T=${BATCH_T:-1,16,64} timeout 200 \
                "$dir/test_backend_cuda" --bench-batch "$m"
            echo "# exit status $?"
        done
    done
}
# prefill: pp4096 (PREFILL_P tokens) in fast mode, one pass, on bench.sh's
# synthetic files beside llama.cpp (when unpacked), 3 reps; the 35B file's
# op profile (--profile); then the 35B file once more for each "VAR=value"
# word of PREFILL_VARIANTS ("A=1+B=2" sets both; q36 alone, 2 reps); then for each depth of
# PREFILL_D (e.g. "32768"; none by default) the 35B file's prompt at that
# depth beside llama.cpp (2 reps), its op profile (one pass) and with each
# variant (q36 alone).
prefill_step() {
    local m v base=() p=${PREFILL_P:-4096}
    local pp=(-ngl 99 -p "$p" -n 0 -b "$p" -ub "$p" --fast)
    bench_models
    [ -n "${LLAMA_LIB:-}" ] && base=(--baseline llama.cpp --llama-lib "$LLAMA_LIB")
    for m in "$m08" "$m35"; do
        echo "\$ q36 bench -m $m ${pp[*]} -r 3 ${base[*]}"
        timeout 200 "$dir/q36" bench -m "$m" "${pp[@]}" -r 3 "${base[@]}"
        echo "# exit status $?"
    done
    echo "\$ q36 bench -m $m35 ${pp[*]} -r 1 --profile"
    timeout 150 "$dir/q36" bench -m "$m35" "${pp[@]}" -r 1 --profile
    for v in ${PREFILL_VARIANTS:-}; do
        echo "\$ env ${v//+/ } q36 bench -m $m35 ${pp[*]} -r 2"
        env ${v//+/ } timeout 150 "$dir/q36" bench -m "$m35" "${pp[@]}" -r 2
        echo "# exit status $?"
    done
    local d
    for d in ${PREFILL_D:-}; do
        echo "\$ q36 bench -m $m35 ${pp[*]} -d $d -r 2 ${base[*]}"
        timeout 240 "$dir/q36" bench -m "$m35" "${pp[@]}" -d "$d" -r 2 "${base[@]}"
        echo "# exit status $?"
        echo "\$ q36 bench -m $m35 ${pp[*]} -d $d -r 1 --profile"
        timeout 150 "$dir/q36" bench -m "$m35" "${pp[@]}" -d "$d" -r 1 --profile
        for v in ${PREFILL_VARIANTS:-}; do
            echo "\$ env ${v//+/ } q36 bench -m $m35 ${pp[*]} -d $d -r 2"
            env ${v//+/ } timeout 150 "$dir/q36" bench -m "$m35" "${pp[@]}" -d "$d" -r 2
            echo "# exit status $?"
        done
    done
}

# deep: decode at depth (DEEP_D, default "8192 32768") on the synthetic
# 35B-A3B file beside llama.cpp (when unpacked), 2 reps each, then the
# op profile of 16 tokens at the last depth, then each "VAR=value" word of
# DEEP_VARIANTS ("A=1+B=2" sets both) at each depth, q36 alone, 2 reps.
deep_step() {
    local d v base=() fa=(-b 4096 -ub 4096 --fast) last
    bench_models
    [ -n "${LLAMA_LIB:-}" ] && base=(--baseline llama.cpp --llama-lib "$LLAMA_LIB")
    for d in ${DEEP_D:-8192 32768}; do
        echo "\$ q36 bench -m $m35 -ngl 99 -p 0 -n 64 -d $d -r 2 ${fa[*]} ${base[*]}"
        timeout 150 "$dir/q36" bench -m "$m35" -ngl 99 -p 0 -n 64 -d "$d" -r 2 "${fa[@]}" "${base[@]}"
        echo "# exit status $?"
        last=$d
    done
    echo "\$ q36 bench -m $m35 -ngl 99 -p 0 -n 16 -d $last -r 1 ${fa[*]} --profile"
    timeout 150 "$dir/q36" bench -m "$m35" -ngl 99 -p 0 -n 16 -d "$last" -r 1 "${fa[@]}" --profile
    for v in ${DEEP_VARIANTS:-}; do
        for d in ${DEEP_D:-8192 32768}; do
            echo "\$ env ${v//+/ } q36 bench -m $m35 -ngl 99 -p 0 -n 64 -d $d -r 2 ${fa[*]}"
            env ${v//+/ } timeout 150 "$dir/q36" bench -m "$m35" -ngl 99 -p 0 -n 64 -d "$d" -r 2 "${fa[@]}"
            echo "# exit status $?"
        done
    done
}

# ncup: Nsight Compute on the prompt kernels of one 35B-A3B pp4096 pass in
# fast mode (q36 bench, bench.sh's file): for each regex of NCUP (default
# "k_moe_gemm_h k_chunk_state_tc k_chunk_prep k_fattn_mma"), NCUP_COUNT
# (default 2) launches after the first NCUP_SKIP (default 8), the same
# sections as ncuk; NCUP_ENV adds q36 switches, NCUP_ARGS replaces the
# bench arguments (e.g. "-p 0 -n 4 -d 32768 -b 4096 -ub 4096 --fast" with
# NCUP=k_attn for decode attention at depth).
ncup_step() {
    local kr ncu args
    ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    [ -n "$ncu" ] || { echo "FAIL ncup: no ncu on this machine"; return; }
    bench_models
    args=${NCUP_ARGS:--p 4096 -n 0 -b 4096 -ub 4096 --fast}
    for kr in ${NCUP:-k_moe_gemm_h k_chunk_state_tc k_chunk_prep k_fattn_mma}; do
        echo "### ncu $kr: q36 bench -m $m35 -ngl 99 $args -r 1 ${NCUP_ENV:-}"
        env ${NCUP_ENV:-} timeout 280 "$ncu" --clock-control none \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section WarpStateStats --section LaunchStats -k "regex:$kr" \
            --launch-skip "${NCUP_SKIP:-8}" --launch-count "${NCUP_COUNT:-2}" \
            "$dir/q36" bench -m "$m35" -ngl 99 $args -r 1
        echo "# exit status $?"
    done
}

# fast: the fast-mode model passes of run.sh (test_backend_cuda --no-ops
# --fast, NEW=1's switches) on the synthetic test models named in
# FAST_MODELS (run.sh's names, default the 7 below; made here when
# missing) and the trained model, then once more for each "VAR=value" word
# of FAST_VARIANTS ("A=1+B=2" sets both): a prompt path's change checked on
# whole models in a minute, where the whole script takes most of a call.
fast_step() {
    local m v ms=(${FAST_MODELS:-dense-q4km dense-q8hd256 dense-f16 dense-f32 moe-q4k-top8 moe-q8-top3 moe-q4km})
    fast_synth() {
        local n=$1 w; shift
        for w in "${ms[@]}"; do
            [ "$w" = "$n" ] && [ ! -f "$LOG/models/$n.gguf" ] &&
                { timeout 150 "$dir/q36" synth "$@" -o "$LOG/models/$n.gguf" >/dev/null 2>&1 ||
                      echo "FAIL synth $n"; }
        done
        return 0
    }
    mkdir -p "$LOG/models"
    each_test_model fast_synth
    for v in default ${FAST_VARIANTS:-}; do
        local set=()
        [ "$v" = default ] || set=(${v//+/ })
        for m in "${ms[@]/%/.gguf}" "$trained"; do
            [ "$m" = "$trained" ] || m=$LOG/models/$m
            echo "### fast $(basename "$m") $v"
            env $(new_env 1) "${set[@]}" timeout 150 "$dir/test_backend_cuda" --no-ops --fast "$m"
            echo "# exit status $?"
        done
    done
}
# ops: the op cases of test_backend_cuda's groups OPS (e.g. "mv8,mvgrp";
# TBC_OPS), as run.sh's NEW=1 pass sets the switches, then once more for
# each "VAR=value" word of OPS_VARIANTS ("A=1+B=2" sets both): a short
# check of a changed kernel when a whole test run does not fit.
ops_step() {
    local v
    for v in default ${OPS_VARIANTS:-}; do
        local set=()
        [ "$v" = default ] || set=(${v//+/ })
        echo "### ops ${OPS:-all} $v"
        env $(new_env 1) TBC_OPS="${OPS:-}" "${set[@]}" timeout 300 "$dir/test_backend_cuda"
        echo "# exit status $?"
    done
}
# ab: q36 against itself with switches: AB_VARIANTS (words A=1+B=2)
# beside the defaults on both bench files, pp4096 (fast, -ub 4096) and
# tg64, each -r 2, the variants alternating over AB_ROUNDS rounds
# (default 2) so that drift falls on all of them; AB_FILES "m08 m35"
# (default both). First the op groups of AB_OPS, if given (NEW=1).
ab_step() {
    local m v r f
    bench_models
    [ -n "${AB_OPS:-}" ] && OPS=$AB_OPS OPS_VARIANTS= ops_step
    for f in ${AB_FILES:-m08 m35}; do
        m=$m35
        [ "$f" = m08 ] && m=$m08
        for r in $(seq "${AB_ROUNDS:-2}"); do
            for v in default ${AB_VARIANTS:-}; do
                local set=()
                [ "$v" = default ] || set=(${v//+/ })
                echo "### $f round $r $v"
                env "${set[@]}" timeout 120 "$dir/q36" bench -m "$m" -ngl 99 -p 4096 -n 0 -b 4096 \
                    -ub 4096 --fast -r 2
                env "${set[@]}" timeout 120 "$dir/q36" bench -m "$m" -ngl 99 -p 0 -n 64 -r 2
            done
        done
    done
}
# ncuk: Nsight Compute's sections (speed of light, memory, occupancy, warp
# stalls, launch) for the kernels of NCUK (e.g. "k_matvec8_id:16
# k_moe_gemm:64": KERNEL:T) in test_backend_cuda --bench-batch's op-by-op
# steps of T slots on the 35B-A3B file, 3 launches each after 40.
ncuk_step() {
    local kt ncu
    ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    [ -n "$ncu" ] || { echo "FAIL ncuk: no ncu on this machine"; return; }
    bench_models
    for kt in ${NCUK:-}; do
        echo "### ncu ${kt%%:*} at T=${kt##*:}"
        env Q36_CUDA_GRAPHS=0 BENCH_T="${kt##*:}" timeout 200 "$ncu" --clock-control none \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
            --section WarpStateStats --section LaunchStats -k "regex:${kt%%:*}" \
            --launch-skip 40 --launch-count 3 "$dir/test_backend_cuda" --bench-batch "$m35"
        echo "# exit status $?"
    done
}

trained=/tmp/trained.gguf
xz -dc models/q36-tiny-moe.gguf.xz >"$trained"
for s in ${STEPS:-test bench}; do
    case $s in
    test)  bash "$dir/run.sh" "$dir" "$trained" >"$out/gpu-tests.txt" 2>&1
           tail -n 1 "$out/gpu-tests.txt" ;;
    bench) BENCH_OUT=$out/bench.txt bash "$dir/bench.sh" "$dir" "$trained" >/dev/null 2>&1
           tail -n 5 "$out/bench.txt" ;;
    servemtp) servemtp_step >"$out/serve-mtp.txt" 2>&1
           grep -E '^(###|\||FAIL|SKIP|# servemtp|q36:|# (q36|base) -np .*engine steps)' "$out/serve-mtp.txt" |
               tail -n 40 ;;
    serve) serve_step >"$out/serve-bench.txt" 2>&1
           grep -E '^(###|\||FAIL|SKIP|# serve step|# .*INTERRUPTED)' "$out/serve-bench.txt" | tail -n 24 ;;
    batch) batch_step >"$out/bench-batch.txt" 2>&1
           grep -E '^(###|# bench-batch .*tokens/s|FAIL)' "$out/bench-batch.txt" ;;
    deep)  deep_step >"$out/deep.txt" 2>&1
           grep -E '^(\$|\| tg|\| k_attn|# exit)' "$out/deep.txt" ;;
    prefill) prefill_step >"$out/prefill.txt" 2>&1
           grep -E '^(\$|\| .*pp[0-9]|\| k_moe|\| k_fattn|FAIL)' "$out/prefill.txt" ;;
    profile) PROFILE_OUT=$out/profile.txt bash "$dir/profile.sh" "$dir" >/dev/null 2>&1
           tail -n 5 "$out/profile.txt" ;;
    fast)  fast_step >"$out/fast.txt" 2>&1
           grep -E '^(###|FAIL|# exit)' "$out/fast.txt" | grep -v '^# exit status 0$'
           echo "fast: ok $(grep -c '^ok ' "$out/fast.txt") FAIL $(grep -c '^FAIL ' "$out/fast.txt")" ;;
    ops)   ops_step >"$out/ops.txt" 2>&1
           grep -E '^(###|FAIL|# exit)' "$out/ops.txt"; grep -c '^ok ' "$out/ops.txt" ;;
    ab)    ab_step >"$out/ab.txt" 2>&1
           grep -E '^(###|FAIL)|^\| qwen' "$out/ab.txt"
           echo "ops: ok $(grep -c '^ok ' "$out/ab.txt") FAIL $(grep -c '^FAIL ' "$out/ab.txt")" ;;
    ncuk)  ncuk_step >"$out/ncuk.txt" 2>&1
           grep -E '^(###|FAIL|# exit)|Duration|DRAM Throughput|Achieved Occupancy' "$out/ncuk.txt" ;;
    ncup)  ncup_step >"$out/ncup.txt" 2>&1
           grep -E '^(###|FAIL|# exit)|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy' "$out/ncup.txt" ;;
    ncu)   NCU_OUT=$out/ncu.txt bash "$dir/ncu.sh" "$dir" >/dev/null 2>&1
           grep -E '^(# |void|k_)' "$out/ncu.txt" | head -n 30 ;;
    esac
done
scrub_out "$out"    # lib.sh: no device paths in what comes back
pack_out "$out"     # lib.sh: at most 8 files come back from a call
