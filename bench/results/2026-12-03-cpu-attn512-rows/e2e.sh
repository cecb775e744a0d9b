#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-03-cpu-attn512-rows/e2e.sh OLD_Q36 NEW_Q36 ROUNDS > e2e.txt
# q36 alone (no baseline), natively: the 0.8B Q4_K file at depth 4096, pp512 and tg64, old and new alternating.
set -u
for r in $(seq 1 "${3:-2}"); do
    for b in old new; do
        q=$1; [ $b = new ] && q=$2
        echo "## round $r, $b, load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$q" bench -m build/models/q08-q4_K.gguf -p 512 -n 64 -d 4096 -r 3 -t 2 2>&1 | grep -E '^q36 bench|^\| qwen'
    done
done
