#!/usr/bin/env bash
# MTP on the CPU at one and at two threads, alternated, ROUNDS rounds:
# q36 bench --spec-type draft-mtp on the trained default model, the code
# prompt of bench/results/2026-12-01-mtp/, 256 greedy tokens, 5 reps.
# Usage: bench/results/2026-12-03-cpu-mtp-threads/run.sh [ROUNDS] > run.txt
set -u
rounds=${1:-3}
for i in $(seq 1 "$rounds"); do
    for t in 1 2; do
        echo "## round $i, -t $t, load $(cut -d' ' -f1 /proc/loadavg)"
        ./q36 bench -m build/default.gguf --spec-type draft-mtp \
            -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" --draft-vocab 16384
    done
done
