#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-03-cpu-mtp-avx2/run.sh OLD_Q36 NEW_Q36 ROUNDS > run.txt
# One-slot MTP (q36 bench --spec-type draft-mtp) of the default model on the code prompt, old and
# new binaries alternating, natively and under Q36_QUANT_PATH_MAX=avx2 (as on a CPU without AVX-512).
set -u
old=$1 new=$2 rounds=${3:-3}
for r in $(seq 1 "$rounds"); do
    for cap in "" avx2; do
        for b in old new; do
            q=$old; [ $b = new ] && q=$new
            echo "## round $r, ${cap:-native}, $b, load $(cut -d' ' -f1-3 /proc/loadavg)"
            Q36_QUANT_PATH_MAX=${cap:-} "$q" bench -m build/default.gguf --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t 1 --draft-vocab 16384 2>&1 |
                grep -E '^q36 [0-9a-f]{7}|^\| (plain|draft)|window cost|tokens per verify'
        done
    done
done
