#!/usr/bin/env bash
# e2e.sh: q36 before (8121cd7) against q36 after this work, end to end,
# both capped at AVX2 (Q36_QUANT_PATH_MAX=avx2), no llama.cpp: `q36 bench`
# on each file, one repetition per run, the two binaries alternating
# (old new new old, ...), raw JSON lines to OUT/e2e.jsonl.
# Usage: e2e.sh OLD_Q36 NEW_Q36 OUT_DIR [rounds (2)] [depths (0,4096)]
# Env: MODELS (default build/models), FILES (default: the four of run.sh)
set -eu
old=${1:?usage: e2e.sh OLD_Q36 NEW_Q36 OUT_DIR [rounds] [depths]} new=${2:?} out=${3:?}
rounds=${4:-2} depths=${5:-0,4096}
MODELS=${MODELS:-build/models}
FILES=${FILES:-"q08-q4_K q08-q8_0 moe-scaled-q4_K q08-q4_K_M"}
mkdir -p "$out"
export Q36_QUANT_PATH_MAX=avx2
for f in $FILES; do
    for r in $(seq "$rounds"); do
        order="old new"; [ $((r % 2)) = 0 ] && order="new old"
        for w in $order; do
            bin=$old; [ "$w" = new ] && bin=$new
            echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $w $f round $r" >&2
            "$bin" bench -m "$MODELS/$f.gguf" -p 512 -n 64 -d "$depths" -r 1 -t 2 -o jsonl |
                sed "s/^{/{\"which\":\"$w\",\"file\":\"$f\",\"round\":$r,/" >>"$out/e2e.jsonl"
        done
    done
done
