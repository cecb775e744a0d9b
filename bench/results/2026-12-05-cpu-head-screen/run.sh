#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-head-screen/run.sh ROUNDS > run.txt
# One-slot MTP (q36 bench --spec-type draft-mtp) of the default model on the code prompt with the
# greedy head's screen off (Q36_CPU_HEADSCREEN=0), from 2 rows (verify passes only) and from 1 row
# (the default: plain steps and drafts too), alternating, at 1 and 2 threads.
set -u
rounds=${1:-3}
for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
        for hs in 0 2 1; do
            echo "## round $r, -t $t, Q36_CPU_HEADSCREEN=$hs, load $(cut -d' ' -f1-3 /proc/loadavg)"
            Q36_CPU_HEADSCREEN=$hs ./q36 bench -m build/default.gguf --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" --draft-vocab 16384 2>&1 |
                grep -E '^q36 [0-9a-f]{7}|^\| (plain|draft)|window cost|tokens per verify'
        done
    done
done
