#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-mtp-chain-screen/run.sh OLD NEW ROUNDS > run.txt
# One-slot MTP (q36 bench --spec-type draft-mtp, 16k draft vocabulary, the code prompt, 256 greedy
# tokens, -r 5) of the default model with the binary before (OLD: chained drafts through
# be_matmul + be_argmax) and after (NEW: be_matmul_argmax, the screen of a Q8_0 head) the change,
# alternating, at 1 and 2 threads.
set -u
old=$1 new=$2 rounds=${3:-3}
for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
        for b in old new; do
            bin=$old
            [ $b = new ] && bin=$new
            echo "## round $r, -t $t, $b ($bin), load $(cut -d' ' -f1-3 /proc/loadavg)"
            "$bin" bench -m build/default.gguf --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" --draft-vocab 16384 2>&1 |
                grep -E '^q36 [0-9a-f]{7}|^\| (plain|draft)|window cost|tokens per verify'
        done
    done
done
