#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-mtp-rerun/dv-ab.sh BIN ROUNDS > dv-ab.txt
# One-slot MTP of the default model, the code prompt, 256 greedy tokens, -r 5, --draft-max 3,
# with a draft vocabulary of 4096 and of 16384 ids in turn, at 1 and 2 threads; per run:
# plain t/s, its ratio (1.00), MTP t/s, MTP's speed-up over plain in that run.
set -u
bin=$1 rounds=${2:-4}
for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
        for dv in 4096 16384; do
            printf "r$r t$t dv$dv load $(cut -d' ' -f1 /proc/loadavg): "
            "$bin" bench -m build/default.gguf --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" --draft-vocab "$dv" 2>&1 |
                grep -E '^\| (plain|draft-mtp)' | awk -F'|' '{printf "%s %s ", $3, $5}'
            echo
        done
    done
done
