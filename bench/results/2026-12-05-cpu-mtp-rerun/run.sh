#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-mtp-rerun/run.sh BIN ROUNDS > run.txt
# One-slot MTP of the default model (q36 bench --spec-type draft-mtp, the code prompt, 256 greedy
# tokens, -r 5, --draft-vocab 16384, --draft-max 3) at 1 and 2 threads, ROUNDS rounds, each
# run timing plain decoding and drafting in turn; the load average before each run.
set -u
bin=$1 rounds=${2:-5}
for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
        echo "## round $r, -t $t, load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$bin" bench -m build/default.gguf --spec-type draft-mtp \
            -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" --draft-vocab 16384 2>&1 |
            grep -E '^q36 [0-9a-f]{7}|^\| (plain|draft)|window cost|tokens per verify|acceptance by'
    done
done
