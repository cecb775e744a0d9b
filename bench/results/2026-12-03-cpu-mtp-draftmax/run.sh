#!/usr/bin/env bash
# Usage (repository root, after make q36 and make build/default.gguf):
#   bench/results/2026-12-03-cpu-mtp-draftmax/run.sh ROUNDS > run.txt
# q36 bench --spec-type draft-mtp on the default model and the code prompt of
# ../2026-12-01-mtp/, draft vocabulary 16384, --draft-max 3, 4 and 5, one and
# two threads, alternated, ROUNDS rounds.
set -u
rounds=${1:-2}
for r in $(seq 1 "$rounds"); do
    for t in 1 2; do
        for dm in 3 4 5; do
            echo "## round $r, -t $t, --draft-max $dm, load $(cut -d' ' -f1-3 /proc/loadavg)"
            ./build/q36 bench -m build/default.gguf --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 -t "$t" \
                --draft-vocab 16384 --draft-max "$dm" 2>&1
        done
    done
done
